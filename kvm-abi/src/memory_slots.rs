//! A VM's guest-physical memory: slots, each a run of guest-physical pages
//! backed by a run of the VMM's own memory, set with
//! `KVM_SET_USER_MEMORY_REGION` under Linux's rules (Linux 6.1
//! `__kvm_set_memory_region`), errno for errno:
//! - EINVAL for unknown flags, a slot number past [`USER_SLOTS`] or in
//!   another address space, a size or either address not page-aligned, a
//!   range that wraps or ends past user space, deleting a slot that does
//!   not exist, or changing an existing slot's size, user address or
//!   read-only flag;
//! - EEXIST for a new or moved slot that overlaps another.
//!
//! One difference, on purpose: address space 1 (x86's SMM memory) is
//! refused with EINVAL, as this hypervisor has no SMM.

use alloc::vec::Vec;
use linux_abi::Errno;

use crate::layouts::MemoryRegion;

/// Slots a VM may have (`KVM_CAP_NR_MEMSLOTS` on x86: 32767 less the
/// three KVM keeps for itself).
pub const USER_SLOTS: u32 = 32764;
/// `KVM_MEM_LOG_DIRTY_PAGES`.
pub const LOG_DIRTY_PAGES: u32 = 1;
/// `KVM_MEM_READONLY`: guest writes exit as MMIO.
pub const READ_ONLY: u32 = 2;

const PAGE: u64 = 4096;
/// The end of x86-64 user space as Linux's `access_ok` sees it.
const USER_SPACE_END: u64 = 0x7FFF_FFFF_F000;
/// `KVM_MEM_MAX_NR_PAGES`.
const MAX_PAGES: u64 = (1 << 31) - 1;

/// One slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Its number.
    pub id: u32,
    /// `KVM_MEM_*` flags.
    pub flags: u32,
    /// Guest-physical start.
    pub guest_physical: u64,
    /// Bytes.
    pub size: u64,
    /// Where the VMM has it.
    pub user_address: u64,
}

impl Slot {
    /// Whether `[start, start + size)` meets the slot (sizes are not 0; a
    /// range reaching the top of the address space is cut there).
    fn overlaps(&self, start: u64, size: u64) -> bool {
        self.guest_physical < start.saturating_add(size) && start < self.guest_physical + self.size
    }

    /// Whether guest writes may go to the VMM's memory.
    pub fn writable(&self) -> bool {
        self.flags & READ_ONLY == 0
    }
}

/// What a `KVM_SET_USER_MEMORY_REGION` did: the caller drops the nested
/// mappings of a deleted or moved slot's old range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotChange {
    /// A new slot.
    Created,
    /// The slot is gone (this was it).
    Deleted(Slot),
    /// The slot moved to another guest-physical start (this was it).
    Moved(Slot),
    /// Only its flags changed.
    FlagsChanged,
    /// Nothing changed.
    Unchanged,
}

/// A VM's slots.
#[derive(Debug, Default)]
pub struct MemorySlots {
    slots: Vec<Slot>,
}

impl MemorySlots {
    /// No slots.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one `KVM_SET_USER_MEMORY_REGION` (see the module comment).
    /// ENOMEM when the table cannot grow.
    pub fn set(&mut self, region: MemoryRegion) -> Result<SlotChange, Errno> {
        if region.flags & !(LOG_DIRTY_PAGES | READ_ONLY) != 0 {
            return Err(Errno::EINVAL);
        }
        let (address_space, id) = (region.slot >> 16, region.slot & 0xFFFF);
        if address_space != 0 || id >= USER_SLOTS {
            return Err(Errno::EINVAL);
        }
        let (start, size, user) = (region.guest_physical, region.size, region.user_address);
        if size % PAGE != 0 || start % PAGE != 0 || user % PAGE != 0 {
            return Err(Errno::EINVAL);
        }
        if user.checked_add(size).is_none_or(|end| end > USER_SPACE_END) || start.checked_add(size).is_none() || size / PAGE > MAX_PAGES {
            return Err(Errno::EINVAL);
        }
        let existing = self.slots.iter().position(|slot| slot.id == id);
        if size == 0 {
            let index = existing.ok_or(Errno::EINVAL)?;
            return Ok(SlotChange::Deleted(self.slots.remove(index)));
        }
        let new = Slot { id, flags: region.flags, guest_physical: start, size, user_address: user };
        let change = match existing.map(|index| self.slots[index]) {
            None => SlotChange::Created,
            Some(old) => {
                if old.user_address != user || old.size != size || (old.flags ^ region.flags) & READ_ONLY != 0 {
                    return Err(Errno::EINVAL);
                }
                if old.guest_physical != start {
                    SlotChange::Moved(old)
                } else if old.flags != region.flags {
                    SlotChange::FlagsChanged
                } else {
                    return Ok(SlotChange::Unchanged);
                }
            }
        };
        if matches!(change, SlotChange::Created | SlotChange::Moved(_)) && self.slots.iter().any(|slot| slot.id != id && slot.overlaps(start, size)) {
            return Err(Errno::EEXIST);
        }
        match existing {
            Some(index) => self.slots[index] = new,
            None => {
                self.slots.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                self.slots.push(new);
            }
        }
        Ok(change)
    }

    /// The slot holding guest-physical `address`, and where the VMM has
    /// that byte.
    pub fn find(&self, address: u64) -> Option<(Slot, u64)> {
        self.slots.iter().find(|slot| slot.overlaps(address, 1)).map(|slot| (*slot, slot.user_address + (address - slot.guest_physical)))
    }

    /// Every slot, in the order they were made.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }
}
