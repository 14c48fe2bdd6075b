//! A request's worst-case kernel memory, as a formula.

/// Pages a request may need at most: `fixed` plus `per_unit` for each unit
/// of its size argument (bytes, entries, pages), the units rounded up to
/// whole groups of `unit_size`.
///
/// Example: a write of `n` bytes through a page cache needs one page for
/// the request's own objects plus one page per 4096 bytes:
/// `Bound { fixed: 1, per_unit: 1, unit_size: 4096 }.pages(n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Pages needed whatever the argument.
    pub fixed: u64,
    /// Pages per group of `unit_size` units.
    pub per_unit: u64,
    /// Units per group (at least 1).
    pub unit_size: u64,
}

impl Bound {
    /// A bound that does not depend on the argument.
    pub const fn fixed(pages: u64) -> Self {
        Self { fixed: pages, per_unit: 0, unit_size: 1 }
    }

    /// The pages for an argument of `units`; `None` when that does not fit
    /// in 64 bits (the request is then refused as too large).
    pub fn pages(&self, units: u64) -> Option<u64> {
        let groups = units.div_ceil(self.unit_size.max(1));
        self.per_unit.checked_mul(groups)?.checked_add(self.fixed)
    }
}
