//! Crash tests of the journal: every workload on 1 KiB and 4 KiB images
//! (mkfs.ext4 defaults: journal, metadata_csum), under both commit
//! policies; every crash state must recover to what was promised.

mod common;
mod crash;

use crash::run::{run, Flushes, Sampling, Tally, FOUR_KIB, ONE_KIB};
use crash::workloads::WORKLOADS;
use ext4::CommitPolicy;

fn run_all(policy: CommitPolicy, sampling: Sampling) -> Tally {
    common::require_e2fsprogs();
    let mut total = Tally { label: format!("all workloads, {policy:?}"), ..Tally::default() };
    for (index, workload) in WORKLOADS.iter().enumerate() {
        for layout in [ONE_KIB, FOUR_KIB] {
            let sampling = Sampling { seed: sampling.seed + index as u64 * 7919 + u64::from(layout.block_size), ..sampling };
            let tally = run(workload, layout, policy, Flushes::AsIssued, sampling);
            eprintln!("{tally}");
            for failure in tally.failures.iter().take(3) {
                eprintln!("  {failure}");
            }
            total.absorb(tally);
        }
    }
    eprintln!("{total}");
    total
}

#[test]
fn grouped_commits_lose_nothing_promised() {
    let total = run_all(CommitPolicy::Grouped, Sampling { per_window: 3, fsck_every: 10, seed: 0x5EED_0001 });
    assert!(total.failures.is_empty(), "{} failures, first: {}", total.failures.len(), total.failures[0]);
}

#[test]
fn every_operation_commits_lose_nothing() {
    let total = run_all(CommitPolicy::EveryOperation, Sampling { per_window: 1, fsck_every: 20, seed: 0x5EED_0002 });
    assert!(total.failures.is_empty(), "{} failures, first: {}", total.failures.len(), total.failures[0]);
}
