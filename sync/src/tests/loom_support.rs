//! Shared pieces of the loom tests.

/// How many preemptions loom may insert in one execution (switches where a
/// thread parks or spins on a lock come on top, free).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Preemptions {
    /// Every interleaving.
    Unbounded,
    /// At most this many: models with three threads need a bound.
    AtMost(usize),
}

/// Explores every execution of `model` within `preemptions`, and reports
/// how many there were and how long it took on stderr (`--nocapture`).
pub(crate) fn check(name: &str, preemptions: Preemptions, model: impl Fn() + Sync + Send + 'static) {
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
        "loom: {name}: {executions} executions, preemptions {preemptions:?}, {:.1?}",
        started.elapsed()
    );
}

