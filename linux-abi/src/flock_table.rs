//! `flock(2)` locks: whole-file advisory locks held by open file
//! descriptions, shared or exclusive, as Linux keeps them.
//!
//! A description holds at most one lock per file; asking again converts
//! it. As on Linux, a conversion is not atomic: the old lock goes first,
//! so a refused conversion leaves the description with no lock. Closing the
//! last descriptor of a description releases its locks. Pure bookkeeping:
//! the kernel serialises calls and makes refused blocking callers wait.

use alloc::vec::Vec;

/// The kind of lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlockKind {
    /// `LOCK_SH`: many descriptions at once.
    Shared,
    /// `LOCK_EX`: one description alone.
    Exclusive,
}

/// Why a lock was not granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlockRefused {
    /// Another description holds a conflicting lock (EWOULDBLOCK, or wait).
    Conflict,
    /// No memory for the table entry (ENOMEM).
    OutOfMemory,
}

/// Every lock, as (file, description, kind).
#[derive(Debug, Default)]
pub struct FlockTable {
    locks: Vec<(u64, usize, FlockKind)>,
}

impl FlockTable {
    /// No locks.
    pub const fn new() -> Self {
        Self { locks: Vec::new() }
    }

    /// Locks `file` for `description` with `kind`, or converts its lock.
    pub fn lock(&mut self, file: u64, description: usize, kind: FlockKind) -> Result<(), FlockRefused> {
        if self.held(file, description) == Some(kind) {
            return Ok(());
        }
        self.unlock(file, description);
        let conflict = self.locks.iter().any(|&(held_file, holder, held)| {
            held_file == file && holder != description && (kind == FlockKind::Exclusive || held == FlockKind::Exclusive)
        });
        if conflict {
            return Err(FlockRefused::Conflict);
        }
        self.locks.try_reserve(1).map_err(|_| FlockRefused::OutOfMemory)?;
        self.locks.push((file, description, kind));
        Ok(())
    }

    /// Drops `description`'s lock on `file` (none held: nothing happens).
    pub fn unlock(&mut self, file: u64, description: usize) {
        self.locks.retain(|&(held_file, holder, _)| !(held_file == file && holder == description));
    }

    /// Drops every lock of `description` (its last descriptor closed);
    /// whether it held any.
    pub fn release(&mut self, description: usize) -> bool {
        let before = self.locks.len();
        self.locks.retain(|&(_, holder, _)| holder != description);
        self.locks.len() != before
    }

    /// The lock `description` holds on `file`, if any.
    pub fn held(&self, file: u64, description: usize) -> Option<FlockKind> {
        self.locks.iter().find(|&&(held_file, holder, _)| held_file == file && holder == description).map(|entry| entry.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FlockKind::{Exclusive, Shared};

    #[test]
    fn shared_locks_coexist_and_exclude_an_exclusive_one() {
        let mut table = FlockTable::new();
        assert_eq!(table.lock(1, 10, Shared), Ok(()));
        assert_eq!(table.lock(1, 11, Shared), Ok(()));
        assert_eq!(table.lock(1, 12, Exclusive), Err(FlockRefused::Conflict));
        assert_eq!(table.lock(2, 12, Exclusive), Ok(()), "another file is free");
        table.unlock(1, 10);
        assert_eq!(table.lock(1, 12, Exclusive), Err(FlockRefused::Conflict), "11 still shares it");
        table.release(11);
        assert_eq!(table.lock(1, 12, Exclusive), Ok(()));
        assert_eq!(table.lock(1, 10, Shared), Err(FlockRefused::Conflict));
    }

    #[test]
    fn a_description_converts_its_own_lock_and_loses_it_when_refused() {
        let mut table = FlockTable::new();
        table.lock(1, 10, Shared).unwrap();
        assert_eq!(table.lock(1, 10, Exclusive), Ok(()), "alone: shared becomes exclusive");
        assert_eq!(table.held(1, 10), Some(Exclusive));
        table.lock(1, 10, Shared).unwrap();
        table.lock(1, 11, Shared).unwrap();
        assert_eq!(table.lock(1, 10, Exclusive), Err(FlockRefused::Conflict));
        assert_eq!(table.held(1, 10), None, "a refused conversion dropped the old lock first, as Linux does");
        table.unlock(1, 10);
        assert_eq!(table.held(1, 10), None);
    }
}
