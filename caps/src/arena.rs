//! A generational arena: the database's storage for nodes, objects, spaces
//! and revocations. A handle names one entry and goes stale when the entry
//! is removed (its generation moves on), so a stale handle can never reach
//! a newer occupant of the same place. Growing the arena is the only
//! allocation of the layer, and it fails with `OutOfMemory`, never a panic.
//!
//! Entries live in chunks of [`CHUNK_ENTRIES`] that never move: growing
//! adds a chunk (a few KiB) instead of copying one contiguous array into
//! one twice its size, which for a 100,000-capability database needed a
//! ~19 MB run of free heap and failed on a fragmented heap with 47 MB free.

use alloc::vec::Vec;

use crate::CapError;

/// The name of an arena entry: its place and the generation of the value
/// that was put there.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Handle {
    index: u32,
    generation: u32,
}

impl Handle {
    /// The handle as one word (for user-visible ids and object handles).
    pub const fn to_bits(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    /// The handle whose word is `bits`.
    pub const fn from_bits(bits: u64) -> Self {
        Self { index: bits as u32, generation: (bits >> 32) as u32 }
    }

    /// Its place in the arena.
    pub const fn index(self) -> u32 {
        self.index
    }
}

enum Place<T> {
    Occupied(T),
    Free { next_free: Option<u32> },
}

/// Entries per chunk.
const CHUNK_ENTRIES: usize = 128;

struct Entry<T> {
    generation: u32,
    place: Place<T>,
}

/// Values of type `T` under generational handles.
pub(crate) struct Arena<T> {
    /// Full chunks but the last; each made with room for [`CHUNK_ENTRIES`].
    chunks: Vec<Vec<Entry<T>>>,
    /// Entries in all chunks (occupied or free).
    length: usize,
    first_free: Option<u32>,
    occupied: usize,
}

impl<T> Arena<T> {
    pub(crate) const fn new() -> Self {
        Self { chunks: Vec::new(), length: 0, first_free: None, occupied: 0 }
    }

    /// Makes room for one more value, so that the next `insert` cannot fail.
    pub(crate) fn reserve_one(&mut self) -> Result<(), CapError> {
        if self.first_free.is_some() {
            return Ok(());
        }
        if self.length >= u32::MAX as usize {
            return Err(CapError::OutOfMemory);
        }
        if self.chunks.last().is_some_and(|last| last.len() < CHUNK_ENTRIES) {
            return Ok(());
        }
        let mut chunk = Vec::new();
        chunk.try_reserve_exact(CHUNK_ENTRIES).map_err(|_| CapError::OutOfMemory)?;
        self.chunks.try_reserve(1).map_err(|_| CapError::OutOfMemory)?;
        self.chunks.push(chunk);
        Ok(())
    }

    fn entry(&self, index: u32) -> Option<&Entry<T>> {
        let index = index as usize;
        self.chunks.get(index / CHUNK_ENTRIES)?.get(index % CHUNK_ENTRIES)
    }

    fn entry_mut(&mut self, index: u32) -> Option<&mut Entry<T>> {
        let index = index as usize;
        self.chunks.get_mut(index / CHUNK_ENTRIES)?.get_mut(index % CHUNK_ENTRIES)
    }

    /// Stores `value`; fails only if the arena cannot grow.
    pub(crate) fn insert(&mut self, value: T) -> Result<Handle, CapError> {
        self.reserve_one()?;
        self.occupied += 1;
        if let Some(index) = self.first_free {
            let entry = self.entry_mut(index).expect("the free list names only existing entries");
            let Place::Free { next_free } = entry.place else {
                unreachable!("the free list names only free entries");
            };
            entry.place = Place::Occupied(value);
            let generation = entry.generation;
            self.first_free = next_free;
            return Ok(Handle { index, generation });
        }
        let index = self.length as u32;
        // `reserve_one` made a chunk with room (never a reallocation).
        let last = self.chunks.last_mut().expect("reserve_one made a chunk");
        last.push(Entry { generation: 0, place: Place::Occupied(value) });
        self.length += 1;
        Ok(Handle { index, generation: 0 })
    }

    pub(crate) fn get(&self, handle: Handle) -> Option<&T> {
        let entry = self.entry(handle.index)?;
        match &entry.place {
            Place::Occupied(value) if entry.generation == handle.generation => Some(value),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let entry = self.entry_mut(handle.index)?;
        match &mut entry.place {
            Place::Occupied(value) if entry.generation == handle.generation => Some(value),
            _ => None,
        }
    }

    /// Takes the value out; its handle goes stale.
    pub(crate) fn remove(&mut self, handle: Handle) -> Option<T> {
        self.get(handle)?;
        let first_free = self.first_free;
        let entry = self.entry_mut(handle.index)?;
        let taken = core::mem::replace(&mut entry.place, Place::Free { next_free: first_free });
        entry.generation = entry.generation.wrapping_add(1);
        self.first_free = Some(handle.index);
        self.occupied -= 1;
        match taken {
            Place::Occupied(value) => Some(value),
            Place::Free { .. } => unreachable!("checked occupied above"),
        }
    }

    /// How many values are stored.
    pub(crate) fn len(&self) -> usize {
        self.occupied
    }

    /// Every stored value with its handle.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Handle, &T)> {
        self.chunks.iter().flatten().enumerate().filter_map(|(index, entry)| match &entry.place {
            Place::Occupied(value) => {
                Some((Handle { index: index as u32, generation: entry.generation }, value))
            }
            Place::Free { .. } => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values across several chunks keep their handles, a removed value's
    /// handle goes stale, and its place is reused under a new generation.
    #[test]
    fn handles_hold_across_chunk_boundaries() {
        let mut arena = Arena::new();
        let count = 3 * CHUNK_ENTRIES + 5;
        let handles: Vec<Handle> = (0..count).map(|value| arena.insert(value).unwrap()).collect();
        assert_eq!(arena.chunks.len(), 4);
        assert!(handles.iter().enumerate().all(|(value, &handle)| arena.get(handle) == Some(&value)));
        let gone = handles[CHUNK_ENTRIES];
        assert_eq!(arena.remove(gone), Some(CHUNK_ENTRIES));
        assert_eq!(arena.get(gone), None, "a removed value's handle is stale");
        let reused = arena.insert(7_000).unwrap();
        assert_eq!((reused.index(), arena.get(reused)), (gone.index(), Some(&7_000)));
        assert_eq!(arena.get(gone), None, "the old handle does not reach the new occupant");
        assert_eq!((arena.len(), arena.iter().count()), (count, count));
        assert_eq!(arena.get(Handle::from_bits(u64::from(count as u32 + 1))), None, "past the end");
    }
}
