//! `Reservation`: the kernel memory one request reserved, and what it
//! really uses.

use crate::{Account, Bound, Budget, ReservationError};

/// Pages reserved for one request, charged to `account` and taken from
/// `budget`. Invariant: `in_use <= peak <= reserved`.
#[must_use = "a reservation is given back when dropped; hold it for the whole request"]
pub struct Reservation<'a, A: Account> {
    budget: &'a Budget,
    account: &'a A,
    reserved: u64,
    /// Pages the request uses now (drawn minus given back).
    in_use: u64,
    /// The most it ever used at once: what the bound must cover.
    peak: u64,
}

impl<'a, A: Account> Reservation<'a, A> {
    /// Reserves `bound.pages(units)` pages: first from `account` (the
    /// caller's container), then from `budget`. Fails up front, changing
    /// nothing: [`ReservationError::Quota`] or
    /// [`ReservationError::KernelMemory`] (ENOMEM at the system call), or
    /// [`ReservationError::BadCount`] if the bound overflows.
    pub fn reserve(budget: &'a Budget, account: &'a A, bound: Bound, units: u64) -> Result<Self, ReservationError> {
        let pages = bound.pages(units).ok_or(ReservationError::BadCount)?;
        if !account.charge(pages) {
            return Err(ReservationError::Quota { asked: pages });
        }
        if let Err(error) = budget.take(pages) {
            account.release(pages);
            return Err(error);
        }
        Ok(Self { budget, account, reserved: pages, in_use: 0, peak: 0 })
    }

    /// Records that the request now allocates `pages` more. Refused with
    /// [`ReservationError::Overdrawn`] (nothing drawn) beyond the
    /// reservation: the request's bound is wrong, which debug builds make
    /// loud.
    pub fn draw(&mut self, pages: u64) -> Result<(), ReservationError> {
        let wanted = self.in_use.checked_add(pages).ok_or(ReservationError::BadCount)?;
        if wanted > self.reserved {
            debug_assert!(
                cfg!(test) || cfg!(loom),
                "a request used {wanted} pages but reserved {}: fix its bound",
                self.reserved
            );
            return Err(ReservationError::Overdrawn { reserved: self.reserved, wanted });
        }
        self.in_use = wanted;
        self.peak = self.peak.max(wanted);
        Ok(())
    }

    /// Records that the request freed `pages` it drew.
    pub fn give_back(&mut self, pages: u64) -> Result<(), ReservationError> {
        self.in_use = self.in_use.checked_sub(pages).ok_or(ReservationError::BadCount)?;
        Ok(())
    }

    /// Pages reserved.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Pages in use now.
    pub fn in_use(&self) -> u64 {
        self.in_use
    }

    /// The most pages in use at once so far.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Ends the request. The pages still in use are kept (objects that
    /// outlive it): they stay charged to the account and out of the budget
    /// until freed ([`Budget::release_kept`], [`Account::release`]). The
    /// unused rest goes back. Returns the pages kept.
    pub fn finish(self) -> u64 {
        self.in_use
        // `drop` gives back the unused part.
    }
}

impl<A: Account> Drop for Reservation<'_, A> {
    /// Gives back the unused part, whether the request finished or failed:
    /// a failed request has freed what it drew on its way out, and what it
    /// could not free is kept like a finished request's objects.
    fn drop(&mut self) {
        let unused = self.reserved - self.in_use;
        self.budget.give(unused);
        self.account.release(unused);
    }
}
