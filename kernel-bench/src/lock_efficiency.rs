//! mC2's lock-efficiency benchmark (Fig. 11) in the kernel: `n` CPUs hammer
//! one lock; efficiency = n·t1/tn, where t1 is the time one CPU needs for
//! its acquisitions alone and tn the time until all `n` CPUs have done
//! theirs. 1.0 means contention costs nothing beyond serialization.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use machine::percpu;
use sched::Pinning;
use spinlock::kernel::{KernelMcsLock, KernelTicketLock};
use spinlock::Level;

use super::records::{now, report};

/// Acquisitions per CPU. Small on purpose: with more vCPUs than host cores,
/// a FIFO lock hands over to descheduled vCPU threads and each point costs
/// seconds of wall time under TCG.
const ACQUISITIONS: u64 = 300;
const SAMPLES: usize = 3;
const LEVEL: Level = Level::new(40);

/// The two lock kinds behind one operation: lock, add one, unlock.
trait Hammer: Send + Sync + 'static {
    fn hit(&self);
}

impl Hammer for KernelTicketLock<u64> {
    fn hit(&self) {
        *self.lock() += 1;
    }
}

impl Hammer for KernelMcsLock<u64> {
    fn hit(&self) {
        *self.lock() += 1;
    }
}

/// Wall time for `cpus` CPUs each doing `ACQUISITIONS` on `lock` at once.
fn time_with(lock: Arc<dyn Hammer>, cpus: usize) -> u64 {
    let ready = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let start_flag = Arc::new(AtomicUsize::new(0));
    for cpu in 0..cpus {
        let (lock, ready, finished, start_flag) = (lock.clone(), ready.clone(), finished.clone(), start_flag.clone());
        let spawned = sched::spawn_on(cpu, Pinning::Pinned, "hammer", move || {
            ready.fetch_add(1, Ordering::AcqRel);
            // Yield (not spin) so the coordinating thread on CPU 0 can run.
            while start_flag.load(Ordering::Acquire) == 0 {
                sched::yield_now();
            }
            for _ in 0..ACQUISITIONS {
                lock.hit();
            }
            finished.fetch_add(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            return 0;
        }
    }
    while ready.load(Ordering::Acquire) != cpus {
        sched::yield_now();
    }
    let start = now();
    start_flag.store(1, Ordering::Release);
    while finished.load(Ordering::Acquire) != cpus {
        sched::yield_now();
    }
    now() - start
}

/// `locks/{ticket,mcs}_efficiency_<n>_tcg` for n = 1..=online CPUs (at most 8).
pub fn efficiency() {
    let online = percpu::online_count().min(8);
    for (kind, make) in [
        ("ticket", (|| Arc::new(KernelTicketLock::new(LEVEL, 0u64)) as Arc<dyn Hammer>) as fn() -> Arc<dyn Hammer>),
        ("mcs", || Arc::new(KernelMcsLock::new(LEVEL, 0u64)) as Arc<dyn Hammer>),
    ] {
        let mut alone: Vec<f64> = (0..SAMPLES).map(|_| time_with(make(), 1) as f64).collect();
        alone.sort_by(f64::total_cmp);
        let t1 = alone[SAMPLES / 2];
        for cpus in 1..=online {
            let mut samples: Vec<f64> = (0..SAMPLES)
                .map(|_| {
                    let tn = time_with(make(), cpus) as f64;
                    if tn > 0.0 { cpus as f64 * t1 / tn } else { 0.0 }
                })
                .collect();
            let name = alloc::format!("{kind}_efficiency_{cpus}_tcg");
            report("locks", &name, "ratio", &mut samples);
        }
    }
}
