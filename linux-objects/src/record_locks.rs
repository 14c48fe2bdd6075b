//! The running kernel's POSIX record locks: one [`FileLocks`] per file
//! with locks, under one lock, and the owners waiting in `F_SETLKW` (for
//! the deadlock check). A refused `F_SETLKW` waits on the table's
//! condition variable; every unlock and release wakes the waiters, which
//! look again. Locks of a process go when it closes any descriptor of the
//! file or exits; locks of a description (`F_OFD_*`) when it is released.
//!
//! Must never wait while holding anything but the table's lock (the
//! condition variable lets it go).

use alloc::vec::Vec;

use linux_abi::record_locks::{would_deadlock, FileLocks, LockKind, LockOwner, RecordLock};
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking};
use vfs::InodeId;

/// Taken alone (above the sync layer's condition variable).
const LOCKS_LEVEL: Level = Level::new(6);

struct Table {
    files: Vec<(InodeId, FileLocks)>,
    /// Owners waiting in `F_SETLKW`, with whom they wait for.
    waiting: Vec<(LockOwner, Vec<LockOwner>)>,
}

static TABLE: KernelTicketLock<Table> = KernelTicketLock::new(LOCKS_LEVEL, Table { files: Vec::new(), waiting: Vec::new() });
static CHANGED: Condvar<KernelBlocking> = Condvar::new();

/// What a `kind` lock of `start..end` of `inode` by `owner` would run
/// into (`F_GETLK`).
pub fn conflict(inode: InodeId, owner: LockOwner, kind: LockKind, start: u64, end: u64) -> Option<RecordLock> {
    let table = TABLE.lock();
    table.files.iter().find(|(id, _)| *id == inode).and_then(|(_, locks)| locks.conflict(owner, kind, start, end))
}

/// Locks `start..end` of `inode` for `owner`: EAGAIN on a conflict unless
/// `wait`, which waits for the range (EDEADLK when that would close a cycle
/// of waiters, ERESTARTSYS when `interrupted`); ENOLCK without memory.
pub fn lock(inode: InodeId, owner: LockOwner, kind: LockKind, start: u64, end: u64, wait: bool, interrupted: &dyn Fn() -> bool) -> Result<(), Errno> {
    let mut table = TABLE.lock();
    loop {
        let position = match table.files.iter().position(|(id, _)| *id == inode) {
            Some(position) => position,
            None => {
                table.files.try_reserve(1).map_err(|_| Errno::ENOLCK)?;
                table.files.push((inode, FileLocks::new()));
                table.files.len() - 1
            }
        };
        let refused = match table.files[position].1.lock(owner, kind, start, end) {
            Ok(()) => None,
            Err(Some(errno)) => Some(errno),
            Err(None) => {
                if !wait {
                    Some(Errno::EAGAIN)
                } else {
                    let blockers = table.files[position].1.blockers(owner, kind, start, end);
                    let waits_for = |other: LockOwner| table.waiting.iter().find(|(waiter, _)| *waiter == other).map(|(_, on)| on.clone()).unwrap_or_default();
                    if would_deadlock(owner, &blockers, &waits_for) {
                        Some(Errno::EDEADLK)
                    } else if interrupted() {
                        Some(linux_abi::restart::ERESTARTSYS)
                    } else if table.waiting.try_reserve(1).is_err() {
                        Some(Errno::ENOLCK)
                    } else {
                        table.waiting.push((owner, blockers));
                        table = CHANGED.wait_interruptible(table, &TABLE, interrupted).0;
                        table.waiting.retain(|(waiter, _)| *waiter != owner);
                        continue;
                    }
                }
            }
        };
        if table.files[position].1.is_empty() {
            table.files.swap_remove(position);
        }
        return refused.map_or(Ok(()), Err);
    }
}

/// Unlocks `start..end` of `inode` for `owner`.
pub fn unlock(inode: InodeId, owner: LockOwner, start: u64, end: u64) -> Result<(), Errno> {
    let result = change(|table| match table.files.iter_mut().find(|(id, _)| *id == inode) {
        Some((_, locks)) => locks.unlock(owner, start, end),
        None => Ok(()),
    });
    result
}

/// A process closed a descriptor of `inode`: its locks on the file go.
pub fn closed(inode: InodeId, pid: u32) {
    change(|table| {
        if let Some((_, locks)) = table.files.iter_mut().find(|(id, _)| *id == inode) {
            locks.release(LockOwner::Process(pid));
        }
    });
}

/// Every lock of `owner` goes (a process exits, a description is released).
pub fn release(owner: LockOwner) {
    change(|table| {
        for (_, locks) in &mut table.files {
            locks.release(owner);
        }
    });
}

/// Runs `operation` on the table, drops emptied files, wakes waiters.
fn change<R>(operation: impl FnOnce(&mut Table) -> R) -> R {
    let result = {
        let mut table = TABLE.lock();
        let result = operation(&mut table);
        table.files.retain(|(_, locks)| !locks.is_empty());
        result
    };
    CHANGED.broadcast();
    result
}
