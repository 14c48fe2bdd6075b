//! The crash tier must be able to fail. Two broken journals, simulated by
//! a disk that loses one flush the journal asked for:
//! - the flush before each commit block (the commit block may then be
//!   durable before its descriptors, logged copies and ordered data);
//! - the flush after it (fsync may return before the commit is durable).
//!
//! On the same workloads the checker must reject crash states of each.

mod common;
mod crash;

use crash::run::{run, Flushes, Sampling, Tally, FOUR_KIB, ONE_KIB, ONE_KIB_NO_CHECKSUMS};
use crash::workloads::WORKLOADS;
use ext4::CommitPolicy;

fn run_mutated(flushes: Flushes, seed: u64) -> Tally {
    common::require_e2fsprogs();
    let mut total = Tally { label: format!("mutation {flushes:?} (failures expected)"), ..Tally::default() };
    for (index, workload) in WORKLOADS.iter().enumerate() {
        for layout in [ONE_KIB, FOUR_KIB, ONE_KIB_NO_CHECKSUMS] {
            let sampling = Sampling { per_window: 4, fsck_every: 25, seed: seed + index as u64 };
            let tally = run(workload, layout, CommitPolicy::Grouped, flushes, sampling);
            eprintln!("{tally}");
            if let Some(failure) = tally.failures.first() {
                eprintln!("  e.g. {}", failure.lines().next().unwrap_or(""));
            }
            total.absorb(tally);
        }
    }
    crash::run::report(&format!("crash tier: {total}"));
    total
}

#[test]
fn losing_the_flush_before_the_commit_block_is_caught() {
    let total = run_mutated(Flushes::LostBeforeCommit, 0x000B_ADF1);
    assert!(!total.failures.is_empty(), "the checker accepted a journal that loses its ordering flush");
}

#[test]
fn losing_the_flush_after_the_commit_block_breaks_a_promise() {
    let total = run_mutated(Flushes::LostAfterCommit, 0x000B_ADF2);
    let broken_promises = total.failures.iter().filter(|failure| failure.contains("allowed")).count();
    crash::run::report(&format!("crash tier: {broken_promises} of those failures are broken fsync/sync promises"));
    assert!(broken_promises > 0, "the checker accepted an fsync that returned before its commit was durable");
}
