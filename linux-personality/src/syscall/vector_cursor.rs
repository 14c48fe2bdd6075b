//! A read position in a list of user iovecs, for calls that copy them a
//! piece at a time (`pipe_writes`, `process_memory`). Bookkeeping only:
//! it touches no memory.

/// A position in a list of `(address, length)` iovecs; empty ones are
/// skipped.
pub(super) struct VectorCursor<'a> {
    vectors: &'a [(u64, u64)],
    index: usize,
    used: u64,
}

impl<'a> VectorCursor<'a> {
    pub(super) fn new(vectors: &'a [(u64, u64)]) -> Self {
        let mut cursor = Self { vectors, index: 0, used: 0 };
        cursor.skip_empty();
        cursor
    }

    /// The next address and how much of its vector is left; None at the end.
    pub(super) fn current(&self) -> Option<(u64, u64)> {
        self.vectors.get(self.index).map(|&(base, length)| (base.wrapping_add(self.used), length - self.used))
    }

    pub(super) fn advance(&mut self, count: u64) {
        self.used += count;
        self.skip_empty();
    }

    fn skip_empty(&mut self) {
        while self.vectors.get(self.index).is_some_and(|&(_, length)| self.used >= length) {
            self.index += 1;
            self.used = 0;
        }
    }
}
