//! Shared pieces of the loom tests.

use loom::sync::atomic::{AtomicBool, Ordering};

/// How many preemptions loom may insert in one execution (switches at a
/// thread's spin-loop yields come on top, free).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Preemptions {
    /// Every interleaving: affordable for two threads.
    Unbounded,
    /// At most this many: three threads need a bound. Spinning is free of
    /// preemptions (a waiter yields at every turn), so loom explores every
    /// number of turns each waiter can spin, and each further preemption
    /// multiplies that: the 3-thread ticket models have 100 executions at
    /// bound 1 and more than 100,000 at bound 2; the MCS ones, whose
    /// waiters spin on separate nodes, 715 at bound 2.
    AtMost(usize),
}

/// Explores every execution of `model` within `preemptions`, and reports
/// how many there were on stderr (`--nocapture` shows it).
pub(crate) fn check(preemptions: Preemptions, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = match preemptions {
        Preemptions::Unbounded => None,
        Preemptions::AtMost(bound) => Some(bound),
    };
    builder.max_branches = 100_000;
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    let started = std::time::Instant::now();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    std::eprintln!(
        "loom: {executions} executions, preemptions {preemptions:?}, {:.1?}",
        started.elapsed()
    );
}

/// Inside a critical section: increments `count` by a read and a later
/// write, with a preemption point between them, and checks that no other
/// thread is inside.
pub(crate) fn count_alone(count: &mut usize, inside: &AtomicBool) {
    let seen = *count;
    // SeqCst: a probe, not part of the lock; the strongest order keeps it
    // from hiding or inventing a race.
    assert!(
        !inside.swap(true, Ordering::SeqCst),
        "two threads inside the lock"
    );
    *count = seen + 1;
    inside.store(false, Ordering::SeqCst);
}
