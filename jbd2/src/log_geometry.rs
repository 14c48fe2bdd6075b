//! Where the circular log lives inside the journal: blocks `first..end`
//! (block 0 is the superblock), and how positions wrap.
//!
//! [`LogGeometry::wrap`] is the kernel's `wrap()` macro: one subtraction
//! of the log's length when a position reaches `end`. A position that is
//! still past the end afterwards (a corrupt count) is left there, and
//! reading it fails, as the kernel's `jread` does. **Must never** wrap
//! more than once: recovery must stop where the kernel stops.

/// The log area of a journal.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LogGeometry {
    first: u32,
    end: u32,
}

impl LogGeometry {
    /// The log of blocks `first..end` (`s_first` and `s_maxlen`), with
    /// `0 < first < end` checked by the caller.
    pub fn new(first: u32, end: u32) -> LogGeometry {
        LogGeometry { first, end }
    }

    /// The first block of the log.
    pub fn first(&self) -> u32 {
        self.first
    }

    /// One past the last block of the log.
    pub fn end(&self) -> u32 {
        self.end
    }

    /// How many blocks the log holds.
    pub fn capacity(&self) -> u32 {
        self.end - self.first
    }

    /// Whether `position` is a block of the journal that can be read.
    pub fn contains(&self, position: u64) -> bool {
        position < u64::from(self.end)
    }

    /// `position` wrapped back to the start once it reaches the end.
    pub fn wrap(&self, position: u64) -> u64 {
        if position >= u64::from(self.end) {
            position - u64::from(self.capacity())
        } else {
            position
        }
    }

    /// The position `count` blocks after `position`, wrapped once.
    pub fn advance(&self, position: u64, count: u64) -> u64 {
        self.wrap(position.saturating_add(count))
    }

    /// How many blocks lie from `from` up to (not including) `to`, going
    /// forward around the log; both are positions inside the log.
    pub fn distance(&self, from: u32, to: u32) -> u32 {
        if to >= from {
            to - from
        } else {
            self.capacity() - (from - to)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_wrap_once_like_the_kernel() {
        let geometry = LogGeometry::new(1, 1024);
        assert_eq!(geometry.capacity(), 1023);
        assert_eq!(geometry.advance(1022, 1), 1023);
        assert_eq!(geometry.advance(1023, 1), 1);
        assert_eq!(geometry.advance(1000, 100), 77);
        // A corrupt count wraps once and stays outside the journal.
        assert!(!geometry.contains(geometry.advance(1000, 5000)));
    }

    #[test]
    fn distance_goes_forward_around_the_log() {
        let geometry = LogGeometry::new(1, 1024);
        assert_eq!(geometry.distance(5, 9), 4);
        assert_eq!(geometry.distance(1020, 3), 6);
        assert_eq!(geometry.distance(7, 7), 0);
    }
}
