//! POSIX record locks (`fcntl` `F_SETLK`, `F_SETLKW`, `F_GETLK` and the
//! open-file-description forms `F_OFD_*`): byte ranges of one file locked
//! for reading (shared) or writing (exclusive) by an owner — a process, or
//! an open file description. An owner's own locks never conflict with each
//! other: a new lock replaces, splits or merges what it held in the range.
//! Pure bookkeeping, host-tested: the kernel keeps one table per file,
//! makes refused `F_SETLKW` callers wait, and releases a process's locks
//! when it closes any descriptor of the file or exits.

use alloc::vec::Vec;

use crate::Errno;

/// Who holds a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockOwner {
    /// A process (classic POSIX locks).
    Process(u32),
    /// An open file description (`F_OFD_SETLK`).
    Description(u64),
}

/// Shared or exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `F_RDLCK`: shared with other readers.
    Read,
    /// `F_WRLCK`: the range alone.
    Write,
}

/// One held lock: bytes `start..end` (`end` `u64::MAX`: to the end of the
/// file, however it grows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLock {
    /// Who holds it.
    pub owner: LockOwner,
    /// Shared or exclusive.
    pub kind: LockKind,
    /// The first byte.
    pub start: u64,
    /// One past the last byte (`u64::MAX`: to the end of the file).
    pub end: u64,
}

impl RecordLock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }

    fn conflicts_with(&self, owner: LockOwner, kind: LockKind, start: u64, end: u64) -> bool {
        self.owner != owner && self.overlaps(start, end) && (self.kind == LockKind::Write || kind == LockKind::Write)
    }
}

/// The byte range a `struct flock` names: `l_start` from `whence`'s base
/// (`position` for SEEK_CUR, `size` for SEEK_END), `l_len` bytes (0: to
/// the end of the file; negative: the bytes before the start). EINVAL for
/// an unknown whence or a range that starts before byte 0 or overflows.
pub fn range_of(whence: u16, start: i64, length: i64, position: u64, size: u64) -> Result<(u64, u64), Errno> {
    const SEEK_SET: u16 = 0;
    const SEEK_CUR: u16 = 1;
    const SEEK_END: u16 = 2;
    let base: i64 = match whence {
        SEEK_SET => 0,
        SEEK_CUR => i64::try_from(position).map_err(|_| Errno::EINVAL)?,
        SEEK_END => i64::try_from(size).map_err(|_| Errno::EINVAL)?,
        _ => return Err(Errno::EINVAL),
    };
    let first = base.checked_add(start).ok_or(Errno::EINVAL)?;
    let (from, to) = match length {
        0 => (first, None),
        positive if positive > 0 => (first, Some(first.checked_add(positive).ok_or(Errno::EINVAL)?)),
        negative => (first.checked_add(negative).ok_or(Errno::EINVAL)?, Some(first)),
    };
    if from < 0 {
        return Err(Errno::EINVAL);
    }
    Ok((from as u64, to.map_or(u64::MAX, |to| to as u64)))
}

/// The locks of one file.
#[derive(Debug, Default, Clone)]
pub struct FileLocks {
    locks: Vec<RecordLock>,
}

impl FileLocks {
    /// No locks.
    pub const fn new() -> Self {
        Self { locks: Vec::new() }
    }

    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The first lock of another owner that a `kind` lock of `start..end`
    /// by `owner` would conflict with (`F_GETLK`'s answer).
    pub fn conflict(&self, owner: LockOwner, kind: LockKind, start: u64, end: u64) -> Option<RecordLock> {
        self.locks.iter().copied().find(|lock| lock.conflicts_with(owner, kind, start, end))
    }

    /// The owners whose locks stand in the way (what a waiter waits for).
    pub fn blockers(&self, owner: LockOwner, kind: LockKind, start: u64, end: u64) -> Vec<LockOwner> {
        let mut owners: Vec<LockOwner> = self.locks.iter().filter(|lock| lock.conflicts_with(owner, kind, start, end)).map(|lock| lock.owner).collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// Locks `start..end` for `owner` (`Err(None)`: a conflict, the range
    /// stays as it was; `Err(Some(ENOLCK))` when memory ran out, nothing
    /// changed). The owner's own locks in the range are replaced, split
    /// around it, and joined with neighbours of the same kind.
    pub fn lock(&mut self, owner: LockOwner, kind: LockKind, start: u64, end: u64) -> Result<(), Option<Errno>> {
        if self.conflict(owner, kind, start, end).is_some() {
            return Err(None);
        }
        let mut next = self.without(owner, start, end).ok_or(Some(Errno::ENOLCK))?;
        let (mut start, mut end) = (start, end);
        // Join the owner's same-kind locks that touch the new one.
        next.retain(|lock| {
            let touches = lock.owner == owner && lock.kind == kind && lock.start <= end && start <= lock.end;
            if touches {
                start = start.min(lock.start);
                end = end.max(lock.end);
            }
            !touches
        });
        next.try_reserve(1).map_err(|_| Some(Errno::ENOLCK))?;
        next.push(RecordLock { owner, kind, start, end });
        next.sort_by_key(|lock| (lock.start, lock.end));
        self.locks = next;
        Ok(())
    }

    /// Unlocks `start..end` for `owner` (splitting a lock around it).
    /// ENOLCK when a split needs memory that is not there.
    pub fn unlock(&mut self, owner: LockOwner, start: u64, end: u64) -> Result<(), Errno> {
        self.locks = self.without(owner, start, end).ok_or(Errno::ENOLCK)?;
        Ok(())
    }

    /// Drops every lock of `owner` (a close, an exit).
    pub fn release(&mut self, owner: LockOwner) {
        self.locks.retain(|lock| lock.owner != owner);
    }

    /// The locks with `owner`'s cut out of `start..end`; `None` without memory.
    fn without(&self, owner: LockOwner, start: u64, end: u64) -> Option<Vec<RecordLock>> {
        let mut kept = Vec::new();
        kept.try_reserve(self.locks.len() + 1).ok()?;
        for lock in &self.locks {
            if lock.owner != owner || !lock.overlaps(start, end) {
                kept.push(*lock);
                continue;
            }
            if lock.start < start {
                kept.push(RecordLock { end: start, ..*lock });
            }
            if end < lock.end {
                kept.push(RecordLock { start: end, ..*lock });
            }
        }
        Some(kept)
    }
}

/// Whether `waiter` waiting for `blockers` would close a cycle: one of
/// them waits, through others, for `waiter` (EDEADLK for `F_SETLKW`).
/// `waits_for(owner)` gives whom a waiting owner waits for.
pub fn would_deadlock(waiter: LockOwner, blockers: &[LockOwner], waits_for: &dyn Fn(LockOwner) -> Vec<LockOwner>) -> bool {
    let mut seen: Vec<LockOwner> = Vec::new();
    let mut to_visit: Vec<LockOwner> = blockers.to_vec();
    while let Some(owner) = to_visit.pop() {
        if owner == waiter {
            return true;
        }
        if seen.contains(&owner) || seen.len() > 4096 {
            continue;
        }
        seen.push(owner);
        to_visit.extend(waits_for(owner));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const A: LockOwner = LockOwner::Process(1);
    const B: LockOwner = LockOwner::Process(2);

    #[test]
    fn ranges_decode_as_fcntl_says() {
        assert_eq!(range_of(0, 10, 5, 0, 0), Ok((10, 15)));
        assert_eq!(range_of(0, 10, 0, 0, 0), Ok((10, u64::MAX)), "length 0: to the end");
        assert_eq!(range_of(0, 10, -4, 0, 0), Ok((6, 10)), "a negative length covers the bytes before");
        assert_eq!(range_of(1, 2, 3, 100, 0), Ok((102, 105)));
        assert_eq!(range_of(2, -10, 10, 0, 50), Ok((40, 50)));
        assert_eq!(range_of(0, -1, 1, 0, 0), Err(Errno::EINVAL));
        assert_eq!(range_of(0, 3, -4, 0, 0), Err(Errno::EINVAL));
        assert_eq!(range_of(7, 0, 0, 0, 0), Err(Errno::EINVAL));
    }

    #[test]
    fn readers_share_and_writers_exclude() {
        let mut locks = FileLocks::new();
        assert_eq!(locks.lock(A, LockKind::Read, 0, 100), Ok(()));
        assert_eq!(locks.lock(B, LockKind::Read, 50, 150), Ok(()));
        assert_eq!(locks.lock(B, LockKind::Write, 90, 95), Err(None), "A reads there");
        assert_eq!(locks.conflict(B, LockKind::Write, 90, 95).map(|lock| lock.owner), Some(A));
        assert_eq!(locks.lock(B, LockKind::Write, 100, 150), Ok(()), "B converts its own range");
        assert_eq!(locks.conflict(A, LockKind::Read, 120, 121).map(|lock| (lock.kind, lock.start, lock.end)), Some((LockKind::Write, 100, 150)));
        assert!(locks.conflict(A, LockKind::Write, 0, 50).is_none(), "A's own locks never stand in its way");
    }

    #[test]
    fn an_owners_locks_split_and_join() {
        let mut locks = FileLocks::new();
        locks.lock(A, LockKind::Write, 0, 100).unwrap();
        locks.unlock(A, 40, 60).unwrap();
        assert_eq!(locks.locks, vec![RecordLock { owner: A, kind: LockKind::Write, start: 0, end: 40 }, RecordLock { owner: A, kind: LockKind::Write, start: 60, end: 100 }]);
        locks.lock(A, LockKind::Write, 40, 60).unwrap();
        assert_eq!(locks.locks, vec![RecordLock { owner: A, kind: LockKind::Write, start: 0, end: 100 }], "rejoined");
        locks.lock(A, LockKind::Read, 10, 20).unwrap();
        assert_eq!(locks.locks.len(), 3, "a read lock in the middle splits the write lock");
        locks.release(A);
        assert!(locks.is_empty());
    }

    #[test]
    fn a_cycle_of_waiters_is_a_deadlock() {
        let waits = |owner: LockOwner| if owner == B { vec![A] } else { vec![] };
        assert!(would_deadlock(A, &[B], &waits), "A waits for B, which waits for A");
        assert!(!would_deadlock(LockOwner::Process(3), &[B], &waits));
    }
}
