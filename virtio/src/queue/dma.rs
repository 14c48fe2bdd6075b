//! The memory a driver shares with its device: what the kernel must supply
//! for virtqueues and request buffers.
//!
//! Must never: be implemented with plain (non-volatile) accesses, which the
//! compiler may merge, tear or drop; or let a [`Barrier`] be a no-op where
//! the CPU or compiler could reorder across it.

/// The orderings the queue needs between its accesses to shared memory
/// (Linux's `virt_wmb`, `virt_mb` and `virt_rmb`). On x86-64 with
/// write-back memory, stores are not reordered with stores nor loads with
/// loads, so [`Barrier::StoresBeforeStores`] and
/// [`Barrier::LoadsBeforeLoads`] need only stop the compiler (a compiler
/// fence); [`Barrier::StoresBeforeLoads`] needs `mfence` (or a locked
/// instruction).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Barrier {
    /// Every store before is visible to the device before any store after.
    /// Used between writing descriptors and the available-ring entry, and
    /// publishing the available index.
    StoresBeforeStores,
    /// Every store before is visible before any load after is performed.
    /// Used between publishing the available index and reading whether the
    /// device wants a notification.
    StoresBeforeLoads,
    /// No load after is performed before the loads before. Used between
    /// reading the used index and reading the used element (and the data
    /// the device wrote).
    LoadsBeforeLoads,
}

/// Physical memory the device reads and writes by DMA. Addresses are
/// physical; values are little-endian (virtio 1.x; legacy devices use the
/// guest's order, which on x86-64 is the same). The queue only touches
/// addresses inside the [`RingLayout`](crate::queue::RingLayout) it was
/// given; the block requests only their header area and the caller's
/// buffers.
pub trait DmaMemory {
    /// Reads a 16-bit value (volatile).
    fn read_u16(&self, physical: u64) -> u16;
    /// Reads a 32-bit value (volatile).
    fn read_u32(&self, physical: u64) -> u32;
    /// Reads a 64-bit value (volatile).
    fn read_u64(&self, physical: u64) -> u64;
    /// Writes a 16-bit value (volatile, not torn: the device may read it
    /// concurrently).
    fn write_u16(&self, physical: u64, value: u16);
    /// Writes a 32-bit value (volatile).
    fn write_u32(&self, physical: u64, value: u32);
    /// Writes a 64-bit value (volatile).
    fn write_u64(&self, physical: u64, value: u64);
    /// Copies `into.len()` bytes from `physical`.
    fn read_bytes(&self, physical: u64, into: &mut [u8]);
    /// Copies `bytes` to `physical`.
    fn write_bytes(&self, physical: u64, bytes: &[u8]);
    /// Orders the accesses before against those after, as named.
    fn barrier(&self, barrier: Barrier);
}
