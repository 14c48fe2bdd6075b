//! What every physical frame is, one word per frame: the machine layer's
//! record of who may touch a frame, which its frame handles, page-table
//! writes and user-memory copies check before they touch one (Asterinas
//! OSTD keeps the same kind of per-frame metadata).
//!
//! A frame is, at any moment, exactly one of:
//! - **Reserved**: not for the layers above (kernel image, boot tables,
//!   heap, device memory, or beyond the table): nothing above touches it;
//! - **Free**: in the frame allocator, touched by no one;
//! - **Held**: one `Frame` handle exists for it (kernel frames, DMA
//!   frames, frames being filled before they are mapped);
//! - **Loose(space)**: given to address space `space` and not yet placed in
//!   one of its tables (a table being made, a page being zeroed or copied);
//! - **Table(space, level, linked)**: a page table of `space` at `level`
//!   (3 = root … 0 = leaf table), `linked` when an entry of its parent
//!   points at it (each table has at most one parent);
//! - **Mapped(count)**: a user page named by `count` leaf entries and
//!   shared-object handles together; it goes back to the allocator only
//!   after `count` fell to zero;
//! - **Dying**: a root table being given back, while the CPUs are checked
//!   for still having it loaded.
//!
//! Pure logic over atomics (host-tested, and model-checked with loom below): every change is one compare-exchange from an
//! expected state, so two CPUs racing for a frame cannot both win. Must
//! never let a frame leave Mapped while its count is not zero, nor a table
//! leave Table while it is linked.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering};

extern crate alloc;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// Bytes of a frame.
const FRAME_BYTES: u64 = 4096;

/// The state of one frame (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameState {
    /// Not for the layers above.
    Reserved,
    /// In the frame allocator.
    Free,
    /// One handle holds it.
    Held,
    /// Given to a space, not yet in its tables.
    Loose { space: u64 },
    /// A page table of `space` at `level`.
    Table { space: u64, level: u8, linked: bool },
    /// A user page with `count` references.
    Mapped { count: u32 },
    /// A root being given back.
    Dying,
}

const TAG_BITS: u64 = 0xF;
const RESERVED: u64 = 0;
const FREE: u64 = 1;
const HELD: u64 = 2;
const LOOSE: u64 = 3;
const TABLE: u64 = 4;
const MAPPED: u64 = 5;
const DYING: u64 = 6;
/// Space identities fit in the word's upper 56 bits.
pub const MAX_SPACE: u64 = (1 << 56) - 1;

impl FrameState {
    /// The state as one word.
    pub fn encode(self) -> u64 {
        match self {
            FrameState::Reserved => RESERVED,
            FrameState::Free => FREE,
            FrameState::Held => HELD,
            FrameState::Loose { space } => LOOSE | (space & MAX_SPACE) << 8,
            FrameState::Table { space, level, linked } => TABLE | u64::from(level & 3) << 4 | u64::from(linked) << 6 | (space & MAX_SPACE) << 8,
            FrameState::Mapped { count } => MAPPED | u64::from(count) << 8,
            FrameState::Dying => DYING,
        }
    }

    /// The state a word holds (an unknown tag reads as Reserved: touched by no one).
    pub fn decode(word: u64) -> FrameState {
        match word & TAG_BITS {
            FREE => FrameState::Free,
            HELD => FrameState::Held,
            LOOSE => FrameState::Loose { space: word >> 8 },
            TABLE => FrameState::Table { space: word >> 8, level: ((word >> 4) & 3) as u8, linked: word & (1 << 6) != 0 },
            MAPPED => FrameState::Mapped { count: (word >> 8) as u32 },
            DYING => FrameState::Dying,
            _ => FrameState::Reserved,
        }
    }
}

/// The states of the frames `[first, first + count)` (by address).
pub struct FrameStates {
    first_frame: u64,
    words: Box<[AtomicU64]>,
}

impl FrameStates {
    /// A record of `frames` frames from physical address `first`, every one
    /// Reserved. `None` when the heap cannot hold it.
    pub fn new(first: u64, frames: usize) -> Option<FrameStates> {
        let mut words = Vec::new();
        words.try_reserve_exact(frames).ok()?;
        words.extend((0..frames).map(|_| AtomicU64::new(RESERVED)));
        Some(FrameStates { first_frame: first / FRAME_BYTES, words: words.into_boxed_slice() })
    }

    fn slot(&self, frame: u64) -> Option<&AtomicU64> {
        if !frame.is_multiple_of(FRAME_BYTES) {
            return None;
        }
        let index = (frame / FRAME_BYTES).checked_sub(self.first_frame)?;
        self.words.get(usize::try_from(index).ok()?)
    }

    /// The state of the frame at `frame` (Reserved outside the record).
    pub fn state(&self, frame: u64) -> FrameState {
        // SeqCst: the root hand-back protocol (`paging`) orders this load
        // against a CPU's record of the root it loads.
        self.slot(frame).map_or(FrameState::Reserved, |slot| FrameState::decode(slot.load(Ordering::SeqCst)))
    }

    /// Changes the frame's state to `change(state)` while `change` gives
    /// `Some`, retrying when another CPU changed it meanwhile. Returns the
    /// state it changed from, or the state that `change` refused.
    pub fn change(&self, frame: u64, mut change: impl FnMut(FrameState) -> Option<FrameState>) -> Result<FrameState, FrameState> {
        let Some(slot) = self.slot(frame) else { return Err(FrameState::Reserved) };
        let mut word = slot.load(Ordering::SeqCst);
        loop {
            let old = FrameState::decode(word);
            let new = change(old).ok_or(old)?;
            // SeqCst: a frame's contents written under one state are seen
            // by whoever takes it in the next (AcqRel would do for that;
            // SeqCst also serves the root hand-back protocol).
            match slot.compare_exchange(word, new.encode(), Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok(old),
                Err(now) => word = now,
            }
        }
    }

    /// Moves the frame from `from` to `to`; the state found when it was
    /// not `from`. One compare-exchange (every word stored is an
    /// encoding, so comparing encodings compares states).
    pub fn swap(&self, frame: u64, from: FrameState, to: FrameState) -> Result<(), FrameState> {
        let slot = self.slot(frame).ok_or(FrameState::Reserved)?;
        slot.compare_exchange(from.encode(), to.encode(), Ordering::SeqCst, Ordering::SeqCst).map(drop).map_err(FrameState::decode)
    }

    /// Marks every frame of `[start, end)` that is Reserved as Free (the
    /// ranges the machine hands the frame allocator). Returns how many.
    pub fn mark_free(&self, start: u64, end: u64) -> u64 {
        let mut marked = 0;
        let mut frame = start.next_multiple_of(FRAME_BYTES);
        while frame + FRAME_BYTES <= end {
            if self.swap(frame, FrameState::Reserved, FrameState::Free).is_ok() {
                marked += 1;
            }
            frame += FRAME_BYTES;
        }
        marked
    }

    /// One more reference to a user page: Loose of `space` (its first) or
    /// Mapped. The state found when neither.
    #[inline(always)]
    pub fn add_reference(&self, frame: u64, space: u64) -> Result<(), FrameState> {
        // On the encodings, not through `change`: fork and exit call this
        // for every page (the count sits in bits 8..40 of a Mapped word).
        let slot = self.slot(frame).ok_or(FrameState::Reserved)?;
        let loose = FrameState::Loose { space }.encode();
        let mut word = slot.load(Ordering::SeqCst);
        loop {
            let new = if word & TAG_BITS == MAPPED && word >> 8 < u64::from(u32::MAX) {
                word + (1 << 8)
            } else if word == loose {
                FrameState::Mapped { count: 1 }.encode()
            } else {
                return Err(FrameState::decode(word));
            };
            // SeqCst, as in `change`.
            match slot.compare_exchange(word, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok(()),
                Err(now) => word = now,
            }
        }
    }

    /// One reference fewer to a mapped page: the count left, or the state
    /// found when it had none.
    #[inline(always)]
    pub fn drop_reference(&self, frame: u64) -> Result<u32, FrameState> {
        let slot = self.slot(frame).ok_or(FrameState::Reserved)?;
        let mut word = slot.load(Ordering::SeqCst);
        loop {
            if word & TAG_BITS != MAPPED || word >> 8 == 0 {
                return Err(FrameState::decode(word));
            }
            let new = word - (1 << 8);
            // SeqCst, as in `change`.
            match slot.compare_exchange(word, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok((new >> 8) as u32),
                Err(now) => word = now,
            }
        }
    }

    /// Takes a frame back for one handle: a Loose frame of `space`, an
    /// unlinked table of `space` below the root, or a mapped page nobody
    /// names any more. The state found when it is none of these.
    pub fn reclaim(&self, frame: u64, space: u64) -> Result<(), FrameState> {
        self.change(frame, |state| match state {
            FrameState::Loose { space: owner } if owner == space => Some(FrameState::Held),
            FrameState::Table { space: owner, level, linked: false } if owner == space && level < 3 => Some(FrameState::Held),
            FrameState::Mapped { count: 0 } => Some(FrameState::Held),
            _ => None,
        })
        .map(drop)
    }
}

/// The page-table entry bits the rules below read.
pub mod entry_bits {
    /// The entry maps something.
    pub const PRESENT: u64 = 1;
    /// User mode may use what it maps.
    pub const USER: u64 = 1 << 2;
    /// A large page (never in user tables).
    pub const LARGE: u64 = 1 << 7;
    /// Survives CR3 loads in the TLB (never in user tables).
    pub const GLOBAL: u64 = 1 << 8;
    /// Free for software: a leaf that still holds its frame while not
    /// present (a page whose rights are `NONE` for now; `vmem`'s format).
    pub const HOLDS_FRAME: u64 = 1 << 11;
    /// The frame address.
    pub const ADDRESS_MASK: u64 = 0x000F_FFFF_FFFF_F000;
}

/// Why a page-table write was refused (nothing changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRefusal {
    /// The table is not a page table of this space.
    NotTheSpacesTable,
    /// The index is past the table, or in the root's kernel half.
    BadIndex,
    /// Bits user tables never carry (not user, large, global).
    BadBits,
    /// The frame it names is not one the space may place there.
    FrameNotPlaceable(FrameState),
}

/// The frame an entry names, if any.
pub fn named_frame(entry: u64) -> Option<u64> {
    (entry & (entry_bits::PRESENT | entry_bits::HOLDS_FRAME) != 0).then_some(entry & entry_bits::ADDRESS_MASK)
}

impl FrameStates {
    /// The level of `table` when it is a page table of `space`.
    pub fn table_level(&self, table: u64, space: u64) -> Option<u8> {
        match self.state(table) {
            FrameState::Table { space: owner, level, .. } if owner == space => Some(level),
            _ => None,
        }
    }

    /// Makes a loose frame of `space` its root.
    pub fn make_root(&self, frame: u64, space: u64) -> Result<(), FrameState> {
        self.swap(frame, FrameState::Loose { space }, FrameState::Table { space, level: 3, linked: false })
    }

    /// Gives the root of `space` back for one handle, unless `still_loaded`
    /// (asked after the root was marked Dying, so that a CPU loading it
    /// concurrently either sees Dying and refuses, or is seen) says a CPU
    /// has it loaded.
    pub fn reclaim_root(&self, root: u64, space: u64, still_loaded: impl FnOnce() -> bool) -> Result<(), FrameState> {
        let live = FrameState::Table { space, level: 3, linked: false };
        self.swap(root, live, FrameState::Dying)?;
        if still_loaded() {
            let _ = self.swap(root, FrameState::Dying, live);
            return Err(live);
        }
        self.swap(root, FrameState::Dying, FrameState::Held)
    }

    /// Records that entry `index` of page table `table` of `space` changes
    /// from `old` to `new`: an intermediate entry links a loose frame of
    /// the space as its child table (each table has one parent) and
    /// unlinks the one it named; a leaf entry adds a reference to the page
    /// it names and drops one from the page it named. Refused, with
    /// nothing changed, for any other write; the caller writes the entry
    /// only after this agreed. The caller holds the space exclusively, so
    /// `old` is what the entry holds.
    pub fn write_entry(&self, space: u64, table: u64, index: usize, old: u64, new: u64) -> Result<(), EntryRefusal> {
        let level = self.table_level(table, space).ok_or(EntryRefusal::NotTheSpacesTable)?;
        check_index(level, index)?;
        self.change_entry(space, level, old, new)
    }

    /// [`write_entry`](Self::write_entry) for entries `first..first +
    /// new.len()` of `table`, which hold `old` (same length): the table is
    /// looked up once, unchanged entries cost one comparison. Agrees to a
    /// prefix: how many entries, from `first`, the caller may write (all
    /// of them, or up to the first refused, whose refusal comes along).
    pub fn write_entries(&self, space: u64, table: u64, first: usize, old: &[u64], new: &[u64]) -> (usize, Option<EntryRefusal>) {
        let Some(level) = self.table_level(table, space) else { return (0, Some(EntryRefusal::NotTheSpacesTable)) };
        let count = old.len().min(new.len());
        // The entries inside the table's writable part, checked once.
        let inside = writable_entries(level).saturating_sub(first).min(count);
        for (offset, (&was, &will)) in old[..inside].iter().zip(&new[..inside]).enumerate() {
            if was != will {
                if let Err(refusal) = self.change_entry(space, level, was, will) {
                    return (offset, Some(refusal));
                }
            }
        }
        match (inside..count).find(|&offset| old[offset] != new[offset]) {
            Some(offset) => (offset, Some(EntryRefusal::BadIndex)),
            None => (count, None),
        }
    }

    /// The frame-state changes of one entry of a table at `level` going
    /// from `old` to `new` (`write_entry`'s rules past the table check).
    #[inline(always)]
    fn change_entry(&self, space: u64, level: u8, old: u64, new: u64) -> Result<(), EntryRefusal> {
        use entry_bits::{GLOBAL, LARGE, PRESENT, USER};
        if new & PRESENT != 0 && (new & USER == 0 || new & (LARGE | GLOBAL) != 0) {
            return Err(EntryRefusal::BadBits);
        }
        let (old_frame, new_frame) = (named_frame(old), named_frame(new));
        if level > 0 && new & PRESENT == 0 && new_frame.is_some() {
            return Err(EntryRefusal::BadBits);
        }
        if old_frame == new_frame {
            return Ok(());
        }
        if level > 0 {
            let child = |linked| FrameState::Table { space, level: level - 1, linked };
            if let Some(frame) = new_frame {
                self.swap(frame, FrameState::Loose { space }, child(true)).map_err(EntryRefusal::FrameNotPlaceable)?;
            }
            if let Some(frame) = old_frame {
                // A child this space linked: it cannot be anything else.
                let _ = self.swap(frame, child(true), child(false));
            }
        } else {
            if let Some(frame) = new_frame {
                self.add_reference(frame, space).map_err(EntryRefusal::FrameNotPlaceable)?;
            }
            if let Some(frame) = old_frame {
                // A page this entry referenced: its count is at least one.
                let _ = self.drop_reference(frame);
            }
        }
        Ok(())
    }
}

/// Entries past a table, and the root's kernel half, are never written.
fn check_index(level: u8, index: usize) -> Result<(), EntryRefusal> {
    if index >= writable_entries(level) {
        return Err(EntryRefusal::BadIndex);
    }
    Ok(())
}

/// Entries `0..n` of a table at `level` may be written: all 512 below the
/// root, the user half (256) of the root.
fn writable_entries(level: u8) -> usize {
    if level == 3 { 256 } else { 512 }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const BASE: u64 = 0x10_0000;

    fn states() -> FrameStates {
        let states = FrameStates::new(BASE, 8).unwrap();
        assert_eq!(states.mark_free(BASE, BASE + 8 * FRAME_BYTES), 8);
        states
    }

    #[test]
    fn every_state_survives_its_encoding() {
        let all = [
            FrameState::Reserved,
            FrameState::Free,
            FrameState::Held,
            FrameState::Loose { space: MAX_SPACE },
            FrameState::Table { space: 7, level: 3, linked: false },
            FrameState::Table { space: 1, level: 0, linked: true },
            FrameState::Mapped { count: u32::MAX },
            FrameState::Dying,
        ];
        for state in all {
            assert_eq!(FrameState::decode(state.encode()), state);
        }
    }

    #[test]
    fn frames_outside_the_record_or_misaligned_are_reserved_and_unchangeable() {
        let states = states();
        assert_eq!(states.state(BASE - FRAME_BYTES), FrameState::Reserved);
        assert_eq!(states.state(BASE + 8 * FRAME_BYTES), FrameState::Reserved);
        assert_eq!(states.swap(BASE + 1, FrameState::Free, FrameState::Held), Err(FrameState::Reserved));
        assert_eq!(states.mark_free(BASE - FRAME_BYTES, BASE + 1), 0, "already free, or outside");
    }

    #[test]
    fn a_frame_is_claimed_once() {
        let states = states();
        assert_eq!(states.swap(BASE, FrameState::Free, FrameState::Held), Ok(()));
        assert_eq!(states.swap(BASE, FrameState::Free, FrameState::Held), Err(FrameState::Held));
    }

    #[test]
    fn a_mapped_page_is_reclaimed_only_after_its_last_reference() {
        let states = states();
        let frame = BASE + FRAME_BYTES;
        states.swap(frame, FrameState::Free, FrameState::Loose { space: 4 }).unwrap();
        assert_eq!(states.add_reference(frame, 5), Err(FrameState::Loose { space: 4 }), "another space's loose frame");
        states.add_reference(frame, 4).unwrap();
        states.add_reference(frame, 9).unwrap();
        assert_eq!(states.state(frame), FrameState::Mapped { count: 2 });
        assert_eq!(states.reclaim(frame, 4), Err(FrameState::Mapped { count: 2 }));
        assert_eq!(states.drop_reference(frame), Ok(1));
        assert_eq!(states.drop_reference(frame), Ok(0));
        assert_eq!(states.drop_reference(frame), Err(FrameState::Mapped { count: 0 }));
        assert_eq!(states.reclaim(frame, 1), Ok(()));
        assert_eq!(states.state(frame), FrameState::Held);
    }

    #[test]
    fn tables_are_reclaimed_unlinked_by_their_own_space_and_roots_never_this_way() {
        let states = states();
        let table = BASE + 2 * FRAME_BYTES;
        states.swap(table, FrameState::Free, FrameState::Table { space: 3, level: 1, linked: true }).unwrap();
        assert!(states.reclaim(table, 3).is_err(), "linked");
        states.swap(table, FrameState::Table { space: 3, level: 1, linked: true }, FrameState::Table { space: 3, level: 1, linked: false }).unwrap();
        assert!(states.reclaim(table, 2).is_err(), "another space");
        assert_eq!(states.reclaim(table, 3), Ok(()));
        let root = BASE + 3 * FRAME_BYTES;
        states.swap(root, FrameState::Free, FrameState::Table { space: 3, level: 3, linked: false }).unwrap();
        assert!(states.reclaim(root, 3).is_err(), "roots go through the CPU check");
    }
    #[test]
    fn tables_link_only_loose_frames_of_their_space_and_leaves_count_references() {
        use entry_bits::{PRESENT, USER};
        let states = states();
        let [root, middle, page, other] = [0, 1, 2, 3].map(|index| BASE + index * FRAME_BYTES);
        for frame in [root, middle, page] {
            states.swap(frame, FrameState::Free, FrameState::Loose { space: 1 }).unwrap();
        }
        states.swap(other, FrameState::Free, FrameState::Loose { space: 2 }).unwrap();
        states.make_root(root, 1).unwrap();
        let table_entry = |frame: u64| frame | PRESENT | USER;
        assert_eq!(states.write_entry(1, root, 256, 0, table_entry(middle)), Err(EntryRefusal::BadIndex), "the kernel half");
        assert_eq!(states.write_entry(2, root, 0, 0, table_entry(middle)), Err(EntryRefusal::NotTheSpacesTable));
        assert_eq!(states.write_entry(1, root, 0, 0, middle | PRESENT), Err(EntryRefusal::BadBits), "not a user entry");
        assert_eq!(
            states.write_entry(1, root, 0, 0, table_entry(other)),
            Err(EntryRefusal::FrameNotPlaceable(FrameState::Loose { space: 2 })),
            "another space's frame"
        );
        states.write_entry(1, root, 0, 0, table_entry(middle)).unwrap();
        assert_eq!(states.state(middle), FrameState::Table { space: 1, level: 2, linked: true });
        assert!(states.write_entry(1, root, 1, 0, table_entry(middle)).is_err(), "a table has one parent");
        assert!(states.write_entry(1, middle, 0, 0, table_entry(root)).is_err(), "a root is never a child");
        // Pretend `middle` is a leaf table to place a page under it.
        states.swap(middle, FrameState::Table { space: 1, level: 2, linked: true }, FrameState::Table { space: 1, level: 0, linked: true }).unwrap();
        states.write_entry(1, middle, 5, 0, page | PRESENT | USER).unwrap();
        assert_eq!(states.state(page), FrameState::Mapped { count: 1 });
        assert_eq!(states.write_entry(1, middle, 5, page | PRESENT | USER, page | USER | entry_bits::HOLDS_FRAME), Ok(()), "rights only");
        assert_eq!(states.state(page), FrameState::Mapped { count: 1 });
        states.write_entry(1, middle, 5, page | USER | entry_bits::HOLDS_FRAME, 0).unwrap();
        assert_eq!(states.state(page), FrameState::Mapped { count: 0 });
        states.swap(middle, FrameState::Table { space: 1, level: 0, linked: true }, FrameState::Table { space: 1, level: 2, linked: true }).unwrap();
        states.write_entry(1, root, 0, table_entry(middle), 0).unwrap();
        assert_eq!(states.reclaim(middle, 1), Ok(()));
        assert_eq!(states.reclaim_root(root, 1, || true), Err(FrameState::Table { space: 1, level: 3, linked: false }), "still loaded");
        assert_eq!(states.reclaim_root(root, 1, || false), Ok(()));
    }

    #[test]
    fn a_batch_of_entries_agrees_up_to_its_first_refusal_and_counts_every_reference() {
        use entry_bits::{PRESENT, USER};
        let states = states();
        let [leaf, page, other_page, foreign] = [0, 1, 2, 3].map(|index| BASE + index * FRAME_BYTES);
        states.swap(leaf, FrameState::Free, FrameState::Table { space: 1, level: 0, linked: true }).unwrap();
        states.swap(page, FrameState::Free, FrameState::Loose { space: 1 }).unwrap();
        states.swap(other_page, FrameState::Free, FrameState::Mapped { count: 1 }).unwrap();
        states.swap(foreign, FrameState::Free, FrameState::Loose { space: 2 }).unwrap();
        let map = |frame: u64| frame | PRESENT | USER;
        let old = [0, 0, map(other_page), 0];
        let new = [map(page), map(other_page), map(other_page), map(foreign)];
        assert_eq!(
            states.write_entries(1, leaf, 10, &old, &new),
            (3, Some(EntryRefusal::FrameNotPlaceable(FrameState::Loose { space: 2 }))),
            "another space's frame stops the batch"
        );
        assert_eq!(states.state(page), FrameState::Mapped { count: 1 });
        assert_eq!(states.state(other_page), FrameState::Mapped { count: 2 }, "the unchanged entry adds nothing");
        assert_eq!(states.write_entries(1, leaf, 10, &new[..3], &[0; 3]), (3, None));
        assert_eq!(states.state(page), FrameState::Mapped { count: 0 });
        assert_eq!(states.state(other_page), FrameState::Mapped { count: 0 });
        assert_eq!(states.write_entries(2, leaf, 0, &[0], &[map(foreign)]), (0, Some(EntryRefusal::NotTheSpacesTable)));
        assert_eq!(states.write_entries(1, leaf, 511, &[0, 0], &[0, map(page)]), (1, Some(EntryRefusal::BadIndex)), "past the table");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two CPUs each drop one of a page's two references while a third
    /// tries to reclaim it: the reclaim succeeds only after both drops,
    /// and never leaves a reference behind.
    #[test]
    fn a_page_is_reclaimed_exactly_after_its_last_reference() {
        loom::model(|| {
            let states = Arc::new(FrameStates::new(0, 1).unwrap());
            states.mark_free(0, FRAME_BYTES);
            states.swap(0, FrameState::Free, FrameState::Mapped { count: 2 }).unwrap();
            let droppers: Vec<_> = (0..2)
                .map(|_| {
                    let states = states.clone();
                    loom::thread::spawn(move || states.drop_reference(0).unwrap())
                })
                .collect();
            let reclaimed = states.reclaim(0, 1).is_ok();
            let left: Vec<u32> = droppers.into_iter().map(|dropper| dropper.join().unwrap()).collect();
            assert!(left.contains(&0), "one dropper saw the last reference go");
            if reclaimed {
                assert_eq!(states.state(0), FrameState::Held);
            } else {
                assert_eq!(states.state(0), FrameState::Mapped { count: 0 });
            }
        });
    }

    /// Two CPUs race to claim one free frame: exactly one wins.
    #[test]
    fn a_free_frame_has_one_claimant() {
        loom::model(|| {
            let states = Arc::new(FrameStates::new(0, 1).unwrap());
            states.mark_free(0, FRAME_BYTES);
            let other = {
                let states = states.clone();
                loom::thread::spawn(move || states.swap(0, FrameState::Free, FrameState::Held).is_ok())
            };
            let mine = states.swap(0, FrameState::Free, FrameState::Held).is_ok();
            assert!(mine ^ other.join().unwrap());
        });
    }
}
