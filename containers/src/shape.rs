//! `Shape`: the shape of the container tree — what each slot holds (a live
//! container, a tombstone, nothing), parents, live children, the pages a
//! tombstone still carries, and which ids were handed out. Plain data, only
//! reached under the tree lock; it must never touch the counters' atomics
//! (`tree_changes.rs` and `charging.rs` change both together).

use alloc::vec::Vec;

use crate::free_slots::FreeSlots;
use crate::{ContainerId, QuotaError};

/// The tree's shape.
pub(crate) struct Shape {
    slots: Vec<Slot>,
    free: FreeSlots,
}

/// One slot of the container table.
struct Slot {
    /// How many ids were handed out for this slot: the next one gets this
    /// generation. Wider than a generation so that running out shows.
    lives: u64,
    state: SlotState,
}

/// What a slot holds.
enum SlotState {
    /// Nothing: free to take (unless its generations ran out).
    Vacant,
    /// A live container.
    Live(LiveNode),
    /// A destroyed container that still has pages charged.
    Tombstone(Tombstone),
}

/// A live container's place in the tree.
#[derive(Debug)]
pub(crate) struct LiveNode {
    /// `None` for the root only.
    pub(crate) parent: Option<ContainerId>,
    /// Live children: a container with any cannot be destroyed.
    pub(crate) children: usize,
}

/// What remains of a destroyed container while pages are charged to it: its
/// parent link, to forward releases to the nearest live ancestor, and what
/// it still carries. The slot is reused once both counts are zero.
#[derive(Debug)]
pub(crate) struct Tombstone {
    /// The parent it had (alive or a tombstone itself).
    pub(crate) parent: ContainerId,
    /// Pages it had charged itself and that are not released yet.
    pub(crate) charged: u64,
    /// Pages still charged to its destroyed children.
    pub(crate) held: u64,
}

impl Tombstone {
    /// Whether nothing is charged through it any more.
    pub(crate) fn is_empty(&self) -> bool {
        self.charged == 0 && self.held == 0
    }
}

/// What an id names.
pub(crate) enum Found<'a> {
    /// A live container.
    Live(&'a mut LiveNode),
    /// A destroyed container with pages still charged.
    Tombstone(&'a mut Tombstone),
    /// A destroyed container with nothing charged any more.
    Gone,
    /// Nothing: the id was never handed out.
    Unknown,
}

impl Shape {
    /// A table of `capacity` slots (at least one) holding only the root, in
    /// slot 0. Returns the shape and the root's id.
    pub(crate) fn with_root(capacity: usize) -> Result<(Self, ContainerId), QuotaError> {
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(capacity)
            .map_err(|_| QuotaError::OutOfKernelMemory)?;
        slots.extend((0..capacity).map(|_| Slot {
            lives: 0,
            state: SlotState::Vacant,
        }));
        let mut shape = Self {
            slots,
            free: FreeSlots::all_free(capacity)?,
        };
        let root = shape.occupy(0, None);
        Ok((shape, root))
    }

    /// What `id` names.
    pub(crate) fn find(&mut self, id: ContainerId) -> Found<'_> {
        let Some(slot) = self.slots.get_mut(id.slot()) else {
            return Found::Unknown;
        };
        // The slot handed out generations 0 to `lives - 1`; only the last
        // may still be alive or a tombstone (a slot is reused only once
        // its tombstone is gone).
        let generation = u64::from(id.generation());
        match (generation + 1).cmp(&slot.lives) {
            core::cmp::Ordering::Greater => Found::Unknown,
            core::cmp::Ordering::Less => Found::Gone,
            core::cmp::Ordering::Equal => match &mut slot.state {
                SlotState::Live(node) => Found::Live(node),
                SlotState::Tombstone(tombstone) => Found::Tombstone(tombstone),
                SlotState::Vacant => Found::Gone,
            },
        }
    }

    /// The live container `id`.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] if `id` names none.
    pub(crate) fn live(&mut self, id: ContainerId) -> Result<&mut LiveNode, QuotaError> {
        match self.find(id) {
            Found::Live(node) => Ok(node),
            _ => Err(QuotaError::NoSuchContainer),
        }
    }

    /// The tombstone `id`, if it names one.
    fn tombstone(&mut self, id: ContainerId) -> Option<&mut Tombstone> {
        match self.find(id) {
            Found::Tombstone(tombstone) => Some(tombstone),
            _ => None,
        }
    }

    /// Counts a new live child of `parent`, which the caller found alive.
    pub(crate) fn child_joined(&mut self, parent: ContainerId) {
        let node = self.live(parent);
        debug_assert!(node.is_ok(), "{parent} died under the tree lock");
        if let Ok(node) = node {
            node.children += 1;
        }
    }

    /// Counts a child of `parent` destroyed; a parent of a live child is
    /// alive (it cannot be destroyed before its children).
    pub(crate) fn child_left(&mut self, parent: ContainerId) {
        let node = self.live(parent);
        debug_assert!(node.is_ok(), "{parent} died before its child");
        if let Ok(node) = node {
            node.children = node.children.saturating_sub(1);
        }
    }

    /// Takes `pages` off what the tombstone `id` charged itself and off the
    /// held pages of every tombstone above it, empties those left carrying
    /// nothing, and returns the nearest live ancestor, whose held pages the
    /// caller then shrinks. Refines the forwarding of
    /// `ContainersSpec::release`.
    ///
    /// Errors, changing nothing: [`QuotaError::OverRelease`] when the
    /// tombstone charged fewer pages; [`QuotaError::NoSuchContainer`] when
    /// `id` names no tombstone.
    pub(crate) fn forward_release(
        &mut self,
        id: ContainerId,
        pages: u64,
    ) -> Result<ContainerId, QuotaError> {
        let tombstone = self.tombstone(id).ok_or(QuotaError::NoSuchContainer)?;
        if pages > tombstone.charged {
            return Err(QuotaError::OverRelease {
                asked: pages,
                charged: tombstone.charged,
            });
        }
        tombstone.charged -= pages;
        let mut below = id;
        loop {
            // Invariant: the parent of a tombstone is alive or a tombstone
            // holding at least what this one carries.
            let Some(&mut Tombstone { parent, .. }) = self.tombstone(below) else {
                debug_assert!(false, "lost the tombstone {below}");
                return Err(QuotaError::NoSuchContainer);
            };
            self.vacate_if_empty(below);
            match self.find(parent) {
                Found::Live(_) => return Ok(parent),
                Found::Tombstone(above) => {
                    debug_assert!(
                        above.held >= pages,
                        "{parent} holds fewer pages than {below}"
                    );
                    above.held = above.held.saturating_sub(pages);
                    below = parent;
                }
                Found::Gone | Found::Unknown => {
                    debug_assert!(false, "the tombstone {below} lost its parent {parent}");
                    return Err(QuotaError::NoSuchContainer);
                }
            }
        }
    }

    /// Empties the slot of the tombstone `id` if it carries nothing.
    fn vacate_if_empty(&mut self, id: ContainerId) {
        if self
            .tombstone(id)
            .is_some_and(|tombstone| tombstone.is_empty())
        {
            self.vacate(id.slot());
        }
    }

    /// The lowest slot a new container may take.
    pub(crate) fn vacant_slot(&mut self) -> Option<usize> {
        self.free.lowest()
    }

    /// Puts a new live container with `parent` in the vacant `slot`, and
    /// returns its id.
    pub(crate) fn occupy(&mut self, slot: usize, parent: Option<ContainerId>) -> ContainerId {
        let entry = &mut self.slots[slot];
        debug_assert!(
            matches!(entry.state, SlotState::Vacant),
            "slot {slot} is not vacant"
        );
        // The slot was free, so this generation fits (`vacate`).
        let id = ContainerId::from_parts(slot as u32, entry.lives as u32);
        entry.lives += 1;
        entry.state = SlotState::Live(LiveNode {
            parent,
            children: 0,
        });
        self.free.take(slot);
        id
    }

    /// Replaces the live container `id` by `tombstone`, or empties its slot
    /// if the tombstone carries nothing.
    pub(crate) fn bury(&mut self, id: ContainerId, tombstone: Tombstone) {
        match tombstone.is_empty() {
            true => self.vacate(id.slot()),
            false => self.slots[id.slot()].state = SlotState::Tombstone(tombstone),
        }
    }

    /// Empties `slot`; it becomes free again unless its generations ran
    /// out (then it is retired: an id must never name two containers).
    pub(crate) fn vacate(&mut self, slot: usize) {
        let entry = &mut self.slots[slot];
        entry.state = SlotState::Vacant;
        if entry.lives <= u64::from(u32::MAX) {
            self.free.give_back(slot);
        }
    }
}
