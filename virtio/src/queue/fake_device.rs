//! The device's side of a split virtqueue, for tests: reads chains from the
//! available ring of the same memory and answers in the used ring, in any
//! order and with any (even bogus) id and length. Test-only.

use super::{DmaMemory, RingLayout};
use std::vec::Vec;

/// One descriptor as the device sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SeenDescriptor {
    pub(crate) physical: u64,
    pub(crate) length: u32,
    pub(crate) device_writes: bool,
}

/// A chain the device took from the available ring.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SeenChain {
    pub(crate) head: u16,
    pub(crate) descriptors: Vec<SeenDescriptor>,
}

pub(crate) struct FakeDevice {
    layout: RingLayout,
    next_available: u16,
    next_used: u16,
}

impl FakeDevice {
    pub(crate) fn new(layout: RingLayout) -> Self {
        Self {
            layout,
            next_available: 0,
            next_used: 0,
        }
    }

    fn mask(&self) -> u16 {
        self.layout.size() - 1
    }

    /// The next chain the driver made available, if any.
    pub(crate) fn pop(&mut self, memory: &impl DmaMemory) -> Option<SeenChain> {
        if memory.read_u16(self.layout.available_index()) == self.next_available {
            return None;
        }
        let slot = self.next_available & self.mask();
        let head = memory.read_u16(self.layout.available_entry(slot));
        self.next_available = self.next_available.wrapping_add(1);
        let mut descriptors = Vec::new();
        let mut index = head;
        loop {
            assert!(
                descriptors.len() < usize::from(self.layout.size()),
                "descriptor chain loops"
            );
            let address = self.layout.descriptor(index);
            let flags = memory.read_u16(address + 12);
            descriptors.push(SeenDescriptor {
                physical: memory.read_u64(address),
                length: memory.read_u32(address + 8),
                device_writes: flags & 2 != 0,
            });
            if flags & 1 == 0 {
                break;
            }
            index = memory.read_u16(address + 14);
        }
        Some(SeenChain { head, descriptors })
    }

    /// Every chain available now.
    pub(crate) fn pop_all(&mut self, memory: &impl DmaMemory) -> Vec<SeenChain> {
        core::iter::from_fn(|| self.pop(memory)).collect()
    }

    /// Puts (`id`, `length`) in the used ring and publishes it.
    pub(crate) fn push_used(&mut self, memory: &impl DmaMemory, id: u32, length: u32) {
        let element = self.layout.used_element(self.next_used & self.mask());
        memory.write_u32(element, id);
        memory.write_u32(element + 4, length);
        self.next_used = self.next_used.wrapping_add(1);
        memory.write_u16(self.layout.used_index(), self.next_used);
    }

    /// Publishes a used index without writing elements.
    pub(crate) fn set_used_index(&mut self, memory: &impl DmaMemory, index: u16) {
        self.next_used = index;
        memory.write_u16(self.layout.used_index(), index);
    }

    /// Sets or clears `VIRTQ_USED_F_NO_NOTIFY`.
    pub(crate) fn set_used_flags(&self, memory: &impl DmaMemory, flags: u16) {
        memory.write_u16(self.layout.used_flags(), flags);
    }

    /// Sets `avail_event` (with `VIRTIO_F_EVENT_IDX`).
    pub(crate) fn set_available_event(&self, memory: &impl DmaMemory, index: u16) {
        memory.write_u16(self.layout.available_event(), index);
    }

    /// Reads `used_event` (with `VIRTIO_F_EVENT_IDX`).
    pub(crate) fn used_event(&self, memory: &impl DmaMemory) -> u16 {
        memory.read_u16(self.layout.used_event())
    }

    /// Reads the available ring's flags.
    pub(crate) fn available_flags(&self, memory: &impl DmaMemory) -> u16 {
        memory.read_u16(self.layout.available_flags())
    }
}
