//! The typed names of the database's records. Each wraps an arena handle,
//! so a name of a removed record is stale and never reaches a new one.

use crate::arena::Handle;

macro_rules! handle_name {
    ($(#[$attribute:meta])* $name:ident) => {
        $(#[$attribute])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(pub(crate) Handle);

        impl $name {
            /// The name as one word.
            pub const fn to_bits(self) -> u64 {
                self.0.to_bits()
            }

            /// The name whose word is `bits` (possibly stale or never issued).
            pub const fn from_bits(bits: u64) -> Self {
                Self(Handle::from_bits(bits))
            }
        }
    };
}

handle_name!(
    /// A capability (a node of the derivation tree).
    CapId
);
handle_name!(
    /// A capability space (one per process).
    SpaceId
);
handle_name!(
    /// A revocation in progress.
    RevokeId
);
handle_name!(
    /// An object's record.
    ObjectId
);

/// A slot number in a capability space (a selector; file descriptors are
/// slots).
pub type Slot = u32;

/// Where a new capability goes in its space.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Placement {
    /// The lowest free slot at or above this one (0: lowest free, as `open`).
    LowestFrom(Slot),
    /// Exactly this slot, which must be free.
    At(Slot),
}

/// How much a revoke removes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RevokeScope {
    /// The capability and everything derived from it.
    WithSelf,
    /// Only what was derived from it; the capability itself stays.
    Descendants,
}
