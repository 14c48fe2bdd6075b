//! Whose quota a reservation is charged to: the caller's container.

/// A quota account: the `containers` layer implements it for a container;
/// a reservation charges its pages here before it takes them from the
/// kernel's budget.
pub trait Account {
    /// Charges `pages`; `false` (and no change) when the quota cannot
    /// cover them.
    fn charge(&self, pages: u64) -> bool;
    /// Gives back `pages` charged earlier.
    fn release(&self, pages: u64);
}

/// An account without a limit: for the kernel's own requests, which no
/// container pays for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl Account for Unlimited {
    fn charge(&self, _pages: u64) -> bool {
        true
    }

    fn release(&self, _pages: u64) {}
}
