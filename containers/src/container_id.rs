//! `ContainerId`: how callers name a container. Plain data; it must never
//! grant anything by itself (a forged or stale id is just refused).

use core::fmt;

/// A container's name: its slot in the table plus the generation of that
/// slot it was handed out in.
///
/// A slot is reused only after its container is destroyed and all pages
/// charged to it are released, and every reuse starts a new generation, so
/// an id outlives its container harmlessly: operations on it fail with
/// [`QuotaError::NoSuchContainer`] (a release is forwarded while the dead
/// container still has pages charged; see [`Containers::release`]). A slot
/// whose generations run out is retired rather than wrapped, so an id never
/// names a later container.
///
/// [`QuotaError::NoSuchContainer`]: crate::QuotaError::NoSuchContainer
/// [`Containers::release`]: crate::Containers::release
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContainerId {
    index: u32,
    generation: u32,
}

impl ContainerId {
    /// The id with these parts, e.g. decoded from a capability. Any value is
    /// safe to pass: an id that was never handed out is refused.
    pub const fn from_parts(index: u32, generation: u32) -> Self {
        Self { index, generation }
    }

    /// The slot in the container table.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// Which use of the slot this id names (0 for the first).
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// The slot as a table position.
    pub(crate) const fn slot(self) -> usize {
        self.index as usize
    }
}

impl fmt::Display for ContainerId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "container {}.{}", self.index, self.generation)
    }
}
