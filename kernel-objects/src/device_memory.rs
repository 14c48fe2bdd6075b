//! Frames lent to devices: the rings and buffers a driver hands a device
//! by physical address (DMA).
//!
//! A [`DmaFrame`] is a kernel frame (charged to no container) that the
//! kernel and one device share: the driver writes requests into it and
//! reads answers out through these methods, which reach it with the
//! direct-map key; the device reads and writes it on its own. Ring indexes
//! are read and written as single atomics with Acquire and Release order,
//! so what either side wrote before an index is visible after it.
//!
//! Must never hand out a frame's contents as a Rust reference (the device
//! writes them at any time) or free a frame a device may still use: a
//! driver keeps its frames until the device is reset.

use frames::FrameError;

use crate::physical_memory::{allocate_frame, KernelFrame};
use crate::untyped_memory::key;

/// One zeroed frame shared with a device (see the module comment).
pub struct DmaFrame {
    frame: KernelFrame,
}

impl DmaFrame {
    /// A zeroed frame; `OutOfMemory` when none is free.
    pub fn allocate() -> Result<Self, FrameError> {
        let frame = Self { frame: allocate_frame()? };
        if !key().is_some_and(|key| key.zero(frame.physical())) {
            return Err(FrameError::OutOfRange);
        }
        Ok(frame)
    }

    /// A frame whose contents are whatever was there: for a transfer's
    /// buffer, which the driver (a write) or the device (a read) fills
    /// before anything of it is read, so zeroing it first would only
    /// double the memory traffic of every request.
    pub fn allocate_for_transfer() -> Result<Self, FrameError> {
        Ok(Self { frame: allocate_frame()? })
    }

    /// Its physical address, for the device.
    pub fn physical(&self) -> u64 {
        self.frame.number().start_address().0
    }

    /// Copies `buffer.len()` bytes at `offset` out of it; `false` when
    /// they do not lie inside it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        key().is_some_and(|key| key.read_bytes(self.physical(), offset, buffer))
    }

    /// Copies `bytes` to `offset`; `false` (nothing written) when they do
    /// not fit.
    pub fn write_bytes(&self, offset: usize, bytes: &[u8]) -> bool {
        key().is_some_and(|key| key.write_bytes(self.physical(), offset, bytes))
    }

    /// The aligned `u16` at `offset`, one Acquire load (an index the device writes).
    pub fn load_u16(&self, offset: usize) -> Option<u16> {
        key().and_then(|key| key.load_u16(self.physical(), offset))
    }

    /// Stores the aligned `u16` at `offset` with Release order (an index
    /// the device reads).
    pub fn store_u16(&self, offset: usize, value: u16) -> bool {
        key().is_some_and(|key| key.store_u16(self.physical(), offset, value))
    }
}
