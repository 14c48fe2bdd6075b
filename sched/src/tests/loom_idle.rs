//! Loom: the idle hand-off. A CPU about to halt and a CPU queuing a thread
//! on it use `IdleFlag` and the queue lock as the kernel's idle loop and
//! `make_ready` do: in no interleaving does the idle CPU halt with the
//! thread queued and no IPI coming (loom would report the deadlock).

use loom::sync::Arc;
use loom::thread;

use spinlock::{Level, NoGuard, SpinLock, TicketLock, Untracked};

use super::loom_support::{check, finds_a_failure, Preemptions, WakeLine};
use crate::idle_flag::IdleFlag;
use crate::queues::{route_wakeup, CpuQueues, WakeDelivery};

type QueueLock<T> = SpinLock<T, TicketLock, NoGuard, Untracked>;

/// One model CPU's scheduler state (the kernel's `CpuScheduler`, minus
/// what these models do not touch).
pub(crate) struct ModelCpu {
    pub(crate) queues: QueueLock<CpuQueues<usize>>,
    pub(crate) idle: IdleFlag,
    pub(crate) line: WakeLine,
}

impl ModelCpu {
    pub(crate) fn new() -> Self {
        Self { queues: SpinLock::new(Level::new(4), CpuQueues::new()), idle: IdleFlag::new(), line: WakeLine::default() }
    }

    /// The idle loop until it has a thread to run: announce, look, halt
    /// while empty (the kernel's `idle_loop`).
    pub(crate) fn idle_until_work(&self) -> usize {
        loop {
            self.idle.announce();
            let empty = self.queues.lock().is_empty();
            if empty {
                self.line.halt();
                self.idle.withdraw();
                continue;
            }
            self.idle.withdraw();
            if let Some(next) = self.next() {
                return next;
            }
        }
    }

    /// `schedule`'s pick: absorb the PendQ, take the oldest.
    pub(crate) fn next(&self) -> Option<usize> {
        let mut queues = self.queues.lock();
        queues.absorb_pending();
        queues.pop_ready()
    }
}

/// Whether the waker looks at the flag after its push (the kernel's order)
/// or before it (the classic lost wake-up).
#[derive(Clone, Copy)]
pub(crate) enum FlagCheck {
    AfterPush,
    BeforePush,
}

/// `make_ready` of `thread` from CPU `from` to its home `cpus[home]`.
pub(crate) fn make_ready(cpus: &[ModelCpu], from: usize, home: usize, thread: usize, order: FlagCheck) {
    match route_wakeup(from, home) {
        WakeDelivery::Local => cpus[from].queues.lock().push_ready(thread),
        WakeDelivery::Remote { cpu } => {
            let early = matches!(order, FlagCheck::BeforePush) && cpus[cpu].idle.must_notify();
            cpus[cpu].queues.lock().push_pending(thread);
            let notify = match order {
                FlagCheck::AfterPush => cpus[cpu].idle.must_notify(),
                FlagCheck::BeforePush => early,
            };
            if notify {
                cpus[cpu].line.send_ipi();
            }
        }
    }
}

/// CPU 0 goes idle while CPU 1 queues thread 7 on it; CPU 0 must run it.
fn idle_cpu_gets_the_thread(order: FlagCheck) {
    let cpus: Arc<Vec<ModelCpu>> = Arc::new(vec![ModelCpu::new(), ModelCpu::new()]);
    let waker = {
        let cpus = cpus.clone();
        thread::spawn(move || {
            make_ready(&cpus, 1, 0, 7, order);
        })
    };
    assert_eq!(cpus[0].idle_until_work(), 7);
    waker.join().unwrap();
}

#[test]
fn an_idle_cpu_never_sleeps_through_a_thread_queued_on_it() {
    check("idle hand-off", Preemptions::AtMost(3), || idle_cpu_gets_the_thread(FlagCheck::AfterPush));
}

#[test]
fn the_model_catches_a_waker_that_looks_at_the_flag_before_its_push() {
    assert!(finds_a_failure(Preemptions::AtMost(3), || idle_cpu_gets_the_thread(FlagCheck::BeforePush)));
}

