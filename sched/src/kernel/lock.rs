//! The lock type of the threads layer's queues.
//!
//! Interrupts stay off while a queue lock is held (the timer handler
//! schedules, so it must never find a queue half-changed by the code it
//! interrupted). All of this layer's locks share one level: none is ever
//! taken while another is held (debug builds check it).

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// The threads layer's place in the lock order (layer 4 of DESIGN.md).
pub(crate) const THREADS_LEVEL: Level = Level::new(4);

pub(crate) type QueueLock<T> = KernelTicketLock<T>;

/// A queue lock of this layer around `value`.
pub(crate) const fn queue_lock<T>(value: T) -> QueueLock<T> {
    QueueLock::new(THREADS_LEVEL, value)
}
