//! The crash tier must be able to fail: with the flush before each commit
//! block lost (a journal that writes its commit block before its
//! transaction and the ordered data are durable), the same workloads must
//! produce crash states the checker rejects.

mod common;
mod crash;

use crash::run::{run, Flushes, Sampling, Tally, FOUR_KIB, ONE_KIB, ONE_KIB_NO_CHECKSUMS};
use crash::workloads::WORKLOADS;
use ext4::CommitPolicy;

#[test]
fn losing_the_flush_before_the_commit_block_is_caught() {
    common::require_e2fsprogs();
    let mut total = Tally { label: "mutation: flush before commit block lost".to_string(), ..Tally::default() };
    for (index, workload) in WORKLOADS.iter().enumerate() {
        for layout in [ONE_KIB, FOUR_KIB, ONE_KIB_NO_CHECKSUMS] {
            let sampling = Sampling { per_window: 4, fsck_every: 25, seed: 0xBAD_F1u64 + index as u64 };
            let tally = run(workload, layout, CommitPolicy::Grouped, Flushes::LostBeforeCommit, sampling);
            eprintln!("{tally}");
            if let Some(failure) = tally.failures.first() {
                eprintln!("  e.g. {}", failure.lines().next().unwrap_or(""));
            }
            total.absorb(tally);
        }
    }
    eprintln!("{total}");
    assert!(!total.failures.is_empty(), "the checker found nothing wrong with a journal that loses its ordering flush");
}
