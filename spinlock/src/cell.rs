//! The lock cell: the only `unsafe` in this crate.
//!
//! [`LockCell`] pairs a raw lock with the data it protects and gives out
//! `&mut T` only through [`Held`], which exists exactly from a successful
//! acquire of `raw` to the matching release. The safety argument rests on:
//! 1. mutual exclusion of `raw`: `RawLock` is sealed, so `raw` is a
//!    `TicketLock` or an `McsLock` of this crate, whose mutual exclusion the
//!    loom tests check on this very code;
//! 2. privacy: only this module touches `raw` and `value`, so nobody else
//!    can release `raw` or reach `value` while a `Held` exists;
//! 3. the acquire/release memory orderings of the raw locks, which order
//!    one holder's accesses before the next holder's.

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::raw::RawLock;
use crate::sync::DataCell;

/// Data of type `T` behind the raw lock `L`.
pub(crate) struct LockCell<T, L> {
    raw: L,
    value: DataCell<T>,
}

// SAFETY: sharing a `LockCell` lets each thread reach the `T` only through
// `Held`, one thread at a time (points 1–3 of the module comment), which is
// the same as sending the `T` from thread to thread: so `T: Send` suffices,
// as for `std::sync::Mutex`.
unsafe impl<T: Send, L: RawLock> Sync for LockCell<T, L> {}

impl<T, L: RawLock> LockCell<T, L> {
    loom_const_fn! {
        pub(crate) fn new(raw: L, value: T) -> Self {
            Self { raw, value: DataCell::new(value) }
        }
    }

    /// Spins until this thread holds the lock.
    #[inline(always)]
    pub(crate) fn lock(&self) -> Held<'_, T, L> {
        let token = self.raw.lock();
        Held {
            cell: self,
            token,
            not_send: PhantomData,
        }
    }

    /// Takes the lock if it is free.
    #[inline(always)]
    pub(crate) fn try_lock(&self) -> Option<Held<'_, T, L>> {
        let token = self.raw.try_lock()?;
        Some(Held {
            cell: self,
            token,
            not_send: PhantomData,
        })
    }

    pub(crate) fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// The data, without locking: `&mut self` proves nobody else can lock.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        let pointer = self.value.get_mut();
        // SAFETY: `&mut self` borrows the cell exclusively, so no `Held`
        // exists (it borrows the cell) and no other reference to the value
        // can be made for the lifetime of the result.
        unsafe { &mut *pointer }
    }

    pub(crate) fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

/// Proof that this thread holds `cell.raw`; releases it when dropped.
///
/// Not `Send`: it is released on the CPU that took it (the lock's guard
/// policy and held levels are per CPU).
pub(crate) struct Held<'a, T, L: RawLock> {
    cell: &'a LockCell<T, L>,
    token: L::Token,
    not_send: PhantomData<*const ()>,
}

// SAFETY: `&Held` only gives `&T` (Deref; DerefMut needs `&mut Held`) and
// `&L::Token`, so sharing a `Held` between threads shares those, which
// `T: Sync` and `L::Token: Sync` permit.
unsafe impl<T: Sync, L: RawLock> Sync for Held<'_, T, L> where L::Token: Sync {}

impl<T, L: RawLock> Deref for Held<'_, T, L> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        let pointer = self.cell.value.get_const();
        // SAFETY: this `Held` proves that we hold the lock, so no other
        // `Held` for this cell exists (point 1) and nothing else reaches the
        // value (point 2); the previous holder's writes happened before our
        // acquire (point 3). The `&T` borrows `self`, so it ends before the
        // release in `drop`, and no `&mut T` can coexist with it.
        unsafe { &*pointer }
    }
}

impl<T, L: RawLock> DerefMut for Held<'_, T, L> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        let pointer = self.cell.value.get_mut();
        // SAFETY: as in `deref`, we are the only holder; the `&mut T`
        // borrows `self` mutably, so it is the only reference to the value
        // and ends before the release in `drop`.
        unsafe { &mut *pointer }
    }
}

impl<T, L: RawLock> Drop for Held<'_, T, L> {
    #[inline(always)]
    fn drop(&mut self) {
        self.cell.raw.unlock(self.token);
    }
}
