//! A generational arena: the database's storage for nodes, objects, spaces
//! and revocations. A handle names one entry and goes stale when the entry
//! is removed (its generation moves on), so a stale handle can never reach
//! a newer occupant of the same place. Growing the arena is the only
//! allocation of the layer, and it fails with `OutOfMemory`, never a panic.

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

struct Entry<T> {
    generation: u32,
    place: Place<T>,
}

/// Values of type `T` under generational handles.
pub(crate) struct Arena<T> {
    entries: Vec<Entry<T>>,
    first_free: Option<u32>,
    occupied: usize,
}

impl<T> Arena<T> {
    pub(crate) const fn new() -> Self {
        Self { entries: Vec::new(), first_free: None, occupied: 0 }
    }

    /// Makes room for one more value, so that the next `insert` cannot fail.
    pub(crate) fn reserve_one(&mut self) -> Result<(), CapError> {
        if self.first_free.is_some() {
            return Ok(());
        }
        if self.entries.len() >= u32::MAX as usize {
            return Err(CapError::OutOfMemory);
        }
        self.entries.try_reserve(1).map_err(|_| CapError::OutOfMemory)
    }

    /// Stores `value`; fails only if the arena cannot grow.
    pub(crate) fn insert(&mut self, value: T) -> Result<Handle, CapError> {
        self.reserve_one()?;
        self.occupied += 1;
        if let Some(index) = self.first_free {
            let entry = &mut self.entries[index as usize];
            let Place::Free { next_free } = entry.place else {
                unreachable!("the free list names only free entries");
            };
            self.first_free = next_free;
            entry.place = Place::Occupied(value);
            return Ok(Handle { index, generation: entry.generation });
        }
        let index = self.entries.len() as u32;
        self.entries.push(Entry { generation: 0, place: Place::Occupied(value) });
        Ok(Handle { index, generation: 0 })
    }

    pub(crate) fn get(&self, handle: Handle) -> Option<&T> {
        let entry = self.entries.get(handle.index as usize)?;
        match &entry.place {
            Place::Occupied(value) if entry.generation == handle.generation => Some(value),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let entry = self.entries.get_mut(handle.index as usize)?;
        match &mut entry.place {
            Place::Occupied(value) if entry.generation == handle.generation => Some(value),
            _ => None,
        }
    }

    /// Takes the value out; its handle goes stale.
    pub(crate) fn remove(&mut self, handle: Handle) -> Option<T> {
        self.get(handle)?;
        let entry = &mut self.entries[handle.index as usize];
        let taken = core::mem::replace(&mut entry.place, Place::Free { next_free: self.first_free });
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
        self.entries.iter().enumerate().filter_map(|(index, entry)| match &entry.place {
            Place::Occupied(value) => {
                Some((Handle { index: index as u32, generation: entry.generation }, value))
            }
            Place::Free { .. } => None,
        })
    }
}
