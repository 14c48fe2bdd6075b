//! Part of the user tier (and `--only groups`): Lamina booted as several
//! kernel instances (`--smp 4 --groups 2` and `--groups 4`, issue 20).
//! A shell pipeline's two stages live in different groups and the data
//! crosses between them; a process placed in another group with `taskset`
//! sees only that group's CPUs; `kill` and `wait` reach a process in
//! another group; `/proc/<pid>/status` names every process's group. And
//! the descriptors that crossed groups did so as capabilities: the group
//! kernels made copies (obtains, messages between them, nothing malformed
//! or refused), and once every child ended no copy is left in any group
//! (`/proc/lamina/groups`, read by the shell itself: a new process would
//! hold copies of its own). And the user suite's tests of processes,
//! signals, pipes, sockets and descriptor passing print the same on 4
//! CPUs as 2 groups (their forks spread over both) as on one kernel.

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::MachineOptions;
use std::time::Duration;

/// Longest one run may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(180);

/// The script: each line it prints is checked below. `group PID` reads a
/// process's group from `/proc` (`self` would be `awk`'s own: every
/// process is placed anew). CPU 3 is in the last group of either layout;
/// `taskset -p f` there keeps the shell in its group, where `nproc` (a
/// new process, placed by the policy) counts its own group's CPUs. The
/// sleeper's group is read once it runs `sleep`: `taskset` moved it
/// before its `execve`. A shell moved to the last group and back to group
/// 0 takes its descriptors' copies along each time (none may be left).
/// Then short-lived children are moved to and fro by several `taskset`s
/// at once while they exit (moves racing each other and the exit): no
/// copy may be left and each group's process count must add up to the
/// processes living at the end (the shell's glob counts them without
/// starting one).
const SCRIPT: &str = r#"group() { awk '/^Group:/ { print $2 }' /proc/$1/status; }
echo "shell $(group $$)"
sh -c 'echo "first $(awk "/^Group:/ { print \$2 }" /proc/$$/status)" >&2; seq 1 5000' | sh -c 'echo "second $(awk "/^Group:/ { print \$2 }" /proc/$$/status)" >&2; wc -l'
taskset 8 sh -c 'taskset -p f $$ >/dev/null; echo "pinned $(awk "/^Group:/ { print \$2 }" /proc/$$/status) cpus $(nproc)"'
taskset 8 sh -c 'taskset -p 1 $$ >/dev/null; echo "back $(awk "/^Group:/ { print \$2 }" /proc/$$/status)"'
taskset 8 sleep 100 &
sleeper=$!
for try in $(seq 1 500); do grep -q '^Name:.sleep' /proc/$sleeper/status && break; sleep 0.02; done
echo "sleeper $(group $sleeper)"
kill $sleeper
wait $sleeper
echo "sleeper status $?"
for round in $(seq 1 12); do
  (exec 3</proc/self/status; sleep 0.0$((round % 3))) &
  racer=$!
  taskset -p 8 $racer >/dev/null 2>&1 &
  taskset -p 1 $racer >/dev/null 2>&1 &
  taskset -p 8 $racer >/dev/null 2>&1
  wait
done
set -- /proc/[0-9]*
echo "living $#"
while read -r line; do echo "report $line"; done < /proc/lamina/groups
"#;

pub fn run_group_checks(tally: &mut Tally) {
    for groups in [2u32, 4] {
        let name = format!("groups: a pipeline, taskset, kill and wait across {groups} kernel groups on 4 CPUs");
        tally.record(&name, run(groups).and_then(|run| check(&run, groups)).map_err(|failure| failure.to_string()));
    }
    run_suite_tests(tally);
}

/// The user suite's C tests whose processes talk to each other (and whose
/// output does not name CPU counts, which a group changes).
const SUITE_TESTS: [&str; 14] = [
    "processes", "deaths", "socket_messages", "fifos_and_friends", "wait_masks", "shared_memory", "sysv_ipc",
    "unix_names", "unix_credentials", "siginfo", "process_control", "record_locks", "flocks", "exec_threads",
];

/// [`SUITE_TESTS`] on one kernel and on 2 groups, 4 CPUs each: every
/// test's output the same.
fn run_suite_tests(tally: &mut Tally) {
    let outputs = suite_request().and_then(|request| {
        [1u32, 2]
            .map(|groups| {
                let request = ExecRequest { machine: MachineOptions { groups, ..MachineOptions::with(4, 256) }, ..request.clone() };
                run_program(&request, Input::Console, Output::Capture, Some(SUITE_TIME_LIMIT)).map(|run| super::user_space::sections(&String::from_utf8_lossy(&run.output)))
            })
            .into_iter()
            .collect::<Outcome<Vec<_>>>()
    });
    let outputs = match outputs {
        Ok(outputs) => outputs,
        Err(failure) => return tally.record("groups: the suite's process tests on 2 groups", Err(failure.to_string())),
    };
    let (single, grouped) = (&outputs[0], &outputs[1]);
    for name in SUITE_TESTS {
        let section = format!("c/{name}");
        let result = match single.get(&section) {
            Some(expected) => super::user_space::compare(&section, grouped.get(&section), expected),
            None => Err(format!("{section}: no output on one kernel")),
        };
        tally.record(&format!("groups: {section} on 2 groups = on one kernel"), result);
    }
}

/// Longest the suite subset may take under TCG.
const SUITE_TIME_LIMIT: Duration = Duration::from_secs(300);

/// [`SUITE_TESTS`] built and run one after another, each between the
/// markers `user_space::sections` splits on.
fn suite_request() -> Outcome<ExecRequest> {
    let mut files = Vec::new();
    let mut script = String::from("#!/bin/sh\ncd /tmp\n");
    for name in SUITE_TESTS {
        let binary = crate::guest_programs::compile_c(&format!("user/tests/c/{name}.c"), name)?;
        files.push(crate::exec::FileCopy { host: binary, guest: Some(format!("/tests/bin/{name}")) });
        script.push_str(&format!("echo '=== c/{name}'\n/tests/bin/{name} 2>&1\necho \"--- exit $?\"\ncd /tmp\n"));
    }
    super::user_space::runner_request(files, "groups-suite", &script, "/tests/groups-suite")
}

fn run(groups: u32) -> Outcome<ProgramRun> {
    let request = ExecRequest {
        machine: MachineOptions { groups, ..MachineOptions::with(4, 256) },
        kernel: GuestKernel::Lamina,
        files: Vec::new(),
        program: "/bin/sh".into(),
        program_arguments: vec!["-c".to_string(), SCRIPT.to_string()],
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}

/// What the script must have printed with `groups` groups over 4 CPUs.
fn check(run: &ProgramRun, groups: u32) -> Outcome {
    let output = String::from_utf8_lossy(&run.output);
    let errors = String::from_utf8_lossy(&run.errors);
    let failed = |why: String| Err(crate::failure::Failure::failed(format!("{why}\nstdout:\n{output}\nstderr:\n{errors}")));
    if run.exit_code != 0 {
        return failed(format!("exit code {}", run.exit_code));
    }
    let value = |text: &str, label: &str| -> Option<u32> { text.lines().find_map(|line| line.strip_prefix(label)?.trim().split(' ').next()?.parse().ok()) };
    let (Some(shell), Some(first), Some(second)) = (value(&output, "shell "), value(&errors, "first "), value(&errors, "second ")) else {
        return failed("a group line is missing".into());
    };
    if [shell, first, second].iter().any(|&group| group >= groups) {
        return failed(format!("a group number is not below {groups}"));
    }
    if first == second {
        return failed(format!("both pipeline stages ran in group {first}: placement did not spread them"));
    }
    let last = groups - 1;
    let expected = [
        "5000".to_string(),
        format!("pinned {last} cpus {}", 4 / groups),
        "back 0".to_string(),
        format!("sleeper {last}"),
        "sleeper status 143".to_string(),
    ];
    for line in &expected {
        if !output.lines().any(|seen| seen.trim() == line) {
            return failed(format!("no line `{line}`"));
        }
    }
    if shell == last {
        return failed(format!("the shell itself is in group {last}: kill and wait did not cross groups"));
    }
    let reports: Vec<Vec<(&str, u64)>> = output.lines().filter_map(|line| line.strip_prefix("report group ")).map(fields).collect();
    if reports.len() != groups as usize {
        return failed(format!("{} group lines in /proc/lamina/groups, not {groups}", reports.len()));
    }
    let field = |report: &[(&str, u64)], name: &str| report.iter().find(|(key, _)| *key == name).map(|(_, value)| *value);
    let sum = |name: &str| reports.iter().map(|report| field(report, name).unwrap_or(0)).sum::<u64>();
    for (group, report) in reports.iter().enumerate() {
        match field(report, "copies") {
            Some(0) => {}
            Some(copies) => return failed(format!("group {group} still holds {copies} copies after every child ended")),
            None => return failed(format!("group {group} has no capability kernel")),
        }
    }
    let Some(living) = value(&output, "living ") else {
        return failed("no `living` line".into());
    };
    if sum("processes") != u64::from(living) {
        return failed(format!("the groups count {} processes, {living} live: a move or an exit miscounted", sum("processes")));
    }
    if sum("obtains") == 0 || sum("messages_out") == 0 {
        return failed("no descriptor crossed groups through the group kernels".into());
    }
    if sum("malformed") != 0 || sum("refused") != 0 {
        return failed("a group kernel refused a request or got a malformed message".into());
    }
    Ok(())
}

/// `name value` pairs of a `/proc/lamina/groups` line after its group number.
fn fields(line: &str) -> Vec<(&str, u64)> {
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    words.chunks(2).filter_map(|pair| Some((pair[0], pair.get(1)?.parse().ok()?))).collect()
}
