//! The capability layer's errors. Each names what was wrong with the
//! request; none changes anything (decode, then invoke). The syscall layer
//! maps them to errno values.

use crate::{ObjectKind, Rights};

/// Why a capability operation was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CapError {
    /// The caller's capability space does not exist (any more).
    NoSuchSpace,
    /// The slot is empty or beyond the space.
    EmptySlot,
    /// The capability is being revoked: it works for nobody any more.
    Revoked,
    /// A revocation of what was derived from the capability is under way:
    /// nothing can be derived from it (or the capability dropped) until it
    /// is done.
    InRevocation,
    /// The capability lacks these rights.
    MissingRights(Rights),
    /// The capability names an object of another kind.
    WrongKind {
        /// What the operation needs.
        expected: ObjectKind,
        /// What the capability names.
        found: ObjectKind,
    },
    /// The target process's capability space is gone or dying.
    TargetGone,
    /// The owner has not offered this capability to the caller.
    NotOffered,
    /// The destination slot is taken.
    SlotInUse,
    /// The destination slot is beyond the space's limit.
    SlotOutOfRange,
    /// Every slot of the space is taken.
    SpaceFull,
    /// A byte range outside the capability's view, or a view on a kind that
    /// has none.
    BadRange,
    /// The capability is already in use (mapped, bound) at a use site.
    InUse,
    /// The capability is not in use anywhere.
    NotInUse,
    /// The kernel heap could not grow the database.
    OutOfMemory,
}
