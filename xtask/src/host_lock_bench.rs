//! Host-native lock benchmarks: runs the spinlock crate's `lock_bench`
//! example (rdtsc cycles, threads pinned to host cores) and reads the
//! records it prints, one JSON object per line.

use crate::bench_results::BenchmarkRecord;
use crate::failure::{Context, Failure, Outcome};
use crate::json::Value;
use crate::json_parser;
use crate::workspace;

/// The `locks` records measured natively on the host.
pub fn run() -> Outcome<Vec<BenchmarkRecord>> {
    let output = workspace::cargo()
        .args([
            "run",
            "--quiet",
            "--release",
            "--package",
            "spinlock",
            "--example",
            "lock_bench",
        ])
        .output()
        .context(|| "cannot run the spinlock lock_bench example".to_string())?;
    if !output.status.success() {
        return Err(Failure::failed(format!(
            "lock_bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .filter(|line| line.starts_with('{'))
        .map(parse_record)
        .collect()
}

fn parse_record(line: &str) -> Outcome<BenchmarkRecord> {
    let value = json_parser::parse(line)
        .map_err(|error| Failure::failed(format!("bad lock_bench line {line}: {error}")))?;
    let text = |key: &str| value.text_field(key).unwrap_or_default().to_string();
    let number = |key: &str| match value.field(key) {
        Some(Value::Number(digits)) => digits.parse::<f64>().ok(),
        _ => None,
    };
    Ok(BenchmarkRecord {
        group: text("group"),
        name: text("name"),
        unit: text("unit"),
        lamina: number("lamina"),
        linux: None,
        linux_no_mitigations: None,
        cpu_count: number("smp").unwrap_or(1.0) as u32,
        accelerator: text("accel"),
        runs: number("runs").unwrap_or(1.0) as usize,
        spread: number("spread").unwrap_or(0.0),
    })
}
