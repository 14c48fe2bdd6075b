//! `eventfd` counters: a 64-bit count that `write` adds to and `read`
//! takes — all of it, or one at a time with `EFD_SEMAPHORE`. A read waits
//! while the count is 0; a write waits while the sum would pass
//! `u64::MAX - 1` (the arithmetic is `linux_abi::event_counter`'s,
//! host-tested). Both end early for a signal.

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};

use linux_abi::event_counter::{self, MAX_COUNT};
use linux_abi::Errno;

/// The counter lock's level (as a pipe's: above the sync layer).
const COUNTER_LEVEL: Level = Level::new(8);

/// One counter.
pub struct EventCounter {
    count: KernelTicketLock<u64>,
    changed: Condvar<KernelBlocking>,
    semaphore: bool,
}

impl EventCounter {
    /// A counter starting at `initial`; `semaphore`: reads take 1.
    pub fn new(initial: u32, semaphore: bool) -> Self {
        Self { count: KernelTicketLock::new(COUNTER_LEVEL, u64::from(initial)), changed: Condvar::new(), semaphore }
    }

    /// Takes the count (or 1 of it), waiting while it is 0.
    pub fn read(&self, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<u64, Errno> {
        let mut count = self.count.lock();
        loop {
            if let Some((taken, left)) = event_counter::take(*count, self.semaphore) {
                *count = left;
                drop(count);
                self.changed.broadcast();
                crate::poll_wakeups::changed();
                return Ok(taken);
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            count = self.changed.wait_interruptible(count, &self.count, interrupted).0;
        }
    }

    /// Adds `value` (EINVAL for `u64::MAX`), waiting while it does not fit.
    pub fn write(&self, value: u64, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<(), Errno> {
        let mut count = self.count.lock();
        loop {
            if let Some(sum) = event_counter::add(*count, value)? {
                *count = sum;
                drop(count);
                self.changed.broadcast();
                crate::poll_wakeups::changed();
                return Ok(());
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if interrupted() {
                return Err(linux_abi::restart::ERESTARTSYS);
            }
            count = self.changed.wait_interruptible(count, &self.count, interrupted).0;
        }
    }

    /// Whether a read would not wait, and whether a write of 1 would not.
    pub fn readiness(&self) -> (bool, bool) {
        let count = *self.count.lock();
        (count > 0, count < MAX_COUNT)
    }
}
