//! The usage word: one container's usage, its phase and a change stamp,
//! packed into the one `u64` that charges and releases compare-and-swap.
//! Pure bit packing: it must never touch an atomic itself.
//!
//! ```text
//!  63          42 41  40 39                     0
//! +--------------+------+------------------------+
//! | stamp (22)   |phase | pages (40)             |
//! +--------------+------+------------------------+
//! ```
//!
//! - `pages`: the container's usage, pages it charged plus pages held for
//!   its children, at most [`MAX_PAGES`] (4 PiB of 4 KiB pages);
//! - `phase`: [`Phase`];
//! - `stamp`: counts phase changes (wrapping at 2^22), so that a word seen
//!   before a change never compares equal to the word after it, even if the
//!   pages came back to the same number: a compare-and-swap that read the
//!   word before a destroy, a reuse of the slot or a change of the held
//!   pages fails and retries instead of acting on stale facts. (An ABA would
//!   need 2^22 phase changes of one container between one operation's read
//!   and its swap.)

/// The most pages a quota can hold: 2^40 - 1.
pub const MAX_PAGES: u64 = (1 << PAGE_BITS) - 1;

const PAGE_BITS: u32 = 40;
const PHASE_SHIFT: u32 = PAGE_BITS;
const PHASE_MASK: u64 = 0b11;
const STAMP_SHIFT: u32 = PAGE_BITS + 2;
const STAMP_MASK: u64 = (1 << (64 - STAMP_SHIFT)) - 1;

/// Where a slot's container is in its life, as the lock-free paths see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No live container: never used, or destroyed. Charges and releases
    /// never change a dead word.
    Dead,
    /// Alive, pages held for children stable: charges and releases go.
    Live,
    /// Alive, and the tree lock's holder is changing the pages held for
    /// children (a child's quota carved or given back). Charges go (they
    /// only compare usage with the quota); releases, which compare with the
    /// held pages, wait for the lock.
    Reshaping,
}

impl Phase {
    /// Whether a container lives in the slot.
    pub(crate) fn is_alive(self) -> bool {
        self != Phase::Dead
    }

    fn bits(self) -> u64 {
        match self {
            Phase::Dead => 0,
            Phase::Live => 1,
            Phase::Reshaping => 2,
        }
    }

    fn from_bits(bits: u64) -> Self {
        match bits {
            1 => Phase::Live,
            2 => Phase::Reshaping,
            // 3 is never written.
            _ => Phase::Dead,
        }
    }
}

/// A usage word, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UsageWord {
    /// Phase changes so far, modulo 2^22.
    pub(crate) stamp: u32,
    /// See [`Phase`].
    pub(crate) phase: Phase,
    /// Usage in pages, at most [`MAX_PAGES`].
    pub(crate) pages: u64,
}

impl UsageWord {
    /// The word of a slot that never held a container (all zero bits).
    pub(crate) const UNUSED: UsageWord = UsageWord {
        stamp: 0,
        phase: Phase::Dead,
        pages: 0,
    };

    /// The word as stored.
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(
            self.pages <= MAX_PAGES,
            "usage {} above MAX_PAGES",
            self.pages
        );
        (u64::from(self.stamp) & STAMP_MASK) << STAMP_SHIFT
            | self.phase.bits() << PHASE_SHIFT
            | self.pages & MAX_PAGES
    }

    /// A stored word.
    pub(crate) fn unpack(bits: u64) -> Self {
        Self {
            stamp: (bits >> STAMP_SHIFT) as u32,
            phase: Phase::from_bits(bits >> PHASE_SHIFT & PHASE_MASK),
            pages: bits & MAX_PAGES,
        }
    }

    /// This word with usage `pages`: the same phase and stamp.
    pub(crate) fn with_pages(self, pages: u64) -> Self {
        Self { pages, ..self }
    }

    /// This word moved to `phase`, with the next stamp.
    pub(crate) fn entering(self, phase: Phase) -> Self {
        Self {
            stamp: (self.stamp.wrapping_add(1)) & STAMP_MASK as u32,
            phase,
            pages: self.pages,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_word_unpacks_to_what_was_packed() {
        let word = UsageWord {
            stamp: STAMP_MASK as u32,
            phase: Phase::Reshaping,
            pages: MAX_PAGES,
        };
        assert_eq!(UsageWord::unpack(word.pack()), word);
        assert_eq!(UsageWord::unpack(0), UsageWord::UNUSED);
    }

    #[test]
    fn the_stamp_wraps_and_a_phase_change_always_changes_the_word() {
        let last = UsageWord {
            stamp: STAMP_MASK as u32,
            phase: Phase::Live,
            pages: 7,
        };
        let next = last.entering(Phase::Live);
        assert_eq!(next.stamp, 0);
        assert_ne!(next.pack(), last.pack());
        assert_eq!(UsageWord::unpack(next.pack()), next);
    }
}
