//! Blocking for kernel threads: the threads layer's park and unpark.

use alloc::sync::Arc;

use spinlock::kernel::{IrqOff, PerCpuLevels};

use crate::Blocking;

/// `sched::park` and `sched::unpark`: the only blocking primitive of the
/// kernel. Locks keep interrupts off and check the lock order per CPU.
#[derive(Debug)]
pub struct KernelBlocking;

impl Blocking for KernelBlocking {
    type Thread = Arc<sched::Thread>;
    type LockPolicy = IrqOff;
    type LockLevels = PerCpuLevels;

    fn current() -> Self::Thread {
        sched::current()
    }

    fn park() {
        sched::park();
    }

    fn unpark(thread: &Self::Thread) {
        sched::unpark(thread);
    }

    fn unpark_and_park(thread: &Self::Thread, me: &Self::Thread) {
        sched::unpark_and_park(thread, me);
    }
}
