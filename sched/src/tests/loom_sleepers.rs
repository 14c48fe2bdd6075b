//! Loom: timed sleepers and the timer tick, with the kernel's
//! `CpuSleepers`. Two CPUs each have a sleeper that is due and take their
//! tick at the same time:
//!
//! - every due sleeper is woken exactly once;
//! - with one list per CPU (the kernel's layout), no tick ever waits for
//!   the other CPU — the property whose absence stalled the 8-CPU tests
//!   (one list for all CPUs: each tick queued behind every other CPU's);
//! - a negative control shows loom finds the waiting tick when both CPUs
//!   share one list, as they did before.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use spinlock::{Level, NoGuard, Untracked};

use super::loom_support::{check, finds_a_failure, Preemptions};
use crate::sleep_list::{CpuSleepers, Tick};

type Sleepers = CpuSleepers<usize, NoGuard, Untracked>;

/// Which list CPU `cpu` uses.
#[derive(Clone, Copy)]
enum Layout {
    /// Its own (the kernel's `SLEEPERS[cpu]`).
    PerCpu,
    /// One for every CPU (the old global list).
    Shared,
}

impl Layout {
    fn list(self, cpu: usize) -> usize {
        match self {
            Layout::PerCpu => cpu,
            Layout::Shared => 0,
        }
    }
}

/// Each CPU registers a sleeper due at time 5, then ticks at time 10.
fn two_cpus_tick_at_once(layout: Layout) {
    let lists: Arc<Vec<Sleepers>> = Arc::new(vec![Sleepers::new(Level::new(4)), Sleepers::new(Level::new(4))]);
    let woken: Arc<Vec<AtomicUsize>> = Arc::new(vec![AtomicUsize::new(0), AtomicUsize::new(0)]);
    let cpu = move |me: usize, lists: Arc<Vec<Sleepers>>, woken: Arc<Vec<AtomicUsize>>| {
        let list = &lists[layout.list(me)];
        list.change(|sleepers| sleepers.add(5, me)).unwrap();
        let tick = list.tick(10, |sleeper| {
            woken[sleeper].fetch_add(1, Ordering::Relaxed);
        });
        assert_ne!(tick, Tick::WokeAfterWaiting, "CPU {me}'s tick waited for another CPU");
    };
    let other = {
        let (lists, woken) = (lists.clone(), woken.clone());
        thread::spawn(move || cpu(1, lists, woken))
    };
    cpu(0, lists, woken.clone());
    other.join().unwrap();
    for sleeper in 0..2 {
        assert_eq!(woken[sleeper].load(Ordering::Relaxed), 1, "sleeper {sleeper} woken a wrong number of times");
    }
}

#[test]
fn each_due_sleeper_is_woken_once_and_no_tick_waits_for_another_cpu() {
    check("per-CPU sleeper lists", Preemptions::Unbounded, || two_cpus_tick_at_once(Layout::PerCpu));
}

#[test]
fn the_model_finds_the_tick_convoy_of_one_shared_list() {
    assert!(finds_a_failure(Preemptions::Unbounded, || two_cpus_tick_at_once(Layout::Shared)));
}
