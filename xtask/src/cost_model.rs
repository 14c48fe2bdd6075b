//! `cargo xtask bench --groups costs` (`make bench BENCH=costs`): the scale
//! simulator's cost model (issue 21), measured on Lamina and written to
//! `scale-sim/costs.txt`, in guest instructions under `-icount shift=0`:
//! the records of a `kbench=costs` boot (`kernel-bench/src/cost_paths.rs`)
//! and Lamina's figures of `user/bench/syscalls.c` on one CPU. Linux is
//! not booted: the model is Lamina's.
//!
//! Must never write the file with a key missing (the simulator's parser
//! refuses it) or with anything but `#` lines and `key value` lines.

use std::collections::BTreeMap;
use std::process::Command;

use crate::bench_results::BenchmarkRecord;
use crate::failure::{Context, Failure, Outcome};
use crate::kernel_bench::run_kernel_group;
use crate::linux_bench::lamina_instruction_counts;

const GROUP: &str = "costs";
const COSTS_FILE: &str = "scale-sim/costs.txt";

/// Where a key's figure comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    /// The `costs/<key>` record of the `kbench=costs` boot.
    Kernel,
    /// A `syscalls.c` record, divided by `per` operations.
    Program { record: &'static str, per: f64 },
}

/// One key of `costs.txt`.
struct Key {
    name: &'static str,
    source: Source,
    /// The `#` line above it: what it measures.
    about: &'static str,
}

const fn kernel(name: &'static str, about: &'static str) -> Key {
    Key { name, source: Source::Kernel, about }
}

const fn program(name: &'static str, record: &'static str, per: f64, about: &'static str) -> Key {
    Key { name, source: Source::Program { record, per }, about }
}

/// Every key, in the file's order.
const KEYS: [Key; 30] = [
    kernel("call_obtain_local", "Kernel::obtain of a local parent: the copy made at once."),
    kernel("call_obtain_remote", "Kernel::obtain of a parent on another kernel: recorded, one request queued."),
    kernel("call_delegate_local", "Kernel::delegate to a process of the same kernel: the copy made at once."),
    kernel("call_delegate_remote", "Kernel::delegate to a process of another kernel: recorded, one request queued."),
    kernel("call_revoke_leaf", "Kernel::revoke of a local capability without parent or children."),
    kernel("revoke_per_local_cap", "Per capability of a local chain: (revoke of a chain of 1000 - leaf) / 999."),
    kernel("revoke_per_local_cap_short", "Per capability between short chains: (revoke of a chain of 100 - of a chain of 10) / 90."),
    kernel("revoke_per_remote_child", "Per remote child (96 over 3 other kernels): its RevokeRequest queued."),
    kernel("handle_obtain_request", "Kernel::receive(ObtainRequest): the child entered, the reply queued."),
    kernel("handle_obtain_reply", "Kernel::receive(ObtainReply, granted): the copy made, the call completed."),
    kernel("handle_delegate_request", "Kernel::receive(DelegateRequest): the copy made (not usable yet), the reply queued."),
    kernel("handle_delegate_reply", "Kernel::receive(DelegateReply): the child entered, the ack queued, the call completed."),
    kernel("handle_delegate_ack", "Kernel::receive(DelegateAck, commit): the copy made usable."),
    kernel("handle_revoke_request", "Kernel::receive(RevokeRequest) from the parent's kernel for a leaf: mark, remove, reply."),
    kernel("handle_revoke_reply", "Kernel::receive(RevokeReply), the last of one remote child: finish, complete the call."),
    kernel("handle_revoke_request_inner", "Kernel::receive(RevokeRequest) from the parent's kernel for a capability with one remote child (the middle of a chain across kernels): mark, record the revocation, queue one RevokeRequest onward; no reply yet."),
    kernel("handle_revoke_reply_inner", "Kernel::receive(RevokeReply), the one that finishes such a revocation asked for by another kernel: remove the capability (no Unlink), queue the RevokeReply back."),
    kernel("handle_unlink", "Kernel::receive(Unlink): the child dropped from its parent's children."),
    kernel("message_send", "wire::encode and a push into a channel's WordRing slot (an ObtainRequest)."),
    kernel("message_receive", "A pop from a channel's WordRing and wire::decode."),
    kernel("notify", "sched::unpark of a kernel thread parked on another, idle CPU until it runs (both CPUs; the waker parks)."),
    kernel("kernel_turn", "One turn of a multikernel kernel thread's loop (1 peer) that finds nothing to do: requests, collect, receive, send, completions, idle check; not the park."),
    kernel("kernel_hop", "Per message of an obtain across two kernels (ObtainRequest, ObtainReply) between two kernel threads running the multikernel loop on CPUs 0 and 1, whole loop, all CPUs: send, wake-up (unpark, IPI, wake from hlt), turns, channel, handler, park. (100 obtains by kernel 0 of a parent on kernel 1 - 100 local obtains, each handed over by the benchmark thread and waited for, - 100 x (call_obtain_remote - call_obtain_local)) / 200; includes (handle_obtain_request + handle_obtain_reply) / 2 = kernel_hop_handlers."),
    kernel("kernel_hop_handlers", "The handler part of kernel_hop: (handle_obtain_request + handle_obtain_reply) / 2 (the medians above); kernel_hop - kernel_hop_handlers is a message's cost besides its handler."),
    program("syscall", "getpid", 1.0, "A trivial system call from ring 3 (getpid, entry and exit): syscalls.c `getpid`."),
    program("context_switch", "sched_yield_2threads", 2.0, "One switch between two threads of a process on one CPU, with its sched_yield: half of syscalls.c `sched_yield_2threads`."),
    program("file_open_close", "open_close", 1.0, "open and close of a file in the initramfs tree (tmpfs): syscalls.c `open_close`."),
    program("file_stat", "stat_hot", 1.0, "stat of that file: syscalls.c `stat_hot`."),
    program("file_read_4k", "read_tmpfs_4k", 1.0, "pread of 4 KiB at offset 0 of a tmpfs file: syscalls.c `read_tmpfs_4k`."),
    program("file_write_4k", "write_tmpfs_4k", 1.0, "pwrite of 4 KiB at offset 0 of a tmpfs file: syscalls.c `write_tmpfs_4k`."),
];

/// The `costs` group: measures every key and writes `scale-sim/costs.txt`.
pub fn run_costs_group() -> Outcome<Vec<BenchmarkRecord>> {
    // Named before the builds, so that it is what they build.
    let (date, commit) = (command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"])?, commit()?);
    let mut records = run_kernel_group(GROUP)?;
    let samples = records.first().map_or(0, |record| record.runs);
    eprintln!("xtask: costs: Lamina, syscalls.c, instruction counts");
    let figures = lamina_instruction_counts(&program_records().join(","))?;
    records.extend(program_keys(&figures));
    let values = key_values(&records)?;
    eprintln!("xtask: costs: Lamina's multikernel benchmark, for the simulator's cross-check");
    let checks = run_kernel_group("multikernel")?;
    let header = Header { date, commit, samples };
    let path = crate::workspace::root().join(COSTS_FILE);
    let text = render(&header, &values) + &render_checks(&checks);
    std::fs::write(&path, text).context(|| format!("writing {}", path.display()))?;
    println!("cost model written to {}", path.display());
    Ok(records)
}

/// The `syscalls.c` records the model needs.
fn program_records() -> Vec<&'static str> {
    KEYS.iter()
        .filter_map(|key| match key.source {
            Source::Program { record, .. } => Some(record),
            Source::Kernel => None,
        })
        .collect()
}

/// A `costs` record per key that comes from `syscalls.c`.
fn program_keys(figures: &BTreeMap<String, f64>) -> Vec<BenchmarkRecord> {
    KEYS.iter()
        .filter_map(|key| match key.source {
            Source::Program { record, per } => Some((key.name, figures.get(record)? / per)),
            Source::Kernel => None,
        })
        .map(|(name, value)| cost_record(name, value, 1, 1))
        .collect()
}

/// A `costs` record of Lamina's, in instructions under icount.
fn cost_record(name: &str, value: f64, cpu_count: u32, runs: usize) -> BenchmarkRecord {
    BenchmarkRecord {
        group: GROUP.to_string(),
        name: name.to_string(),
        unit: "instructions".to_string(),
        lamina: Some(value),
        linux: None,
        linux_no_mitigations: None,
        cpu_count,
        accelerator: "tcg-icount".to_string(),
        runs,
        spread: 0.0,
    }
}

/// Each key's value (whole instructions, never below 0), in [`KEYS`]
/// order; an error naming every key without a record.
fn key_values(records: &[BenchmarkRecord]) -> Outcome<Vec<(&'static Key, u64)>> {
    let value = |key: &Key| records.iter().find(|record| record.group == GROUP && record.name == key.name).and_then(|record| record.lamina);
    let missing: Vec<&str> = KEYS.iter().filter(|key| value(key).is_none()).map(|key| key.name).collect();
    if !missing.is_empty() {
        return Err(Failure::failed(format!("{COSTS_FILE} not written: no figure for {}", missing.join(", "))));
    }
    Ok(KEYS.iter().filter_map(|key| Some((key, value(key)?.max(0.0).round() as u64))).collect())
}

/// What the file's header names.
struct Header {
    date: String,
    commit: String,
    /// Samples behind each in-kernel median.
    samples: usize,
}

/// The file: header, then each key under its `#` line.
fn render(header: &Header, values: &[(&Key, u64)]) -> String {
    let mut text = format!(
        "# Lamina's cost model for the scale simulator, in guest instructions under -icount shift=0.\n\
         # Measured by `make bench BENCH=costs` on {} at {}; medians of {} samples.\n\
         # In-kernel keys: kernel-bench/src/cost_paths.rs (a kbench=costs boot, 2 vCPUs), less the clock's own cost.\n\
         # User-level keys (syscall to file_write_4k): per-operation means of one deterministic run\n\
         # of user/bench/syscalls.c on Lamina, one CPU, thousands of operations each.\n",
        header.date, header.commit, header.samples
    );
    for (key, value) in values {
        text.push_str(&format!("# {}\n{} {value}\n", key.about, key.name));
    }
    text
}

/// Lamina's `multikernel` records as `multikernel_<name> value` lines,
/// below the model: not part of it, but what the simulator's prediction
/// is checked against (`cargo xtask simulate --figure crosscheck`).
fn render_checks(records: &[BenchmarkRecord]) -> String {
    let mut text = String::from("# Not part of the model: Lamina's `multikernel` benchmark (make bench BENCH=multikernel) in the same run,\n# what the simulator's cross-check compares its predictions with (docs/scale.md).\n");
    for record in records {
        if let Some(value) = record.lamina {
            text.push_str(&format!("multikernel_{} {}\n", record.name, value.max(0.0).round() as u64));
        }
    }
    text
}

/// The commit measured, `+ uncommitted changes` when tracked files differ.
fn commit() -> Outcome<String> {
    let head = command_output("git", &["rev-parse", "--short=12", "HEAD"])?;
    let changes = command_output("git", &["status", "--porcelain", "--untracked-files=no"])?;
    Ok(if changes.is_empty() { head } else { format!("{head} + uncommitted changes") })
}

/// `program`'s standard output, trimmed, run in the workspace root.
fn command_output(program: &str, arguments: &[&str]) -> Outcome<String> {
    let output = Command::new(program).args(arguments).current_dir(crate::workspace::root()).output().context(|| format!("running {program}"))?;
    if !output.status.success() {
        return Err(Failure::failed(format!("{program} {} failed ({})", arguments.join(" "), output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, value: f64) -> BenchmarkRecord {
        cost_record(name, value, 2, 21)
    }

    #[test]
    fn a_missing_key_is_named_and_nothing_is_written() {
        let records = vec![record("call_obtain_local", 100.0)];
        let Err(Failure::Failed(message)) = key_values(&records) else { panic!("accepted a model with keys missing") };
        assert!(message.contains("notify") && message.contains("file_write_4k") && !message.contains("call_obtain_local,"), "{message}");
    }

    #[test]
    fn the_file_has_only_comments_and_key_value_lines_in_key_order() {
        let records: Vec<BenchmarkRecord> = KEYS.iter().enumerate().map(|(index, key)| record(key.name, index as f64 + 0.6)).collect();
        let values = key_values(&records).expect("every key");
        let header = Header { date: "2026-11-28 10:00 UTC".to_string(), commit: "0123456789ab".to_string(), samples: 21 };
        let text = render(&header, &values);
        assert!(text.contains("on 2026-11-28 10:00 UTC at 0123456789ab; medians of 21 samples.\n"), "{text}");
        let pairs: Vec<(&str, &str)> = text.lines().filter(|line| !line.starts_with('#')).filter_map(|line| line.split_once(' ')).collect();
        let names: Vec<&str> = KEYS.iter().map(|key| key.name).collect();
        assert_eq!(pairs.iter().map(|(name, _)| *name).collect::<Vec<_>>(), names);
        assert_eq!(pairs[0].1, "1");
        assert!(text.lines().all(|line| line.starts_with('#') || line.split(' ').count() == 2), "{text}");
    }

    #[test]
    fn program_figures_are_divided_per_operation() {
        let figures: BTreeMap<String, f64> = [("sched_yield_2threads".to_string(), 3000.0), ("getpid".to_string(), 150.0)].into();
        let records = program_keys(&figures);
        let value = |name: &str| records.iter().find(|record| record.name == name).and_then(|record| record.lamina);
        assert_eq!(value("context_switch"), Some(1500.0));
        assert_eq!(value("syscall"), Some(150.0));
        assert_eq!(value("file_stat"), None);
    }
}
