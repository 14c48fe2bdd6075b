//! Frames lent to devices: the rings and buffers a driver hands a device
//! by physical address (DMA).
//!
//! A [`DmaFrame`] is a kernel frame (charged to no container) that the
//! kernel and one device share: the driver writes requests into it and
//! reads answers out through the machine's `DeviceFrame`, which reaches it
//! only by copies and single atomics; the device reads and writes it on
//! its own. Ring indexes are read and written as single atomics with
//! Acquire and Release order, so what either side wrote before an index is
//! visible after it.
//!
//! Must never hand out a frame's contents as a Rust reference (the device
//! writes them at any time) or free a frame a device may still use: a
//! driver keeps its frames until the device is reset.

use frames::FrameError;
use machine::frame_access::DeviceFrame;

use crate::physical_memory::{allocate_frame, free_held_frame};

/// One frame shared with a device (see the module comment). Dropping it
/// frees it.
pub struct DmaFrame {
    /// Always `Some` until dropped.
    frame: Option<DeviceFrame>,
}

impl DmaFrame {
    /// A zeroed frame; `OutOfMemory` when none is free.
    pub fn allocate() -> Result<Self, FrameError> {
        let frame = Self::allocate_for_transfer()?;
        if !frame.frame.as_ref().is_some_and(DeviceFrame::zero) {
            return Err(FrameError::OutOfRange);
        }
        Ok(frame)
    }

    /// A frame whose contents are whatever was there: for a transfer's
    /// buffer, which the driver (a write) or the device (a read) fills
    /// before anything of it is read, so zeroing it first would only
    /// double the memory traffic of every request.
    pub fn allocate_for_transfer() -> Result<Self, FrameError> {
        let frame = allocate_frame()?.into_frame().ok_or(FrameError::OutOfRange)?;
        Ok(Self { frame: Some(frame.lend_to_device()) })
    }

    /// Its physical address, for the device.
    pub fn physical(&self) -> u64 {
        self.frame.as_ref().map_or(0, DeviceFrame::physical)
    }

    /// Copies `buffer.len()` bytes at `offset` out of it; `false` when
    /// they do not lie inside it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        self.frame.as_ref().is_some_and(|frame| frame.read_bytes(offset, buffer))
    }

    /// Copies `bytes` to `offset`; `false` (nothing written) when they do
    /// not fit.
    pub fn write_bytes(&self, offset: usize, bytes: &[u8]) -> bool {
        self.frame.as_ref().is_some_and(|frame| frame.write_bytes(offset, bytes))
    }

    /// The aligned `u16` at `offset`, one Acquire load (an index the device writes).
    pub fn load_u16(&self, offset: usize) -> Option<u16> {
        self.frame.as_ref().and_then(|frame| frame.load_u16(offset))
    }

    /// Stores the aligned `u16` at `offset` with Release order (an index
    /// the device reads).
    pub fn store_u16(&self, offset: usize, value: u16) -> bool {
        self.frame.as_ref().is_some_and(|frame| frame.store_u16(offset, value))
    }
}

impl Drop for DmaFrame {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            free_held_frame(frame.into_frame());
        }
    }
}
