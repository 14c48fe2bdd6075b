//! Every crash state of one log checked against one model, with a tally
//! of what was cut, replayed, fsck'ed and found wrong.

use std::fmt;
use std::time::{Duration, Instant};

use crate::check::{check_state, ExtraVerdict, Found, Fsck};
use crate::model::Model;
use crate::states::{for_each_state, Cut, Random};
use crate::{log_wraps, Event};

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

/// Cuts every state of `events` over `initial` (see [`for_each_state`])
/// and checks each against `model` (and `extra`); `label` names the run
/// in failures.
pub fn check_every_state(label: &str, initial: &[u8], events: &[Event], model: &Model, sampling: Sampling, extra: Option<ExtraVerdict<'_>>) -> Tally {
    let started = Instant::now();
    let mut tally = Tally {
        label: label.to_string(),
        writes: events.iter().filter(|event| matches!(event, Event::Write { .. })).count(),
        flushes: events.iter().filter(|event| matches!(event, Event::Flush)).count(),
        wraps: log_wraps(events),
        ..Tally::default()
    };
    let mut random = Random(sampling.seed);
    let mut index = 0;
    for_each_state(initial, events, sampling.per_window, &mut random, |state| {
        let fsck = if index % sampling.fsck_every.max(1) == 0 { Fsck::Run } else { Fsck::Skip };
        index += 1;
        match state.cut {
            Cut::AtFlush => tally.at_flush += 1,
            Cut::Reordered => tally.reordered += 1,
        }
        tally.fscked += usize::from(fsck == Fsck::Run);
        let state_label = state.label.clone();
        match check_state(state, model, fsck, extra) {
            Ok(Found::LogInUse) => tally.replayed += 1,
            Ok(Found::Clean) => {}
            Err(problem) => tally.failures.push(format!("{}: {state_label}: {problem}", tally.label)),
        }
    });
    tally.elapsed = started.elapsed();
    tally
}
