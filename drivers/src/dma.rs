//! The DMA memory of one device: its ring and request-header frames, seen
//! through `virtio`'s `DmaMemory` trait by physical address.
//!
//! Must never touch memory outside its own frames: an address no frame
//! holds reads as zero and is not written (the queue only uses addresses
//! inside its layout, which lies in these frames).

use alloc::vec::Vec;

use kernel_objects::device_memory::DmaFrame;
use virtio::queue::{Barrier, DmaMemory};

const FRAME_BYTES: u64 = 4096;

/// Frames shared with one device.
pub struct DeviceFrames {
    frames: Vec<DmaFrame>,
    /// Indices into `frames` by physical address (a network card has ~100
    /// frames: every ring access looks one up).
    by_address: Vec<usize>,
}

impl DeviceFrames {
    pub fn new(frames: Vec<DmaFrame>) -> Self {
        let mut by_address: Vec<usize> = (0..frames.len()).collect();
        by_address.sort_by_key(|&index| frames[index].physical());
        Self { frames, by_address }
    }

    /// Frame `index`'s physical address.
    pub fn physical(&self, index: usize) -> Option<u64> {
        self.frames.get(index).map(DmaFrame::physical)
    }

    /// The frame holding `[physical, physical + width)`, and the offset.
    fn find(&self, physical: u64, width: u64) -> Option<(&DmaFrame, usize)> {
        let after = self.by_address.partition_point(|&index| self.frames[index].physical() <= physical);
        let frame = &self.frames[*self.by_address.get(after.checked_sub(1)?)?];
        if physical >= frame.physical() + FRAME_BYTES {
            return None;
        }
        let offset = physical - frame.physical();
        (offset + width <= FRAME_BYTES).then_some((frame, offset as usize))
    }

    fn read_array<const N: usize>(&self, physical: u64) -> [u8; N] {
        let mut bytes = [0; N];
        if let Some((frame, offset)) = self.find(physical, N as u64) {
            frame.read_bytes(offset, &mut bytes);
        }
        bytes
    }

    fn write_array(&self, physical: u64, bytes: &[u8]) {
        if let Some((frame, offset)) = self.find(physical, bytes.len() as u64) {
            frame.write_bytes(offset, bytes);
        }
    }
}

impl DmaMemory for DeviceFrames {
    fn read_u16(&self, physical: u64) -> u16 {
        self.find(physical, 2).and_then(|(frame, offset)| frame.load_u16(offset)).unwrap_or(0)
    }

    fn read_u32(&self, physical: u64) -> u32 {
        u32::from_le_bytes(self.read_array(physical))
    }

    fn read_u64(&self, physical: u64) -> u64 {
        u64::from_le_bytes(self.read_array(physical))
    }

    fn write_u16(&self, physical: u64, value: u16) {
        if let Some((frame, offset)) = self.find(physical, 2) {
            frame.store_u16(offset, value);
        }
    }

    fn write_u32(&self, physical: u64, value: u32) {
        self.write_array(physical, &value.to_le_bytes());
    }

    fn write_u64(&self, physical: u64, value: u64) {
        self.write_array(physical, &value.to_le_bytes());
    }

    fn read_bytes(&self, physical: u64, into: &mut [u8]) {
        match self.find(physical, into.len() as u64) {
            Some((frame, offset)) => {
                frame.read_bytes(offset, into);
            }
            None => into.fill(0),
        }
    }

    fn write_bytes(&self, physical: u64, bytes: &[u8]) {
        self.write_array(physical, bytes);
    }

    fn barrier(&self, barrier: Barrier) {
        use core::sync::atomic::{compiler_fence, fence, Ordering};
        match barrier {
            // x86-64 keeps stores in order and loads in order (module
            // comment of `virtio::queue::dma`): only the compiler must not
            // move accesses across.
            Barrier::StoresBeforeStores | Barrier::LoadsBeforeLoads => compiler_fence(Ordering::SeqCst),
            // A store may pass a later load: `mfence`.
            Barrier::StoresBeforeLoads => fence(Ordering::SeqCst),
        }
    }
}
