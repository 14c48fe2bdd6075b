//! One crash run: a workload on a fresh image with one commit policy,
//! then every crash state of its log checked, with a tally to print.

use std::fmt;
use std::time::{Duration, Instant};

use ext4::CommitPolicy;

use crash_check::check::{check_state, Found, Fsck};
use crash_check::states::{for_each_state, Cut, Random};
use crash_check::{log_wraps, lose_flushes, AroundCommit, Event};

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

/// How many states to cut and check.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    /// Random reorderings between two flushes.
    pub per_window: usize,
    /// e2fsck on every n-th state (and the last).
    pub fsck_every: usize,
    pub seed: u64,
}

/// What one run found.
#[derive(Default)]
pub struct Tally {
    pub label: String,
    pub writes: usize,
    pub flushes: usize,
    pub at_flush: usize,
    pub reordered: usize,
    pub fscked: usize,
    /// States found with `needs_recovery` set (the open replayed the log).
    pub replayed: usize,
    /// Times the circular log wrapped during the workload.
    pub wraps: usize,
    pub failures: Vec<String>,
    pub elapsed: Duration,
}

impl Tally {
    pub fn states(&self) -> usize {
        self.at_flush + self.reordered
    }

    /// Adds `other`'s counts into this one.
    pub fn absorb(&mut self, other: Tally) {
        self.writes += other.writes;
        self.flushes += other.flushes;
        self.at_flush += other.at_flush;
        self.reordered += other.reordered;
        self.fscked += other.fscked;
        self.replayed += other.replayed;
        self.wraps += other.wraps;
        self.failures.extend(other.failures);
        self.elapsed += other.elapsed;
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}: {} writes, {} flushes, {} log wraps; {} states checked ({} at flushes, {} reordered; {} with needs_recovery set), {} by e2fsck -fn; {} failures ({:.1?})",
            self.label,
            self.writes,
            self.flushes,
            self.wraps,
            self.states(),
            self.at_flush,
            self.reordered,
            self.replayed,
            self.fscked,
            self.failures.len(),
            self.elapsed
        )
    }
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
    let mut tally = Tally {
        label: format!("{} ({} B blocks {:?}, {policy:?}, {flushes:?})", workload.0, layout.block_size, layout.options),
        writes: finished.events.iter().filter(|event| matches!(event, Event::Write { .. })).count(),
        flushes: finished.events.iter().filter(|event| matches!(event, Event::Flush)).count(),
        wraps: log_wraps(&finished.events),
        ..Tally::default()
    };
    let mut random = Random(sampling.seed);
    let mut index = 0;
    for_each_state(&finished.initial, &finished.events, sampling.per_window, &mut random, |state| {
        let fsck = if index % sampling.fsck_every.max(1) == 0 { Fsck::Run } else { Fsck::Skip };
        index += 1;
        match state.cut {
            Cut::AtFlush => tally.at_flush += 1,
            Cut::Reordered => tally.reordered += 1,
        }
        tally.fscked += usize::from(fsck == Fsck::Run);
        let label = state.label.clone();
        match check_state(state, &finished.model, fsck) {
            Ok(Found::LogInUse) => tally.replayed += 1,
            Ok(Found::Clean) => {}
            Err(problem) => tally.failures.push(format!("{}: {label}: {problem}", tally.label)),
        }
    });
    tally.elapsed = started.elapsed();
    tally
}

/// Prints `line` past the test harness's capture, so the tier's summary
/// shows in a plain `cargo test` run.
pub fn report(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
