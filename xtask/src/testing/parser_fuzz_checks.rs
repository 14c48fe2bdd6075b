//! The parser tier (issue 23): `parser_fuzz` (the `parser-fuzz` crate) runs
//! 100,000 structure-aware inputs into each parser that takes outside
//! bytes, on the host. Each target is one check; the run fails on the
//! first panic, abort or hang, and its output (with the saved input and
//! the command that repeats it) is the failure's text. `make fuzz-parsers`
//! runs the same program seed after seed until stopped.

use super::tally::Tally;
use crate::workspace;

/// Inputs per target in `make test`.
const TIER_INPUTS: u64 = 100_000;
/// The tier's seed (fixed: the same inputs every run; `make fuzz-parsers`
/// explores others).
const TIER_SEED: u64 = 1;

pub fn run_parser_fuzz_checks(tally: &mut Tally) {
    let mut command = workspace::cargo();
    command.args(["run", "--quiet", "--package", "parser-fuzz", "--"]);
    command.args(["--inputs", &TIER_INPUTS.to_string(), "--seed", &TIER_SEED.to_string()]);
    command.arg("--out").arg(workspace::target_directory().join("parser-fuzz"));
    let shown = workspace::describe(&command);
    eprintln!("xtask: running {shown}");
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => return tally.record("parsers: parser_fuzz runs", Err(format!("cannot start {shown}: {error}"))),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    let mut reported = 0;
    for line in stdout.lines().filter(|line| line.starts_with("parsers: ") && line.contains(" inputs,")) {
        let name = line["parsers: ".len()..].split_whitespace().next().unwrap_or("?");
        let inputs = line.split(" inputs,").next().and_then(|head| head.split_whitespace().last()).and_then(|count| count.parse::<u64>().ok());
        let result = match inputs {
            Some(count) if count == TIER_INPUTS => Ok(()),
            other => Err(format!("{name}: ran {other:?} inputs, not {TIER_INPUTS}: {line}")),
        };
        tally.record(&format!("parsers: {name}"), result);
        reported += 1;
    }
    if !output.status.success() || reported == 0 {
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
        tally.record(
            "parsers: no panic, abort or hang",
            Err(format!("{shown} failed ({}) after {reported} targets:\n{}", output.status, tail.join("\n"))),
        );
    }
}
