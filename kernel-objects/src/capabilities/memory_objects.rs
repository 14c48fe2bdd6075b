//! The objects behind memory capabilities: runs of frames the kernel
//! allocated for a process, charged to its container. A capability names
//! one by its handle (a table index and a generation, so a stale handle
//! finds nothing); the object itself is one owner of each frame in the
//! owner table, so unmapping it from a space never frees it. The frames go
//! back when the object's last capability is gone.
//!
//! Must never hand out a frame twice or free one a space still maps: the
//! caller releases an object only after undoing every mapping of it.

use alloc::vec::Vec;

use containers::ContainerId;
use frames::{FrameNumber, PhysicalAddress};
use crate::untyped_memory::{OwnedFrame, SharedFrame};
use spinlock::kernel::KernelTicketLock;
use vmem::LeaveOutcome;

use super::MEMORY_OBJECTS_LEVEL;
use crate::address_spaces::owners;
use linux_abi::Errno;
use crate::kernel_containers::free_charged_frame;

/// The most pages one memory object may have.
pub const MAX_PAGES: u64 = 4096;

struct MemoryObject {
    frames: Vec<u64>,
    container: ContainerId,
}

struct Entry {
    generation: u32,
    object: Option<MemoryObject>,
}

static TABLE: KernelTicketLock<Vec<Entry>> = KernelTicketLock::new(MEMORY_OBJECTS_LEVEL, Vec::new());

/// A new object of `pages` zeroed frames charged to `container`; returns
/// its handle. Refused whole (nothing kept) when memory or quota runs out.
pub fn create(container: ContainerId, pages: u64) -> Result<u64, Errno> {
    if pages == 0 || pages > MAX_PAGES {
        return Err(Errno::EINVAL);
    }
    let owners = owners().ok_or(Errno::ENOMEM)?;
    let mut frames = Vec::new();
    frames.try_reserve_exact(pages as usize).map_err(|_| Errno::ENOMEM)?;
    for _ in 0..pages {
        let Ok(mut frame) = OwnedFrame::allocate(container) else {
            give_back(container, &frames);
            return Err(Errno::ENOMEM);
        };
        if !frame.zero() || owners.join(frame.address()).is_err() {
            give_back(container, &frames);
            return Err(Errno::ENOMEM); // `frame` drops: freed
        }
        // The object owns it from here; its last owner frees it.
        frames.push(frame.into_mapping());
    }
    let mut table = TABLE.lock();
    let free = table.iter().position(|entry| entry.object.is_none());
    let index = match free {
        Some(index) => index,
        None => {
            if table.try_reserve(1).is_err() {
                drop(table);
                give_back(container, &frames);
                return Err(Errno::ENOMEM);
            }
            table.push(Entry { generation: 0, object: None });
            table.len() - 1
        }
    };
    let entry = &mut table[index];
    entry.generation = entry.generation.wrapping_add(1);
    entry.object = Some(MemoryObject { frames, container });
    Ok(handle(index, entry.generation))
}

/// The frames of pages `first..first + count` of the object, if it exists
/// and has them.
pub(crate) fn frames(handle: u64, first: u64, count: u64) -> Result<Vec<SharedFrame>, Errno> {
    let table = TABLE.lock();
    let object = lookup(&table, handle).ok_or(Errno::EBADF)?;
    let end = first.checked_add(count).ok_or(Errno::EINVAL)?;
    let run = object.frames.get(first as usize..end as usize).ok_or(Errno::EINVAL)?;
    let mut lent = Vec::new();
    lent.try_reserve_exact(run.len()).map_err(|_| Errno::ENOMEM)?;
    lent.extend(run.iter().map(|&frame| SharedFrame::of_object(frame)));
    Ok(lent)
}

/// Frees the object (its last capability is gone and no space maps it).
pub fn release(handle: u64) {
    let object = {
        let mut table = TABLE.lock();
        let (index, generation) = split(handle);
        match table.get_mut(index) {
            Some(entry) if entry.generation == generation => entry.object.take(),
            _ => None,
        }
    };
    if let Some(object) = object {
        give_back(object.container, &object.frames);
    }
}

/// How many memory objects exist (for the tests' leak checks).
pub fn count() -> usize {
    TABLE.lock().iter().filter(|entry| entry.object.is_some()).count()
}

/// Leaves each frame's owner set and frees those nobody else holds.
fn give_back(container: ContainerId, frames: &[u64]) {
    let Some(owners) = owners() else { return };
    for &frame in frames {
        if owners.leave(frame) == LeaveOutcome::Last {
            if let Err(error) = free_charged_frame(container, FrameNumber::containing(PhysicalAddress(frame))) {
                machine::println!("lamina: warning: freeing memory-object frame {frame:#x} refused: {error}");
            }
        }
    }
}

fn handle(index: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | index as u64
}

fn split(handle: u64) -> (usize, u32) {
    ((handle & 0xFFFF_FFFF) as usize, (handle >> 32) as u32)
}

fn lookup(table: &[Entry], handle: u64) -> Option<&MemoryObject> {
    let (index, generation) = split(handle);
    table.get(index).filter(|entry| entry.generation == generation)?.object.as_ref()
}
