//! Crash tests of the journal: every workload on 1 KiB and 4 KiB images
//! (mkfs.ext4 defaults: journal, metadata_csum, 64bit; the grouped run
//! also without metadata_csum, a journal without checksums), under both
//! commit policies. Every crash state must open (replaying the journal),
//! reopen unchanged, show each path as the workload allows (fsynced and
//! synced contents exactly, renames atomic, no stale bytes), and pass
//! `e2fsck -fn` (on every n-th state: see the printed tallies).

mod common;
mod crash;

use crash::run::{run, Flushes, Layout, Sampling, Tally, FOUR_KIB, ONE_KIB, ONE_KIB_NO_CHECKSUMS};
use crash::workloads::{many_commits, WORKLOADS};
use ext4::CommitPolicy;

fn run_all(policy: CommitPolicy, layouts: &[Layout], sampling: Sampling) -> Tally {
    common::require_e2fsprogs();
    let mut total = Tally { label: format!("all workloads, {policy:?}"), ..Tally::default() };
    for (index, workload) in WORKLOADS.iter().enumerate() {
        for &layout in layouts {
            let sampling = Sampling { seed: sampling.seed + index as u64 * 7919 + u64::from(layout.block_size), ..sampling };
            let tally = run(workload, layout, policy, Flushes::AsIssued, sampling);
            eprintln!("{tally}");
            for failure in tally.failures.iter().take(3) {
                eprintln!("  {failure}");
            }
            total.absorb(tally);
        }
    }
    crash::run::report(&format!("crash tier: {total}"));
    total
}

#[test]
fn grouped_commits_lose_nothing_promised() {
    let layouts = [ONE_KIB, FOUR_KIB, ONE_KIB_NO_CHECKSUMS];
    let total = run_all(CommitPolicy::Grouped, &layouts, Sampling { per_window: 4, fsck_every: 10, seed: 0x5EED_0001 });
    assert!(total.states() >= 1000 && total.replayed > 0, "too few states: {total}");
    assert!(total.failures.is_empty(), "{} failures, first: {}", total.failures.len(), total.failures[0]);
}

#[test]
fn every_operation_commits_lose_nothing() {
    let layouts = [ONE_KIB, FOUR_KIB];
    let total = run_all(CommitPolicy::EveryOperation, &layouts, Sampling { per_window: 1, fsck_every: 25, seed: 0x5EED_0002 });
    assert!(total.states() >= 1000 && total.replayed > 0, "too few states: {total}");
    assert!(total.failures.is_empty(), "{} failures, first: {}", total.failures.len(), total.failures[0]);
}

#[test]
fn the_log_wraps_and_checkpoints_without_losing_anything() {
    common::require_e2fsprogs();
    let sampling = Sampling { per_window: 1, fsck_every: 25, seed: 0x5EED_0003 };
    let workload = ("many commits", many_commits as fn(&mut crash::session::Session));
    let total = run(&workload, ONE_KIB, CommitPolicy::Grouped, Flushes::AsIssued, sampling);
    crash::run::report(&format!("crash tier: {total}"));
    assert!(total.wraps > 0, "the log never wrapped: {total}");
    assert!(total.failures.is_empty(), "{} failures, first: {}", total.failures.len(), total.failures[0]);
}
