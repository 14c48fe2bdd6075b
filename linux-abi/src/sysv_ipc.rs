//! System V IPC as plain logic (`svipc(7)`): the key → identifier
//! registry with `IPC_PRIVATE`/`IPC_CREAT`/`IPC_EXCL` and Linux's
//! identifiers (slot + sequence × 32768), `semop`'s all-or-nothing
//! operations with their undo adjustments, `msgrcv`'s choice of message,
//! and the `*id64_ds` records `IPC_STAT` fills. The kernel keeps the
//! objects (`linux-objects/src/sysv_ipc.rs`) and makes callers wait;
//! nothing here blocks or panics on any argument.

use alloc::vec::Vec;

use crate::Errno;

/// `IPC_PRIVATE`: a new object no key names.
pub const IPC_PRIVATE: i32 = 0;
/// `IPC_CREAT`.
pub const IPC_CREAT: u32 = 0o1000;
/// `IPC_EXCL`.
pub const IPC_EXCL: u32 = 0o2000;
/// `IPC_NOWAIT`.
pub const IPC_NOWAIT: u32 = 0o4000;
/// `IPC_RMID`, `IPC_SET`, `IPC_STAT`, `IPC_INFO` (`*ctl` commands).
pub const IPC_RMID: u32 = 0;
/// See [`IPC_RMID`].
pub const IPC_SET: u32 = 1;
/// See [`IPC_RMID`].
pub const IPC_STAT: u32 = 2;
/// `IPC_64`: the flag C libraries add to `*ctl` commands (the 64-bit records).
pub const IPC_64: u32 = 0x100;
/// `SEM_UNDO`.
pub const SEM_UNDO: i16 = 0x1000;
/// `SEMVMX`: the largest semaphore value.
pub const SEMVMX: i32 = 32767;
/// `SEMMSL`: the most semaphores in a set.
pub const SEMMSL: usize = 32000;
/// `SEMOPM`: the most operations in one `semop`.
pub const SEMOPM: usize = 500;
/// `MSGMAX`: the largest message.
pub const MSGMAX: usize = 8192;
/// `MSGMNB`: a new queue's byte limit.
pub const MSGMNB: u64 = 16384;
/// `MSG_NOERROR`: truncate a long message instead of E2BIG.
pub const MSG_NOERROR: u32 = 0o10000;
/// `MSG_EXCEPT`: the first message not of the type.
pub const MSG_EXCEPT: u32 = 0o20000;
/// `SHM_RDONLY`, `SHM_RND`, `SHM_REMAP` (`shmat` flags).
pub const SHM_RDONLY: u32 = 0o10000;
/// See [`SHM_RDONLY`].
pub const SHM_RND: u32 = 0o20000;
/// See [`SHM_RDONLY`].
pub const SHM_REMAP: u32 = 0o40000;

const SEQUENCE_MULTIPLIER: i32 = 32768;

/// The objects of one kind (segments, semaphore sets or queues) by key and
/// identifier.
pub struct Registry<T> {
    slots: Vec<Slot<T>>,
}

struct Slot<T> {
    sequence: u16,
    entry: Option<(i32, T)>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Registry<T> {
    /// No objects.
    pub const fn new() -> Self {
        Self { slots: Vec::new() }
    }

    /// `*get(key, flags)`: the identifier of the object `key` names, made
    /// by `make` when there is none and `IPC_CREAT` (or `IPC_PRIVATE`)
    /// asks for one; `check` vets an existing one (a size, a count). ENOENT,
    /// EEXIST with `IPC_EXCL`, ENOSPC when no identifier is left.
    pub fn get(&mut self, key: i32, flags: u32, check: impl FnOnce(&T) -> Result<(), Errno>, make: impl FnOnce() -> Result<T, Errno>) -> Result<i32, Errno> {
        if key != IPC_PRIVATE {
            if let Some(index) = self.slots.iter().position(|slot| matches!(&slot.entry, Some((found, _)) if *found == key)) {
                if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                if let Some((_, object)) = &self.slots[index].entry {
                    check(object)?;
                }
                return Ok(self.id_of(index));
            }
            if flags & IPC_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
        }
        let index = match self.slots.iter().position(|slot| slot.entry.is_none()) {
            Some(index) => index,
            None if self.slots.len() < SEQUENCE_MULTIPLIER as usize => {
                self.slots.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                self.slots.push(Slot { sequence: 0, entry: None });
                self.slots.len() - 1
            }
            None => return Err(Errno::ENOSPC),
        };
        let object = make()?;
        let slot = &mut self.slots[index];
        slot.sequence = slot.sequence.wrapping_add(1) % (i32::MAX / SEQUENCE_MULTIPLIER) as u16;
        slot.entry = Some((key, object));
        Ok(self.id_of(index))
    }

    fn id_of(&self, index: usize) -> i32 {
        i32::from(self.slots[index].sequence) * SEQUENCE_MULTIPLIER + index as i32
    }

    fn index_of(&self, id: i32) -> Option<usize> {
        if id < 0 {
            return None;
        }
        let index = (id % SEQUENCE_MULTIPLIER) as usize;
        let slot = self.slots.get(index)?;
        (i32::from(slot.sequence) == id / SEQUENCE_MULTIPLIER && slot.entry.is_some()).then_some(index)
    }

    /// The object `id` names (EINVAL for none, as Linux answers).
    pub fn find(&mut self, id: i32) -> Result<&mut T, Errno> {
        let index = self.index_of(id).ok_or(Errno::EINVAL)?;
        self.slots[index].entry.as_mut().map(|(_, object)| object).ok_or(Errno::EINVAL)
    }

    /// The key of object `id`.
    pub fn key_of(&self, id: i32) -> Option<i32> {
        let index = self.index_of(id)?;
        self.slots[index].entry.as_ref().map(|(key, _)| *key)
    }

    /// Takes object `id` out (its identifier no longer finds it).
    pub fn remove(&mut self, id: i32) -> Option<T> {
        let index = self.index_of(id)?;
        self.slots[index].entry.take().map(|(_, object)| object)
    }

    /// Hides object `id` from its key (`IPC_RMID` of an attached segment:
    /// `shmget` no longer finds it, its identifier still does).
    pub fn forget_key(&mut self, id: i32) {
        if let Some(index) = self.index_of(id) {
            if let Some((key, _)) = &mut self.slots[index].entry {
                *key = IPC_PRIVATE;
            }
        }
    }

    /// How many objects exist.
    pub fn count(&self) -> usize {
        self.slots.iter().filter(|slot| slot.entry.is_some()).count()
    }
}

/// One `struct sembuf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemOp {
    /// Which semaphore.
    pub number: u16,
    /// Add (> 0), wait for zero (0), or take (< 0).
    pub op: i16,
    /// `IPC_NOWAIT`, `SEM_UNDO`.
    pub flags: i16,
}

impl SemOp {
    /// Reads the 6-byte `struct sembuf`.
    pub fn decode(bytes: &[u8]) -> SemOp {
        let half = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        SemOp { number: half(0), op: half(2) as i16, flags: half(4) as i16 }
    }
}

/// `sizeof(struct sembuf)`.
pub const SEMBUF_BYTES: usize = 6;

/// What `semop` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SemopOutcome {
    /// All applied; the `(semaphore, adjustment)` pairs `SEM_UNDO` asks to
    /// undo at exit.
    Done(Vec<(u16, i32)>),
    /// Nothing applied: must wait for semaphore `number` to grow (or, when
    /// `for_zero`, to reach zero).
    Wait {
        /// The semaphore.
        number: u16,
        /// Waiting for zero rather than for a larger value.
        for_zero: bool,
    },
}

/// Applies `ops` to `values` all or nothing (`semop(2)`): EFBIG for a
/// semaphore past the set, ERANGE past [`SEMVMX`], EAGAIN instead of
/// waiting when the blocking operation has `IPC_NOWAIT`.
pub fn semop(values: &mut [i32], ops: &[SemOp]) -> Result<SemopOutcome, Errno> {
    if ops.iter().any(|op| usize::from(op.number) >= values.len()) {
        return Err(Errno::EFBIG);
    }
    let mut trial = Vec::new();
    trial.try_reserve_exact(values.len()).map_err(|_| Errno::ENOMEM)?;
    trial.extend_from_slice(values);
    let mut undo = Vec::new();
    for op in ops {
        let value = &mut trial[usize::from(op.number)];
        let blocked = match op.op {
            0 => *value != 0,
            taken if taken < 0 => *value < -i32::from(taken),
            _ => false,
        };
        if blocked {
            if op.flags & IPC_NOWAIT as i16 != 0 {
                return Err(Errno::EAGAIN);
            }
            return Ok(SemopOutcome::Wait { number: op.number, for_zero: op.op == 0 });
        }
        let new = *value + i32::from(op.op);
        if new > SEMVMX {
            return Err(Errno::ERANGE);
        }
        *value = new;
        if op.flags & SEM_UNDO != 0 && op.op != 0 {
            undo.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            undo.push((op.number, -i32::from(op.op)));
        }
    }
    values.copy_from_slice(&trial);
    Ok(SemopOutcome::Done(undo))
}

/// Which queued message `msgrcv` takes, given each message's type in queue
/// order: `wanted` 0 the first, > 0 the first of that type (or, with
/// `except`, of another), < 0 the first of the lowest type ≤ |wanted|.
pub fn choose_message(types: impl Iterator<Item = i64> + Clone, wanted: i64, except: bool) -> Option<usize> {
    let mut indexed = types.enumerate();
    match wanted {
        0 => indexed.next().map(|(index, _)| index),
        wanted if wanted > 0 => indexed.find(|(_, kind)| (*kind == wanted) != except).map(|(index, _)| index),
        wanted => {
            let limit = wanted.checked_neg().unwrap_or(i64::MAX);
            indexed.filter(|(_, kind)| *kind <= limit).min_by_key(|(index, kind)| (*kind, *index)).map(|(index, _)| index)
        }
    }
}

/// What an `IPC_STAT` record's `ipc64_perm` says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Perm {
    /// The key.
    pub key: i32,
    /// The permission bits (and `SHM_DEST` for a segment marked removed).
    pub mode: u32,
    /// The identifier's sequence number.
    pub sequence: u16,
}

impl Perm {
    fn encode(&self, bytes: &mut [u8]) {
        bytes[0..4].copy_from_slice(&self.key.to_le_bytes());
        // uid, gid, cuid, cgid: root's.
        bytes[20..24].copy_from_slice(&self.mode.to_le_bytes());
        bytes[24..26].copy_from_slice(&self.sequence.to_le_bytes());
    }

    /// The sequence part of identifier `id`.
    pub fn sequence_of(id: i32) -> u16 {
        (id / SEQUENCE_MULTIPLIER) as u16
    }
}

fn put(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// `sizeof(struct shmid64_ds)`.
pub const SHMID_DS_BYTES: usize = 112;

/// `struct shmid64_ds`: size, times (seconds), creator and last pid, attaches.
pub fn shmid_ds(perm: Perm, size: u64, times: [u64; 3], pids: (u32, u32), attaches: u64) -> [u8; SHMID_DS_BYTES] {
    let mut bytes = [0u8; SHMID_DS_BYTES];
    perm.encode(&mut bytes);
    put(&mut bytes, 48, size);
    for (index, time) in times.iter().enumerate() {
        put(&mut bytes, 56 + index * 8, *time);
    }
    bytes[80..84].copy_from_slice(&pids.0.to_le_bytes());
    bytes[84..88].copy_from_slice(&pids.1.to_le_bytes());
    put(&mut bytes, 88, attaches);
    bytes
}

/// `sizeof(struct semid64_ds)` (x86-64).
pub const SEMID_DS_BYTES: usize = 104;

/// `struct semid64_ds`: last semop and change times, semaphore count.
pub fn semid_ds(perm: Perm, operated: u64, changed: u64, count: u64) -> [u8; SEMID_DS_BYTES] {
    let mut bytes = [0u8; SEMID_DS_BYTES];
    perm.encode(&mut bytes);
    put(&mut bytes, 48, operated);
    put(&mut bytes, 64, changed);
    put(&mut bytes, 80, count);
    bytes
}

/// `sizeof(struct msqid64_ds)`.
pub const MSQID_DS_BYTES: usize = 120;

/// `struct msqid64_ds`: send, receive and change times; bytes and messages
/// queued, the byte limit; last sender and receiver.
pub fn msqid_ds(perm: Perm, times: [u64; 3], bytes_queued: u64, messages: u64, limit: u64, pids: (u32, u32)) -> [u8; MSQID_DS_BYTES] {
    let mut bytes = [0u8; MSQID_DS_BYTES];
    perm.encode(&mut bytes);
    for (index, time) in times.iter().enumerate() {
        put(&mut bytes, 48 + index * 8, *time);
    }
    put(&mut bytes, 72, bytes_queued);
    put(&mut bytes, 80, messages);
    put(&mut bytes, 88, limit);
    bytes[96..100].copy_from_slice(&pids.0.to_le_bytes());
    bytes[100..104].copy_from_slice(&pids.1.to_le_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_find_create_and_refuse_as_linux() {
        let mut registry: Registry<u32> = Registry::new();
        let ok = |_: &u32| Ok(());
        assert_eq!(registry.get(5, 0, ok, || Ok(1)), Err(Errno::ENOENT));
        let id = registry.get(5, IPC_CREAT, ok, || Ok(1)).unwrap();
        assert_eq!(registry.get(5, 0, ok, || Ok(2)), Ok(id));
        assert_eq!(registry.get(5, IPC_CREAT | IPC_EXCL, ok, || Ok(2)), Err(Errno::EEXIST));
        assert_eq!(registry.get(5, 0, |_| Err(Errno::EINVAL), || Ok(2)), Err(Errno::EINVAL));
        let private = registry.get(IPC_PRIVATE, 0, ok, || Ok(3)).unwrap();
        assert_ne!(private, id);
        assert_eq!(*registry.find(private).unwrap(), 3);
        assert_eq!(registry.remove(id), Some(1));
        assert_eq!(registry.find(id), Err(Errno::EINVAL));
        let reused = registry.get(6, IPC_CREAT, ok, || Ok(4)).unwrap();
        assert_eq!(reused % 32768, id % 32768, "the slot is reused");
        assert_ne!(reused, id, "with a new sequence: the old identifier finds nothing");
        assert_eq!(registry.find(id), Err(Errno::EINVAL));
        assert_eq!(registry.find(-1), Err(Errno::EINVAL));
        registry.forget_key(reused);
        assert_eq!(registry.get(6, 0, ok, || Ok(5)), Err(Errno::ENOENT));
        assert_eq!(registry.count(), 2);
    }

    fn op(number: u16, op: i16, flags: i16) -> SemOp {
        SemOp { number, op, flags }
    }

    #[test]
    fn semop_is_all_or_nothing() {
        let mut values = [1, 0];
        assert_eq!(semop(&mut values, &[op(0, -1, 0), op(1, -1, 0)]), Ok(SemopOutcome::Wait { number: 1, for_zero: false }));
        assert_eq!(values, [1, 0], "nothing applied");
        assert_eq!(semop(&mut values, &[op(0, -1, IPC_NOWAIT as i16), op(1, -1, IPC_NOWAIT as i16)]), Err(Errno::EAGAIN));
        assert_eq!(semop(&mut values, &[op(1, 2, SEM_UNDO), op(0, -1, SEM_UNDO)]), Ok(SemopOutcome::Done(alloc::vec![(1, -2), (0, 1)])));
        assert_eq!(values, [0, 2]);
        assert_eq!(semop(&mut values, &[op(0, 0, 0)]), Ok(SemopOutcome::Done(alloc::vec![])));
        assert_eq!(semop(&mut values, &[op(1, 0, 0)]), Ok(SemopOutcome::Wait { number: 1, for_zero: true }));
        assert_eq!(semop(&mut values, &[op(2, 1, 0)]), Err(Errno::EFBIG));
        assert_eq!(semop(&mut values, &[op(0, i16::MAX, 0), op(0, 1, 0)]), Err(Errno::ERANGE));
        assert_eq!(values, [0, 2]);
        let bytes = [1, 0, 0xff, 0xff, 0x00, 0x10];
        assert_eq!(SemOp::decode(&bytes), op(1, -1, SEM_UNDO));
    }

    #[test]
    fn msgrcv_picks_as_linux() {
        let types = [3i64, 1, 2, 1];
        assert_eq!(choose_message(types.iter().copied(), 0, false), Some(0));
        assert_eq!(choose_message(types.iter().copied(), 1, false), Some(1));
        assert_eq!(choose_message(types.iter().copied(), 3, true), Some(1));
        assert_eq!(choose_message(types.iter().copied(), -2, false), Some(1), "lowest type first, oldest among equals");
        assert_eq!(choose_message(types.iter().copied(), 5, false), None);
        assert_eq!(choose_message(core::iter::empty(), 0, false), None);
        assert_eq!(choose_message(types.iter().copied(), i64::MIN, false), Some(1));
    }

    #[test]
    fn records_sit_where_the_uapi_headers_put_them() {
        let perm = Perm { key: 0x1234, mode: 0o600, sequence: 2 };
        let shm = shmid_ds(perm, 8192, [1, 2, 3], (10, 11), 2);
        assert_eq!(i32::from_le_bytes(shm[0..4].try_into().unwrap()), 0x1234);
        assert_eq!(u32::from_le_bytes(shm[20..24].try_into().unwrap()), 0o600);
        assert_eq!(u64::from_le_bytes(shm[48..56].try_into().unwrap()), 8192);
        assert_eq!(u32::from_le_bytes(shm[84..88].try_into().unwrap()), 11);
        assert_eq!(u64::from_le_bytes(shm[88..96].try_into().unwrap()), 2);
        let sem = semid_ds(perm, 5, 6, 3);
        assert_eq!(u64::from_le_bytes(sem[64..72].try_into().unwrap()), 6);
        assert_eq!(u64::from_le_bytes(sem[80..88].try_into().unwrap()), 3);
        let msg = msqid_ds(perm, [1, 2, 3], 100, 4, MSGMNB, (7, 8));
        assert_eq!(u64::from_le_bytes(msg[80..88].try_into().unwrap()), 4);
        assert_eq!(u64::from_le_bytes(msg[88..96].try_into().unwrap()), MSGMNB);
        assert_eq!(u32::from_le_bytes(msg[100..104].try_into().unwrap()), 8);
    }
}
