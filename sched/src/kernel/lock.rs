//! The lock type of the threads layer's queues.
//!
//! Interrupts stay off while a queue lock is held (the timer handler
//! schedules, so it must never find a queue half-changed by the code it
//! interrupted).
pub(crate) type QueueLock<T> = machine::irq_lock::IrqLock<T>;
