//! The futex table of the running kernel: one [`FutexQueue`] of parked
//! threads under a lock, the keys that name a word (its address space and
//! address, or its place in shared memory so that processes sharing a page
//! meet), waits, wakes, requeues, PI locks, and the robust-list walk of a
//! thread that ends.
//!
//! The system call itself (decoding, time limits) is `syscall::futex` in
//! `linux-personality`; this module may not block while holding the table's lock, and reads
//! and changes user words only through the process's checked user memory
//! (EFAULT, never a kernel fault).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicUsize, Ordering};

use linux_abi::futex::{owner_died, FutexKey, FutexQueue, MATCH_ANY, OWNER_DIED, ROBUST_LIST_LIMIT, TID_MASK, WAITERS};
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use crate::clock::Limit;
use crate::process::{Pid, Process};

/// Every thread waiting in `futex`.
static WAITING: KernelTicketLock<FutexQueue<Arc<sched::Thread>>> = KernelTicketLock::new(Level::new(5), FutexQueue::new());

/// How many threads `WAITING` holds, stored under its lock after every
/// change: a wake that reads 0 returns without taking the lock (most wakes
/// find nobody, and every CPU taking one global lock stalled them all when
/// the host ran fewer cores than vCPUs). Safe by a Dekker pair, loom model
/// `linux-abi/src/futex_loom.rs`: a waiter publishes its join and fences
/// before it reads the word; a waker fences between its change of the word
/// (made before the call) and its read of this count.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// Runs `change` on the table under its lock and publishes its size.
fn with_table<R>(change: impl FnOnce(&mut FutexQueue<Arc<sched::Thread>>) -> R) -> R {
    let mut table = WAITING.lock();
    let result = change(&mut table);
    // SeqCst: one side of the Dekker pair (see `QUEUED`).
    QUEUED.store(table.queued(), Ordering::SeqCst);
    result
}

/// The key of the word at `address` of `process`: shared memory is named by
/// its place in that memory unless the caller says the word is private.
pub fn key_for(process: &Process, address: u64, private: bool) -> Result<FutexKey, Errno> {
    if address % 4 != 0 {
        return Err(Errno::EINVAL);
    }
    let private_key = FutexKey::Private { space: process.native.space().to_bits(), address };
    if private {
        return Ok(private_key);
    }
    Ok(match process.native.user_memory().shared_location(address)? {
        Some(location) => FutexKey::Shared { location },
        None => private_key,
    })
}

/// How a wait ended.
pub enum WaitEnd {
    /// A wake (or requeue and wake) took this thread.
    Woken,
    /// The time limit passed.
    TimedOut,
    /// `interrupted` held first (a signal to deliver, the process ending).
    Interrupted,
}

/// Waits on `key` until woken, `limit` passes or `interrupted`,
/// provided `still_expected()` holds once this thread is queued (it reads
/// the user word: EAGAIN when the value moved on, its error when unreadable).
pub fn wait(
    key: FutexKey,
    bitset: u32,
    limit: Limit,
    still_expected: impl FnOnce() -> Result<bool, Errno>,
    interrupted: impl Fn() -> bool,
) -> Result<WaitEnd, Errno> {
    let me = sched::current();
    // Join before reading the word: a waker that changes it afterwards
    // finds this thread queued; one that changed it before is seen in the
    // value. No wake-up is lost in between (the loom model in linux-abi).
    with_table(|table| table.join(key, bitset, me.clone()))?;
    // The join is published before the word is read (see `QUEUED`).
    fence(Ordering::SeqCst);
    let is_me = |thread: &Arc<sched::Thread>| Arc::ptr_eq(thread, &me);
    match still_expected() {
        Ok(true) => {}
        Ok(false) => {
            with_table(|table| table.leave(is_me));
            return Err(Errno::EAGAIN);
        }
        Err(errno) => {
            with_table(|table| table.leave(is_me));
            return Err(errno);
        }
    }
    let woken = crate::clock::sleep_until(limit, || !WAITING.lock().is_waiting(is_me) || interrupted());
    let was_waiting = with_table(|table| table.leave(is_me));
    Ok(match woken {
        _ if !was_waiting => WaitEnd::Woken,
        sched::Woken::Deadline => WaitEnd::TimedOut,
        sched::Woken::Done => WaitEnd::Interrupted,
    })
}

/// Wakes up to `limit` waiters on `key` whose bitset meets `bitset`; how
/// many woke.
pub fn wake(key: FutexKey, limit: usize, bitset: u32) -> Result<usize, Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    // The caller changed the word before it called; the fence orders that
    // store before this read (see `QUEUED`).
    fence(Ordering::SeqCst);
    if QUEUED.load(Ordering::SeqCst) == 0 {
        return Ok(0);
    }
    let woken = with_table(|table| table.wake(key, limit, bitset))?;
    Ok(unpark_all(woken))
}

/// Wakes up to `wake_limit` waiters on `from` and moves up to `move_limit`
/// of the others to `to`; how many were woken or moved (as Linux counts).
pub fn requeue(from: FutexKey, to: FutexKey, wake_limit: usize, move_limit: usize) -> usize {
    let (woken, moved) = with_table(|table| table.requeue(from, to, wake_limit, move_limit));
    unpark_all(woken) + moved
}

fn unpark_all(threads: Vec<Arc<sched::Thread>>) -> usize {
    for thread in &threads {
        sched::unpark(thread);
    }
    threads.len()
}

/// Wakes up to `limit` threads of `process` waiting on its private or
/// shared word at `address` (thread exit's `clear_child_tid` wake).
pub fn wake_word(process: &Process, address: u64, limit: usize) -> usize {
    key_for(process, address, false).and_then(|key| wake(key, limit, MATCH_ANY)).unwrap_or(0)
}

/// `FUTEX_LOCK_PI`: takes the lock word at `address` for thread `tid`
/// (writing its id), waiting while another thread owns it. The owner is not
/// boosted (Lamina's scheduler has no priorities to lend); the lock is
/// otherwise Linux's: EDEADLK when `tid` owns it already, ETIMEDOUT, EINTR
/// stays with the caller (`interrupted`).
pub fn lock_pi(process: &Process, key: FutexKey, address: u64, tid: Pid, limit: Limit, interrupted: impl Fn() -> bool) -> Result<(), Errno> {
    let memory = process.native.user_memory();
    loop {
        match try_lock_pi(process, key, address, tid) {
            Err(Errno::EAGAIN) => {}
            other => return other,
        }
        // Owned by another: mark the word (the owner's unlock then comes
        // here) and wait, unless it was released meanwhile.
        let still_owned = || {
            let found = memory.update_u32(address, |word| (word & TID_MASK != 0).then_some(word | WAITERS))?;
            Ok(found & TID_MASK != 0)
        };
        match wait(key, MATCH_ANY, limit, still_owned, &interrupted) {
            Ok(WaitEnd::Woken) | Err(Errno::EAGAIN) => {}
            Ok(WaitEnd::TimedOut) => return Err(Errno::ETIMEDOUT),
            Ok(WaitEnd::Interrupted) => return Err(Errno::EINTR),
            Err(errno) => return Err(errno),
        }
    }
}

/// `FUTEX_TRYLOCK_PI`: takes the lock word at `address` for `tid` if no
/// one owns it (keeping `FUTEX_OWNER_DIED`, and marking waiters if any are
/// queued); EAGAIN when owned, EDEADLK when `tid` owns it.
pub fn try_lock_pi(process: &Process, key: FutexKey, address: u64, tid: Pid) -> Result<(), Errno> {
    let queued = WAITING.lock().waiting_on(key) > 0;
    let waiters = if queued { WAITERS } else { 0 };
    let found = process.native.user_memory().update_u32(address, |word| (word & TID_MASK == 0).then_some(tid | waiters | (word & OWNER_DIED)))?;
    match found & TID_MASK {
        0 => Ok(()),
        owner if owner == tid => Err(Errno::EDEADLK),
        _ => Err(Errno::EAGAIN),
    }
}

/// `FUTEX_UNLOCK_PI`: releases the lock word at `address` that `tid` owns
/// and wakes the oldest waiter to take it (EPERM when `tid` does not own
/// it).
pub fn unlock_pi(process: &Process, key: FutexKey, address: u64, tid: Pid) -> Result<(), Errno> {
    let mut owned = true;
    process.native.user_memory().update_u32(address, |word| {
        owned = word & TID_MASK == tid;
        owned.then_some(0)
    })?;
    if !owned {
        return Err(Errno::EPERM);
    }
    wake(key, 1, MATCH_ANY)?;
    Ok(())
}

/// The robust-list walk of thread `tid` ending (`set_robust_list(2)`):
/// every lock word on the list (and the one it was taking or releasing)
/// that `tid` still owns gets `FUTEX_OWNER_DIED`, and one waiter is woken.
/// A bad pointer or a list longer than Linux's limit ends the walk;
/// nothing here can fail the exit.
pub fn release_robust_list(process: &Process, tid: Pid, head: u64) {
    if head == 0 {
        return;
    }
    let memory = process.native.user_memory();
    let (Ok(mut entry), Ok(offset), Ok(pending)) = (memory.read_u64(head), memory.read_u64(head + 8), memory.read_u64(head + 16)) else {
        return;
    };
    let pending = pending & !1;
    for _ in 0..ROBUST_LIST_LIMIT {
        if entry & !1 == head {
            break;
        }
        let Ok(next) = memory.read_u64(entry & !1) else { return };
        if entry & !1 != pending {
            owner_dies(process, (entry & !1).wrapping_add(offset), tid);
        }
        entry = next;
    }
    if pending != 0 {
        owner_dies(process, pending.wrapping_add(offset), tid);
    }
}

fn owner_dies(process: &Process, address: u64, tid: Pid) {
    let memory = process.native.user_memory();
    let Ok(found) = memory.update_u32(address, |word| owner_died(word, tid)) else { return };
    if owner_died(found, tid).is_some() && found & WAITERS != 0 {
        wake_word(process, address, 1);
    }
}
