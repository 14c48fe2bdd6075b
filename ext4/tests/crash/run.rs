//! One crash run: a workload on a fresh image with one commit policy,
//! then every crash state of its log checked, with a tally to print.

use std::time::Instant;

use ext4::CommitPolicy;

pub use crash_check::verdicts::{Sampling, Tally};

use crash_check::verdicts::check_every_state;
use crash_check::{lose_flushes, AroundCommit};

use super::session::Session;
use super::workloads::Workload;
use crate::common::{make_image_from, TempDir};

/// An image layout: block size, size, extra mkfs options (mkfs.ext4's
/// defaults otherwise: a journal, metadata_csum, 64bit, flex_bg, …).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub block_size: u32,
    pub megabytes: u32,
    pub options: &'static [&'static str],
}

/// The layouts of the tier.
pub const ONE_KIB: Layout = Layout { block_size: 1024, megabytes: 8, options: &["-N", "256"] };
pub const FOUR_KIB: Layout = Layout { block_size: 4096, megabytes: 16, options: &["-N", "256"] };
pub const ONE_KIB_NO_CHECKSUMS: Layout =
    Layout { block_size: 1024, megabytes: 8, options: &["-N", "256", "-O", "^metadata_csum,^64bit"] };

/// Whether the disk honours every flush.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flushes {
    AsIssued,
    /// A mutation: the flush before each commit block never happens.
    LostBeforeCommit,
    /// A mutation: the flush after each commit block never happens.
    LostAfterCommit,
}

/// A fresh, empty file system of `layout`.
pub fn fresh_image(layout: Layout) -> Vec<u8> {
    let tree = TempDir::new("crash-empty-tree");
    make_image_from(&tree.0, layout.block_size, layout.megabytes, layout.options)
}

/// Runs `workload` on `layout` with `policy`, then checks its crash states.
pub fn run(workload: &Workload, layout: Layout, policy: CommitPolicy, flushes: Flushes, sampling: Sampling) -> Tally {
    let started = Instant::now();
    let mut session = Session::start(fresh_image(layout), policy);
    (workload.1)(&mut session);
    let mut finished = session.finish();
    match flushes {
        Flushes::AsIssued => 0,
        Flushes::LostBeforeCommit => lose_flushes(&mut finished.events, AroundCommit::Before),
        Flushes::LostAfterCommit => lose_flushes(&mut finished.events, AroundCommit::After),
    };
    let label = format!("{} ({} B blocks {:?}, {policy:?}, {flushes:?})", workload.0, layout.block_size, layout.options);
    let mut tally = check_every_state(&label, &finished.initial, &finished.events, &finished.model, sampling, None);
    tally.elapsed = started.elapsed();
    tally
}

/// Prints `line` past the test harness's capture, so the tier's summary
/// shows in a plain `cargo test` run.
pub fn report(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
