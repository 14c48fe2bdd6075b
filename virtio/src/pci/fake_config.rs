//! A configuration space in memory for tests: plain registers, BARs that
//! answer the sizing dance, and helpers to lay out headers and capability
//! lists. Test-only.

use super::ConfigSpace;
use core::cell::RefCell;
use std::vec::Vec;

/// 256 bytes of configuration space; BAR registers keep their read-only
/// bits when written.
pub(crate) struct FakeConfig {
    registers: RefCell<[u32; 64]>,
    writable: [u32; 64],
    pub(crate) writes: RefCell<Vec<(u16, u32)>>,
}

impl FakeConfig {
    pub(crate) fn new() -> Self {
        let mut writable = [u32::MAX; 64];
        // Unimplemented BARs read back zero after the sizing write.
        writable[4..10].fill(0);
        Self {
            registers: RefCell::new([0; 64]),
            writable,
            writes: RefCell::new(Vec::new()),
        }
    }

    /// A virtio function with `device_id` and `subsystem` (device type for
    /// transitional ids), general header, status saying "capability list".
    pub(crate) fn virtio(device_id: u16, subsystem: u16) -> Self {
        let config = Self::new();
        config.set_u16(0x00, 0x1AF4);
        config.set_u16(0x02, device_id);
        config.set_u16(0x06, 0x10);
        config.set_u16(0x2E, subsystem);
        config
    }

    pub(crate) fn set_u8(&self, offset: u16, value: u8) {
        let mut registers = self.registers.borrow_mut();
        let slot = &mut registers[usize::from(offset / 4)];
        let shift = 8 * (offset % 4);
        *slot = (*slot & !(0xFF << shift)) | (u32::from(value) << shift);
    }

    pub(crate) fn set_u16(&self, offset: u16, value: u16) {
        self.set_u8(offset, value as u8);
        self.set_u8(offset + 1, (value >> 8) as u8);
    }

    pub(crate) fn set_u32(&self, offset: u16, value: u32) {
        self.registers.borrow_mut()[usize::from(offset / 4)] = value;
    }

    /// BAR `index` holds `raw`; a sizing write keeps the bits outside
    /// `!(size - 1)` (the low read-only type bits and the address bits
    /// below the size).
    pub(crate) fn set_bar(&mut self, index: u16, raw: u32, size: u64) {
        let offset = 0x10 + 4 * index;
        self.set_u32(offset, raw);
        self.writable[usize::from(offset / 4)] = match size {
            0 => 0,
            size => !(size - 1) as u32,
        };
    }

    /// The upper half of a 64-bit BAR at `index` (so `index - 1` is the
    /// lower half) for a region of `size` bytes.
    pub(crate) fn set_bar_upper(&mut self, index: u16, raw: u32, size: u64) {
        let offset = 0x10 + 4 * index;
        self.set_u32(offset, raw);
        self.writable[usize::from(offset / 4)] = (!(size - 1) >> 32) as u32;
    }

    /// A capability with `id` at `offset`, linking to `next`.
    pub(crate) fn set_capability(&self, offset: u16, id: u8, next: u8) {
        self.set_u8(offset, id);
        self.set_u8(offset + 1, next);
    }

    /// A virtio vendor capability (16 bytes, 20 for notify).
    pub(crate) fn set_virtio_capability(&self, at: u16, next: u8, cfg_type: u8, bar: u8, offset: u32, length: u32) {
        self.set_capability(at, 0x09, next);
        self.set_u8(at + 2, if cfg_type == 2 { 20 } else { 16 });
        self.set_u8(at + 3, cfg_type);
        self.set_u8(at + 4, bar);
        self.set_u32(at + 8, offset);
        self.set_u32(at + 12, length);
    }
}

impl ConfigSpace for FakeConfig {
    fn read_u32(&self, offset: u16) -> u32 {
        assert!(
            offset.is_multiple_of(4) && offset < 256,
            "unaligned or out-of-range read at {offset:#x}"
        );
        self.registers.borrow()[usize::from(offset / 4)]
    }

    fn write_u32(&self, offset: u16, value: u32) {
        assert!(
            offset.is_multiple_of(4) && offset < 256,
            "unaligned or out-of-range write at {offset:#x}"
        );
        self.writes.borrow_mut().push((offset, value));
        let index = usize::from(offset / 4);
        let mut registers = self.registers.borrow_mut();
        let writable = self.writable[index];
        registers[index] = (value & writable) | (registers[index] & !writable);
    }
}
