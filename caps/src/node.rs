//! A capability: a node of the derivation tree (SemperOS's mapping
//! database). Links to parent, first child and both siblings make every
//! tree walk iterative and every unlink O(1).

use crate::{CapId, ObjectId, RevokeId, Rights, Slot, SpaceId, UseSite, View};

/// Whether a revocation has claimed a node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mark {
    /// Nobody revokes it: it works.
    Live,
    /// The revocation will remove it; it works for nobody already.
    Doomed(RevokeId),
    /// It is the root of a revocation of its descendants only: it works,
    /// but nothing may be derived from it until the revocation is done.
    RevokingBelow(RevokeId),
}

impl Mark {
    /// The revocation that claimed the node, if any.
    pub(crate) fn revocation(self) -> Option<RevokeId> {
        match self {
            Self::Live => None,
            Self::Doomed(revoke) | Self::RevokingBelow(revoke) => Some(revoke),
        }
    }
}

/// The links of a node in the derivation tree.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Links {
    pub(crate) parent: Option<CapId>,
    pub(crate) first_child: Option<CapId>,
    pub(crate) previous_sibling: Option<CapId>,
    pub(crate) next_sibling: Option<CapId>,
}

/// A capability.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) object: ObjectId,
    pub(crate) rights: Rights,
    pub(crate) view: View,
    pub(crate) owner: SpaceId,
    pub(crate) slot: Slot,
    pub(crate) links: Links,
    pub(crate) mark: Mark,
    /// The process allowed to obtain a copy (one-shot consent).
    pub(crate) offered_to: Option<SpaceId>,
    pub(crate) use_site: Option<UseSite>,
}
