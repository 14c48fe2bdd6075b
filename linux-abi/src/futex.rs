//! The logic of `futex(2)` that needs no hardware: decoding the operation
//! word and `FUTEX_WAKE_OP`'s encoded operation, and [`FutexQueue`], the
//! table of waiting threads with Linux's wake, bitset and requeue rules.
//!
//! The kernel keeps one `FutexQueue` under a lock and parks the threads it
//! names; this module never blocks, never touches user memory and never
//! panics on any argument (an unknown operation is ENOSYS, a bad encoding
//! EINVAL).

use alloc::vec::Vec;

use crate::Errno;

/// `FUTEX_PRIVATE_FLAG`: the word is private to the process.
pub const PRIVATE_FLAG: u32 = 128;
/// `FUTEX_CLOCK_REALTIME`: an absolute time limit is on CLOCK_REALTIME.
pub const CLOCK_REALTIME_FLAG: u32 = 256;
/// `FUTEX_BITSET_MATCH_ANY`: the bitset of plain waits and wakes.
pub const MATCH_ANY: u32 = u32::MAX;
/// `FUTEX_WAITERS`: set in a robust or PI lock word while threads wait.
pub const WAITERS: u32 = 0x8000_0000;
/// `FUTEX_OWNER_DIED`: set in a robust lock word whose owner ended.
pub const OWNER_DIED: u32 = 0x4000_0000;
/// `FUTEX_TID_MASK`: the owner's thread id in a robust or PI lock word.
pub const TID_MASK: u32 = 0x3fff_ffff;

/// A futex command (the operation word without its flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `FUTEX_WAIT`: sleep while the word holds a value (relative limit).
    Wait,
    /// `FUTEX_WAKE`: wake up to n waiters.
    Wake,
    /// `FUTEX_REQUEUE`: wake n, move up to m to another word.
    Requeue,
    /// `FUTEX_CMP_REQUEUE`: the same, if the word still holds a value.
    CompareRequeue,
    /// `FUTEX_WAKE_OP`: change a second word, wake on both.
    WakeOp,
    /// `FUTEX_LOCK_PI` (and `FUTEX_LOCK_PI2`, on CLOCK_MONOTONIC).
    LockPi,
    /// `FUTEX_UNLOCK_PI`.
    UnlockPi,
    /// `FUTEX_TRYLOCK_PI`.
    TryLockPi,
    /// `FUTEX_WAIT_BITSET`: sleep with a bitset (absolute limit).
    WaitBitset,
    /// `FUTEX_WAKE_BITSET`: wake waiters whose bitset meets this one.
    WakeBitset,
}

/// A decoded operation word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// What to do.
    pub command: Command,
    /// `FUTEX_PRIVATE_FLAG` was given.
    pub private: bool,
    /// An absolute limit is on CLOCK_REALTIME.
    pub realtime: bool,
}

/// Decodes `futex`'s operation word: ENOSYS for commands Lamina does not
/// have (the requeue-to-PI pair) and for FUTEX_CLOCK_REALTIME where Linux
/// refuses it.
pub fn decode_operation(word: u32) -> Result<Operation, Errno> {
    let command = match word & !(PRIVATE_FLAG | CLOCK_REALTIME_FLAG) {
        0 => Command::Wait,
        1 => Command::Wake,
        3 => Command::Requeue,
        4 => Command::CompareRequeue,
        5 => Command::WakeOp,
        6 | 13 => Command::LockPi,
        7 => Command::UnlockPi,
        8 => Command::TryLockPi,
        9 => Command::WaitBitset,
        10 => Command::WakeBitset,
        _ => return Err(Errno::ENOSYS),
    };
    let realtime = word & CLOCK_REALTIME_FLAG != 0;
    // Linux takes FUTEX_CLOCK_REALTIME only where a limit is absolute (and
    // on FUTEX_WAIT, where it is ignored, and FUTEX_LOCK_PI2).
    if realtime && !matches!(word & 0x7f, 0 | 9 | 13) {
        return Err(Errno::ENOSYS);
    }
    Ok(Operation { command, private: word & PRIVATE_FLAG != 0, realtime })
}

/// `FUTEX_WAKE_OP`'s encoded operation on the second word and its test of
/// the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeOp {
    operation: u32,
    argument: u32,
    comparison: u32,
    comparand: u32,
}

impl WakeOp {
    /// Decodes `(op << 28) | (cmp << 24) | (oparg << 12) | cmparg`, with
    /// `FUTEX_OP_OPARG_SHIFT` (8 in `op`) meaning `1 << (oparg & 31)` (Linux
    /// masks a bad shift and goes on). ENOSYS for an unknown operation or
    /// comparison, as Linux answers.
    pub fn decode(encoded: u32) -> Result<WakeOp, Errno> {
        let mut operation = encoded >> 28;
        let comparison = (encoded >> 24) & 0xf;
        // Both arguments are 12-bit signed numbers.
        let sign_extend = |value: u32| ((value << 20) as i32 >> 20) as u32;
        let mut argument = sign_extend((encoded >> 12) & 0xfff);
        let comparand = sign_extend(encoded & 0xfff);
        if operation & 8 != 0 {
            argument = 1 << (argument & 31);
            operation &= 7;
        }
        if operation > 4 || comparison > 5 {
            return Err(Errno::ENOSYS);
        }
        Ok(WakeOp { operation, argument, comparison, comparand })
    }

    /// The second word's new value, from its `old` one.
    pub fn apply(&self, old: u32) -> u32 {
        match self.operation {
            0 => self.argument,
            1 => old.wrapping_add(self.argument),
            2 => old | self.argument,
            3 => old & !self.argument,
            _ => old ^ self.argument,
        }
    }

    /// Whether waiters of the second word are woken too, given its `old`
    /// value (compared as a signed number, as Linux does).
    pub fn condition_holds(&self, old: u32) -> bool {
        let (old, comparand) = (old as i32, self.comparand as i32);
        match self.comparison {
            0 => old == comparand,
            1 => old != comparand,
            2 => old < comparand,
            3 => old <= comparand,
            4 => old > comparand,
            _ => old >= comparand,
        }
    }
}

/// Which word a waiter waits on: a private word is named by its address
/// space and address, a word in shared memory by where it is in that
/// memory (so that processes sharing it meet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexKey {
    /// A word of one address space.
    Private {
        /// The address space (any number unique among live ones).
        space: u64,
        /// The word's user address.
        address: u64,
    },
    /// A word of shared memory, by a location unique to that memory.
    Shared {
        /// The location.
        location: u64,
    },
}

struct Waiter<W> {
    key: FutexKey,
    bitset: u32,
    handle: W,
}

/// The threads waiting on futexes, oldest first (wakes take the oldest, as
/// Linux does among waiters of equal priority).
pub struct FutexQueue<W> {
    waiters: Vec<Waiter<W>>,
}

impl<W> Default for FutexQueue<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W> FutexQueue<W> {
    /// An empty table.
    pub const fn new() -> Self {
        Self { waiters: Vec::new() }
    }

    /// `handle` starts waiting on `key` for wakes meeting `bitset`. The
    /// caller joins before it reads the word, so a waker that changes the
    /// word after the read finds it here. ENOMEM when the table cannot grow;
    /// EINVAL for an empty bitset.
    pub fn join(&mut self, key: FutexKey, bitset: u32, handle: W) -> Result<(), Errno> {
        if bitset == 0 {
            return Err(Errno::EINVAL);
        }
        self.waiters.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.waiters.push(Waiter { key, bitset, handle });
        Ok(())
    }

    /// Takes out the waiter `is_me` picks; `true` when it was still
    /// waiting (not woken meanwhile).
    pub fn leave(&mut self, is_me: impl Fn(&W) -> bool) -> bool {
        let before = self.waiters.len();
        self.waiters.retain(|waiter| !is_me(&waiter.handle));
        self.waiters.len() != before
    }

    /// How many threads wait, on any word (the kernel publishes it beside
    /// the table's lock, so a wake that finds none skips the lock).
    pub fn queued(&self) -> usize {
        self.waiters.len()
    }

    /// Whether the waiter `is_me` picks still waits (on any word: a requeue
    /// may have moved it).
    pub fn is_waiting(&self, is_me: impl Fn(&W) -> bool) -> bool {
        self.waiters.iter().any(|waiter| is_me(&waiter.handle))
    }

    /// Takes out up to `limit` of the oldest waiters on `key` whose bitset
    /// meets `bitset`, for the caller to wake. EINVAL for an empty bitset.
    pub fn wake(&mut self, key: FutexKey, limit: usize, bitset: u32) -> Result<Vec<W>, Errno> {
        if bitset == 0 {
            return Err(Errno::EINVAL);
        }
        Ok(self.take(limit, |waiter| waiter.key == key && waiter.bitset & bitset != 0))
    }

    /// `FUTEX_REQUEUE`: takes out up to `wake_limit` waiters on `from` (to
    /// wake), then moves up to `move_limit` of the rest to `to`. The woken
    /// and how many moved.
    pub fn requeue(&mut self, from: FutexKey, to: FutexKey, wake_limit: usize, move_limit: usize) -> (Vec<W>, usize) {
        let woken = self.take(wake_limit, |waiter| waiter.key == from);
        let mut moved = 0;
        for waiter in self.waiters.iter_mut().filter(|waiter| waiter.key == from) {
            if moved == move_limit {
                break;
            }
            waiter.key = to;
            moved += 1;
        }
        (woken, moved)
    }

    /// How many wait on `key`.
    pub fn waiting_on(&self, key: FutexKey) -> usize {
        self.waiters.iter().filter(|waiter| waiter.key == key).count()
    }

    fn take(&mut self, limit: usize, matches: impl Fn(&Waiter<W>) -> bool) -> Vec<W> {
        let mut taken = Vec::new();
        let mut index = 0;
        while taken.len() < limit && index < self.waiters.len() {
            if matches(&self.waiters[index]) {
                if taken.try_reserve(1).is_err() {
                    // Out of memory: wake fewer (they stay queued, still
                    // woken by a later wake or their time limit).
                    break;
                }
                taken.push(self.waiters.remove(index).handle);
            } else {
                index += 1;
            }
        }
        taken
    }
}

/// What a dying owner leaves in a robust lock word (`FUTEX_OWNER_DIED`, the
/// waiters bit kept), or `None` when the word is not owned by `tid`.
pub fn owner_died(word: u32, tid: u32) -> Option<u32> {
    (word & TID_MASK == tid).then_some((word & WAITERS) | OWNER_DIED)
}

/// The most entries a robust list walk visits (Linux's `ROBUST_LIST_LIMIT`):
/// a circular or corrupt list cannot hold the exiting thread.
pub const ROBUST_LIST_LIMIT: usize = 2048;

/// `sizeof(struct robust_list_head)`: the only length `set_robust_list` takes.
pub const ROBUST_LIST_HEAD_BYTES: u64 = 24;

#[cfg(test)]
mod tests {
    use super::*;

    const A: FutexKey = FutexKey::Private { space: 1, address: 0x1000 };
    const B: FutexKey = FutexKey::Private { space: 1, address: 0x2000 };
    const OTHER_SPACE: FutexKey = FutexKey::Private { space: 2, address: 0x1000 };

    #[test]
    fn operations_decode_with_their_flags() {
        assert_eq!(decode_operation(128), Ok(Operation { command: Command::Wait, private: true, realtime: false }));
        assert_eq!(decode_operation(9 | 256), Ok(Operation { command: Command::WaitBitset, private: false, realtime: true }));
        assert_eq!(decode_operation(5 | 128).map(|op| op.command), Ok(Command::WakeOp));
        assert_eq!(decode_operation(1 | 256), Err(Errno::ENOSYS));
        assert_eq!(decode_operation(2), Err(Errno::ENOSYS), "FUTEX_FD is gone");
        assert_eq!(decode_operation(11), Err(Errno::ENOSYS));
        assert_eq!(decode_operation(99), Err(Errno::ENOSYS));
    }

    #[test]
    fn wake_op_decodes_applies_and_compares_as_linux() {
        // FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GT, 0): glibc's old condvar.
        let add = WakeOp::decode((1 << 28) | (4 << 24) | (1 << 12)).unwrap();
        assert_eq!(add.apply(5), 6);
        assert!(add.condition_holds(1));
        assert!(!add.condition_holds(0));
        assert!(!add.condition_holds(u32::MAX), "compared as signed: -1 > 0 is false");
        // OPARG_SHIFT: 1 << 3 ORed in.
        let or_shift = WakeOp::decode(((8 | 2) << 28) | (3 << 12)).unwrap();
        assert_eq!(or_shift.apply(1), 9);
        // Negative 12-bit arguments.
        let set_minus_one = WakeOp::decode(0xfff << 12).unwrap();
        assert_eq!(set_minus_one.apply(7), u32::MAX);
        let andn = WakeOp::decode((3 << 28) | (1 << 12)).unwrap();
        assert_eq!(andn.apply(3), 2);
        let xor = WakeOp::decode((4 << 28) | (1 << 12)).unwrap();
        assert_eq!(xor.apply(3), 2);
        assert_eq!(WakeOp::decode(5 << 28), Err(Errno::ENOSYS));
        assert_eq!(WakeOp::decode(6 << 24), Err(Errno::ENOSYS));
        assert_eq!(WakeOp::decode((8 << 28) | (33 << 12)).unwrap().apply(0), 2, "a shift past 31 is masked");
    }

    #[test]
    fn wakes_take_the_oldest_matching_waiters() {
        let mut queue = FutexQueue::new();
        for (handle, key) in [(1, A), (2, B), (3, A), (4, OTHER_SPACE), (5, A)] {
            queue.join(key, MATCH_ANY, handle).unwrap();
        }
        assert_eq!(queue.wake(A, 2, MATCH_ANY), Ok(alloc::vec![1, 3]));
        assert_eq!(queue.wake(A, 5, MATCH_ANY), Ok(alloc::vec![5]));
        assert_eq!(queue.wake(A, 5, MATCH_ANY), Ok(alloc::vec![]));
        assert!(queue.is_waiting(|handle| *handle == 4), "another space's word is another futex");
        assert_eq!(queue.wake(A, 1, 0), Err(Errno::EINVAL));
    }

    #[test]
    fn bitsets_select_waiters() {
        let mut queue = FutexQueue::new();
        queue.join(A, 0b01, 1).unwrap();
        queue.join(A, 0b10, 2).unwrap();
        queue.join(A, MATCH_ANY, 3).unwrap();
        assert_eq!(queue.wake(A, 10, 0b10), Ok(alloc::vec![2, 3]));
        assert_eq!(queue.join(A, 0, 4), Err(Errno::EINVAL));
        assert!(queue.leave(|handle| *handle == 1));
        assert!(!queue.leave(|handle| *handle == 1), "a waiter leaves once");
    }

    #[test]
    fn requeue_wakes_then_moves() {
        let mut queue = FutexQueue::new();
        for handle in 1..=5 {
            queue.join(A, MATCH_ANY, handle).unwrap();
        }
        let (woken, moved) = queue.requeue(A, B, 1, 2);
        assert_eq!((woken, moved), (alloc::vec![1], 2));
        assert_eq!(queue.waiting_on(A), 2);
        assert_eq!(queue.waiting_on(B), 2);
        assert_eq!(queue.wake(B, 10, MATCH_ANY), Ok(alloc::vec![2, 3]));
        assert!(queue.is_waiting(|handle| *handle == 4));
    }

    #[test]
    fn a_dead_owner_marks_only_its_own_locks() {
        assert_eq!(owner_died(42, 42), Some(OWNER_DIED));
        assert_eq!(owner_died(42 | WAITERS, 42), Some(OWNER_DIED | WAITERS));
        assert_eq!(owner_died(43, 42), None);
        assert_eq!(owner_died(0, 42), None);
    }
}
