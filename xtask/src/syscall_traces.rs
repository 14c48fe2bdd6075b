//! The host side of the system-call tracer (`cargo xtask exec --trace
//! FILE`, `docs/tracing.md`): Lamina, booted with `trace` under icount,
//! prints its records as `lamina-trace: LINE` console lines when the guest
//! powers off, then `lamina-trace: end N records, M dropped`. Here those
//! lines are collected, checked with `linux-abi`'s parser, put in order of
//! their start, cut to begin at the program's `execve` (what `/init`'s
//! child does before it is not the program's), shifted so that the first
//! call starts at 0, and written under a header that names the program and
//! the commit.
//!
//! A malformed line, or a report without its end line, is an error: a
//! trace is either whole (or says what it dropped) or not written.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

use linux_abi::syscall_trace::{parse_line, TraceLine};

use crate::exec::{run_program_traced, ExecRequest, Input, Output, ProgramRun, SHUTDOWN_LIMIT};
use crate::failure::{Context, Failure, Outcome};

/// Start of each of the tracer's console lines.
const PREFIX: &str = "lamina-trace: ";

/// What a trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceSummary {
    pub calls: usize,
    /// Records the kernel's log had no room for.
    pub dropped: u64,
    /// From the first call's start to the last call's end.
    pub instructions: u64,
}

/// Which processes a trace file keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The program's and all it starts.
    Everything,
    /// Those of the first process that runs a program of this file name,
    /// from its `execve` on, and of the processes it starts (a server's,
    /// without the script and the clients around it).
    ProcessesOf(&'static str),
}

/// Runs `request`'s program with the tracer on and writes its trace (of
/// the processes `scope` says) to `file`; the run and what the trace holds
/// (a note on stderr says so too).
pub fn trace_program(request: &ExecRequest, input: Input, output: Output, scope: Scope, file: &Path) -> Outcome<(ProgramRun, TraceSummary)> {
    let (run, lines) = run_program_traced(request, input, output, None)?;
    let command: Vec<String> = std::iter::once(request.program.display().to_string()).chain(request.program_arguments.iter().cloned()).collect();
    let (text, summary) = trace_text(&command.join(" "), &commit(), scope, &lines).map_err(Failure::failed)?;
    std::fs::write(file, text).context(|| format!("writing {}", file.display()))?;
    eprintln!("xtask: trace: {} calls over {} instructions in {}", summary.calls, summary.instructions, file.display());
    if summary.dropped > 0 {
        eprintln!("xtask: trace: the kernel's log was full: {} calls were dropped (boot with a larger trace=KiB)", summary.dropped);
    }
    Ok((run, summary))
}

/// The tracer's lines (without the prefix) from `console`, up to its end
/// line; stops early when the console ends or stays silent for
/// [`SHUTDOWN_LIMIT`].
pub fn collect_lines(console: &Receiver<Vec<u8>>) -> Vec<String> {
    let mut lines = Vec::new();
    let deadline = Instant::now() + SHUTDOWN_LIMIT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let raw = match console.recv_timeout(left) {
            Ok(raw) => raw,
            Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => break,
        };
        let text = String::from_utf8_lossy(&raw);
        let Some(position) = text.find(PREFIX) else { continue };
        let line = text[position + PREFIX.len()..].trim_end().to_string();
        let last = line.starts_with("end ");
        lines.push(line);
        if last {
            break;
        }
    }
    lines
}

/// The trace file for `command` on `commit` from the tracer's `lines`.
pub fn trace_text(command: &str, commit: &str, scope: Scope, lines: &[String]) -> Result<(String, TraceSummary), String> {
    let (end, records) = lines.split_last().ok_or("the kernel printed no trace (was it booted with `trace`?)")?;
    let (stored, dropped) = end_counts(end).ok_or_else(|| format!("the trace report was cut short: its last line is `{end}`"))?;
    let mut calls = records
        .iter()
        .enumerate()
        .map(|(index, line)| parse_line(line).map_err(|error| format!("trace line {}: {error}: `{line}`", index + 1)))
        .collect::<Result<Vec<TraceLine>, String>>()?;
    if calls.len() as u64 != stored {
        return Err(format!("the kernel reported {stored} records but printed {}", calls.len()));
    }
    calls.sort_by_key(|call| call.start);
    let calls = match scope {
        Scope::Everything => from_the_programs_start(calls),
        Scope::ProcessesOf(name) => processes_of(calls, name).ok_or_else(|| format!("no process ran {name}"))?,
    };
    let origin = calls.first().map_or(0, |call| call.start);
    let last_end = calls.iter().map(|call| call.end).max().unwrap_or(origin);
    let summary = TraceSummary { calls: calls.len(), dropped, instructions: last_end - origin };
    let mut text = header(command, commit, &summary);
    if let Scope::ProcessesOf(name) = scope {
        text.push_str(&format!("# only the processes of {name}: the first to execve it, from then on, and those it started\n"));
    }
    for mut call in calls {
        call.start -= origin;
        call.end -= origin;
        text.push_str(&format!("{call}\n"));
    }
    Ok((text, summary))
}

/// `calls` (ordered by start) from the program's `execve` on: the first
/// process starts as `/init`'s child, whose calls before the `execve`
/// (setting up the program's descriptors) are not the program's.
fn from_the_programs_start(calls: Vec<TraceLine>) -> Vec<TraceLine> {
    let Some(first) = calls.first().map(|call| call.pid) else { return calls };
    let Some(exec) = calls.iter().find(|call| call.pid == first && call.name == "execve").map(|call| call.start) else { return calls };
    calls.into_iter().filter(|call| call.pid != first || call.start >= exec).collect()
}

/// `calls` (ordered by start) of the first process that runs `name`,
/// from that `execve` on, and of the processes it (or they) started: a
/// `fork`, `vfork`, `clone` or `clone3` returns the new process's id.
fn processes_of(calls: Vec<TraceLine>, name: &str) -> Option<Vec<TraceLine>> {
    let runs_name = |call: &TraceLine| call.name == "execve" && call.result == 0 && call.path.as_deref().is_some_and(|path| path.rsplit(|byte| *byte == b'/').next() == Some(name.as_bytes()));
    let exec = calls.iter().position(runs_name)?;
    let mut kept_pids = std::collections::HashSet::from([calls[exec].pid]);
    let mut kept = Vec::new();
    for call in calls.into_iter().skip(exec) {
        if !kept_pids.contains(&call.pid) {
            continue;
        }
        if matches!(call.name.as_str(), "fork" | "vfork" | "clone" | "clone3") && call.result > 0 {
            kept_pids.insert(call.result as u32);
        }
        kept.push(call);
    }
    Some(kept)
}

/// `N records, M dropped` of the tracer's end line.
fn end_counts(line: &str) -> Option<(u64, u64)> {
    let counts = line.strip_prefix("end ")?;
    let (stored, dropped) = counts.split_once(" records, ")?;
    Some((stored.parse().ok()?, dropped.strip_suffix(" dropped")?.parse().ok()?))
}

fn header(command: &str, commit: &str, summary: &TraceSummary) -> String {
    let command = command.replace(['\n', '\r'], " ");
    let mut text = format!("# trace of {command}; Lamina {commit}; times in guest instructions\n");
    text.push_str(&format!("# {} calls over {} instructions; {} dropped\n", summary.calls, summary.instructions, summary.dropped));
    text.push_str("# start end pid tid name ret a0 a1 a2 [path]\n");
    text
}

/// The commit the kernel was built from (`-dirty` with uncommitted changes).
fn commit() -> String {
    let described = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .current_dir(crate::workspace::root())
        .output();
    match described {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout).trim().to_string(),
        _ => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(list: &[&str]) -> Vec<String> {
        list.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn calls_are_ordered_by_start_and_shifted_to_zero() {
        let report = lines(&["1500 1600 2 2 close 0 0x3 0x0 0x0", "1000 2000 2 2 wait4 3 0xffffffffffffffff 0x0 0x0", "1100 1400 3 3 openat 3 0xffffff9c 0x4000 0x0 /tmp/a\\x20b", "end 3 records, 0 dropped"]);
        let (text, summary) = trace_text("/bin/busybox tar cf x", "abc123", Scope::Everything, &report).unwrap();
        assert_eq!(summary, TraceSummary { calls: 3, dropped: 0, instructions: 1000 });
        let body: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
        assert_eq!(body, ["0 1000 2 2 wait4 3 0xffffffffffffffff 0x0 0x0", "100 400 3 3 openat 3 0xffffff9c 0x4000 0x0 /tmp/a\\x20b", "500 600 2 2 close 0 0x3 0x0 0x0"]);
        assert!(text.starts_with("# trace of /bin/busybox tar cf x; Lamina abc123; times in guest instructions\n"), "{text}");
    }

    #[test]
    fn the_trace_begins_at_the_programs_execve() {
        let report = lines(&[
            "10 20 2 2 dup2 1 0x4 0x1 0x0",
            "30 90 2 2 execve 0 0x1 0x2 0x3 /bin/busybox",
            "95 99 2 2 getpid 2 0x0 0x0 0x0",
            "end 3 records, 0 dropped",
        ]);
        let (text, summary) = trace_text("p", "c", Scope::Everything, &report).unwrap();
        assert_eq!(summary, TraceSummary { calls: 2, dropped: 0, instructions: 69 });
        assert!(text.contains("\n0 60 2 2 execve 0 0x1 0x2 0x3 /bin/busybox\n65 69 2 2 getpid"), "{text}");
    }

    #[test]
    fn a_server_trace_keeps_the_servers_processes_only() {
        let report = lines(&[
            "10 20 2 2 execve 0 0x1 0x2 0x3 /bin/sh",
            "30 40 2 2 fork 3 0x0 0x0 0x0",
            "50 60 3 3 execve 0 0x1 0x2 0x3 /data/nginx",
            "61 62 2 2 fork 4 0x0 0x0 0x0",
            "63 64 3 3 clone 5 0x0 0x0 0x0",
            "65 66 4 4 connect 0 0x3 0x0 0x10",
            "67 68 5 5 accept4 6 0x6 0x0 0x0",
            "end 7 records, 0 dropped",
        ]);
        let (text, summary) = trace_text("p", "c", Scope::ProcessesOf("nginx"), &report).unwrap();
        let pids: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).map(|line| line.split(' ').nth(2).unwrap()).collect();
        assert_eq!((pids, summary.calls), (vec!["3", "3", "5"], 3));
        assert!(trace_text("p", "c", Scope::ProcessesOf("redis"), &report).is_err());
    }

    #[test]
    fn drops_are_counted_in_the_header() {
        let (text, summary) = trace_text("p", "c", Scope::Everything, &lines(&["5 6 2 2 getpid 2 0x0 0x0 0x0", "end 1 records, 7 dropped"])).unwrap();
        assert_eq!(summary.dropped, 7);
        assert!(text.contains("; 7 dropped\n"), "{text}");
    }

    #[test]
    fn a_short_or_malformed_report_is_an_error() {
        let bad: &[&[&str]] = &[
            &[],
            &["5 6 2 2 getpid 2 0x0 0x0 0x0"],
            &["5 6 2 2 getpid 2 0x0 0x0", "end 1 records, 0 dropped"],
            &["5 6 2 2 getpid 2 0x0 0x0 0x0", "end 2 records, 0 dropped"],
            &["end x records, 0 dropped"],
        ];
        for report in bad {
            assert!(trace_text("p", "c", Scope::Everything, &lines(report)).is_err(), "{report:?} was accepted");
        }
        assert_eq!(trace_text("p", "c", Scope::Everything, &lines(&["end 0 records, 0 dropped"])).unwrap().1.calls, 0);
    }
}
