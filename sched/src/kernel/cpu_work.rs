//! Running one function on every CPU at once, as one pinned kernel thread
//! per CPU, and waiting for all of them.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

use machine::percpu;
use super::scheduler::{self as sched, Pinning};

/// Runs `work(cpu_index)` on every online CPU and returns when all are done.
/// Returns the number of CPUs that ran it.
pub fn run_everywhere(work: fn(usize)) -> usize {
    let online = percpu::online_count();
    let remaining = Arc::new(AtomicUsize::new(online));
    let waiter = sched::current();
    let mut started = 0;
    for cpu in 0..online {
        let (counter, waiter) = (remaining.clone(), waiter.clone());
        let spawned = sched::spawn_on(cpu, Pinning::Pinned, "cpu-work", move || {
            work(cpu);
            // AcqRel: the last finisher sees every other CPU's work done.
            if counter.fetch_sub(1, Ordering::AcqRel) == 1 {
                sched::unpark(&waiter);
            }
        });
        match spawned {
            Ok(_) => started += 1,
            Err(error) => {
                machine::println!("lamina: cannot start work on CPU {cpu}: {error:?}");
                remaining.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
    while remaining.load(Ordering::Acquire) != 0 {
        sched::park();
    }
    started
}
