//! Shared pieces of the loom models: running a model with a preemption
//! bound, and a model CPU's `hlt` and wake IPI.

use loom::sync::atomic::{AtomicBool, Ordering};

/// How many preemptions loom may insert in one execution.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Preemptions {
    Unbounded,
    AtMost(usize),
}

/// Explores every execution of `model` within `preemptions`, and reports
/// how many there were on stderr (`--nocapture`).
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
    std::eprintln!("loom: {name}: {executions} executions, preemptions {preemptions:?}, {:.1?}", started.elapsed());
}

/// True when loom finds a failing execution of `model` (a deadlock — a
/// lost wake-up — or a failed assertion): for the negative controls that
/// show a model can catch the bug it is about.
pub(crate) fn finds_a_failure(preemptions: Preemptions, model: impl Fn() + Sync + Send + 'static) -> bool {
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check("negative control", preemptions, model))).is_err();
    std::panic::set_hook(quiet);
    failed
}

/// A model CPU's interrupt line for the wake IPI: `halt` returns once an
/// IPI is pending (at once if one already is, as `sti; hlt` does), and
/// consumes it. A halted CPU yields to the other model threads; one that
/// halts with no IPI ever coming spins alone once they are done, which
/// loom reports (its branch limit) — the lost wake-up.
#[derive(Default)]
pub(crate) struct WakeLine {
    pending: AtomicBool,
}

impl WakeLine {
    /// `sti; hlt`: waits until an IPI is pending.
    pub(crate) fn halt(&self) {
        while self.pending.compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire).is_err() {
            loom::thread::yield_now();
        }
    }

    /// An interrupt window in the kernel: a pending IPI is taken (and its
    /// handler, finding nothing to do, forgets it).
    pub(crate) fn take_if_pending(&self) {
        let _ = self.pending.compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Sends the wake IPI.
    pub(crate) fn send_ipi(&self) {
        self.pending.store(true, Ordering::Release);
    }
}
