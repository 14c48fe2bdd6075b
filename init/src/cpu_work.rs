//! Running one function on every CPU at once (until the scheduler exists).
//!
//! The bootstrap processor publishes a function and a generation number and
//! sends the wake IPI; every other CPU runs the function once per
//! generation and counts itself done. Used by the in-kernel tests and the
//! monitor's `cpus` command.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use machine::irq_lock::IrqLock;
use machine::{cpu, percpu, trap};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static WORK: IrqLock<Option<fn(usize)>> = IrqLock::new(None);
static DONE: AtomicUsize = AtomicUsize::new(0);
static WAKE_IPIS: AtomicU64 = AtomicU64::new(0);

fn count_wake(_frame: &mut machine::TrapFrame) {
    WAKE_IPIS.fetch_add(1, Ordering::Relaxed);
}

/// Installs the wake-IPI handler (bootstrap processor, at boot).
pub fn enable() {
    trap::set_handler(trap::VECTOR_WAKE, count_wake);
}

/// Wake IPIs received so far, on all CPUs.
pub fn wake_ipis_received() -> u64 {
    WAKE_IPIS.load(Ordering::Relaxed)
}

/// Runs `work(cpu_index)` on every CPU (this one included) and waits
/// until all are done. Bootstrap processor only; not reentrant.
pub fn run_everywhere(work: fn(usize)) {
    let others = percpu::online_count() - 1;
    DONE.store(0, Ordering::SeqCst);
    *WORK.lock() = Some(work);
    // SeqCst: the work and the reset counter are visible before the new generation.
    GENERATION.fetch_add(1, Ordering::SeqCst);
    for index in 1..=others {
        if let Some(target) = percpu::cpu(index) {
            machine::apic::send_ipi(target.apic_id, trap::VECTOR_WAKE);
        }
    }
    work(percpu::current_index());
    while DONE.load(Ordering::Acquire) < others {
        cpu::relax();
    }
}

/// The loop of every application processor.
pub fn serve(cpu_index: usize) -> ! {
    let mut seen = 0;
    loop {
        cpu::disable_interrupts();
        let generation = GENERATION.load(Ordering::SeqCst);
        if generation == seen {
            // Atomically re-enables interrupts and sleeps: a wake IPI sent
            // after the check above still ends the halt.
            cpu::enable_interrupts_and_halt();
            continue;
        }
        cpu::enable_interrupts();
        seen = generation;
        let work = *WORK.lock();
        if let Some(work) = work {
            work(cpu_index);
        }
        // Release: the work's effects are visible to the waiting CPU.
        DONE.fetch_add(1, Ordering::Release);
    }
}
