//! The machine layer's own lock: a ticket lock that keeps interrupts off
//! while held.
//!
//! The machine layer sits below the spinlock layer, so it cannot use it; its
//! few shared objects (console, heap, boot allocator) use this. It is the
//! lowest level of the lock order: code holding it calls nothing above the
//! machine layer. Never held across a blocking operation.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU32, Ordering};

use super::cpu;

/// A ticket lock with interrupts disabled while held.
pub struct IrqLock<T> {
    next_ticket: AtomicU32,
    now_serving: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the ticket protocol gives at most one holder at a time access to
// `value`, so sharing the lock between CPUs is sound when `T` may move between them.
unsafe impl<T: Send> Sync for IrqLock<T> {}
// SAFETY: moving the lock moves `value`; sound when `T: Send`.
unsafe impl<T: Send> Send for IrqLock<T> {}

/// Proof of holding an [`IrqLock`]; releases it and restores interrupts on drop.
pub struct IrqLockGuard<'a, T> {
    lock: &'a IrqLock<T>,
    /// Dropped after `Drop::drop` released the lock: interrupts come back
    /// on only once the lock is free.
    _interrupts: cpu::InterruptsOff,
}

impl<T> IrqLock<T> {
    pub const fn new(value: T) -> Self {
        Self { next_ticket: AtomicU32::new(0), now_serving: AtomicU32::new(0), value: UnsafeCell::new(value) }
    }

    pub fn lock(&self) -> IrqLockGuard<'_, T> {
        let interrupts = cpu::InterruptsOff::new();
        // Relaxed: taking a ticket orders nothing; the Acquire load below does.
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        // Acquire: see everything the previous holder wrote before its Release.
        while self.now_serving.load(Ordering::Acquire) != ticket {
            cpu::relax();
        }
        IrqLockGuard { lock: self, _interrupts: interrupts }
    }

    /// Takes the lock only if it is free right now (used by the panic path,
    /// which must not wait for a CPU that may never release).
    pub fn try_lock(&self) -> Option<IrqLockGuard<'_, T>> {
        let interrupts = cpu::InterruptsOff::new();
        let serving = self.now_serving.load(Ordering::Acquire);
        // Acquire on success: as in `lock`.
        let taken = self
            .next_ticket
            .compare_exchange(serving, serving.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        // Not taken: `interrupts` drops here and restores what was.
        if taken {
            Some(IrqLockGuard { lock: self, _interrupts: interrupts })
        } else {
            None
        }
    }
}

impl<T> Deref for IrqLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this CPU holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for IrqLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while this CPU holds the lock, and
        // `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for IrqLockGuard<'_, T> {
    fn drop(&mut self) {
        // Release: publish the critical section's writes to the next holder.
        self.lock.now_serving.fetch_add(1, Ordering::Release);
    }
}
