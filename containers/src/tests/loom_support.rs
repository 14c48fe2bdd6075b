//! Shared pieces of the loom models: the tree as loom runs it, two-thread
//! races, and the model runner.

use loom::sync::Arc;
use loom::thread;

use crate::Containers;

/// The tree under loom: spins FIFO, switches nothing off, tracks no lock
/// order (loom's threads share one OS thread, so a per-thread record would
/// mix them up).
pub(crate) type LoomContainers = Containers;

/// How many preemptions loom may insert in one execution (switches where a
/// thread spins on the tree lock come on top, free).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Preemptions {
    /// Every interleaving.
    Unbounded,
    /// At most this many.
    AtMost(usize),
}

/// Explores every execution of `model` within `preemptions`, and reports
/// how many there were and how long it took on stderr (`--nocapture`).
pub(crate) fn check(
    name: &str,
    preemptions: Preemptions,
    model: impl Fn() + Sync + Send + 'static,
) {
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

/// Runs `first` and `second` at once on `containers`, each on a thread of
/// its own, and returns both results.
///
/// Not one of them on the model's own thread, as elsewhere in Lamina:
/// loom's partial-order reduction then missed interleavings here. With the
/// model thread's operation read-only (a charge refused without a write),
/// the spawned release never ran before it: 1 execution where a dozen
/// differ (compare tokio-rs/loom#392: a spawned thread that starts with a
/// load is never preempted). With both spawned, the models catch the
/// planted bugs listed in docs/verification.md.
pub(crate) fn race<A: Send + 'static, B: Send + 'static>(
    containers: &Arc<LoomContainers>,
    first: impl FnOnce(&LoomContainers) -> A + Send + 'static,
    second: impl FnOnce(&LoomContainers) -> B + Send + 'static,
) -> (A, B) {
    let (one, two) = (containers.clone(), containers.clone());
    let a = thread::spawn(move || first(&one));
    let b = thread::spawn(move || second(&two));
    (a.join().unwrap(), b.join().unwrap())
}
