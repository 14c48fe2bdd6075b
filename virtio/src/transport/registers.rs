//! Register access: what the kernel supplies for each register block (I/O
//! ports for the legacy BAR, MMIO for the modern structures).
//!
//! Must never: be asked for an offset outside the block. The transports
//! check every offset that depends on a device-reported value (notify
//! offsets, device configuration) against the block's length first.

/// One block of device registers, addressed by byte offset from its start.
/// Accesses are little-endian, single and untorn (one `in`/`out` or one
/// volatile MMIO access of the named width), never merged or reordered
/// with each other.
pub trait Registers {
    /// Reads the byte at `offset`.
    fn read_u8(&self, offset: u32) -> u8;
    /// Reads the 16-bit register at `offset`.
    fn read_u16(&self, offset: u32) -> u16;
    /// Reads the 32-bit register at `offset`.
    fn read_u32(&self, offset: u32) -> u32;
    /// Writes the byte at `offset`.
    fn write_u8(&self, offset: u32, value: u8);
    /// Writes the 16-bit register at `offset`.
    fn write_u16(&self, offset: u32, value: u16);
    /// Writes the 32-bit register at `offset`.
    fn write_u32(&self, offset: u32, value: u32);
}

/// Register access by width: an implementor that handles every width in
/// one place (`width` is 1, 2 or 4; a read gives the value in the low
/// bits, a write takes it there) gets [`Registers`] from this.
pub trait RegistersByWidth {
    /// Reads the `width`-byte register at `offset`.
    fn read_width(&self, offset: u32, width: u32) -> u32;
    /// Writes the low `width` bytes of `value` to the register at `offset`.
    fn write_width(&self, offset: u32, width: u32, value: u32);
}

impl<T: RegistersByWidth> Registers for T {
    fn read_u8(&self, offset: u32) -> u8 {
        self.read_width(offset, 1) as u8
    }
    fn read_u16(&self, offset: u32) -> u16 {
        self.read_width(offset, 2) as u16
    }
    fn read_u32(&self, offset: u32) -> u32 {
        self.read_width(offset, 4)
    }
    fn write_u8(&self, offset: u32, value: u8) {
        self.write_width(offset, 1, value.into());
    }
    fn write_u16(&self, offset: u32, value: u16) {
        self.write_width(offset, 2, value.into());
    }
    fn write_u32(&self, offset: u32, value: u32) {
        self.write_width(offset, 4, value);
    }
}

/// A register block and its length in bytes (from the BAR size or the
/// virtio capability's `length`).
#[derive(Debug)]
pub struct Region<R> {
    /// The access to the block.
    pub registers: R,
    /// How many bytes it spans.
    pub length: u32,
}

impl<R> Region<R> {
    /// Whether `width` bytes at `offset` lie inside the block.
    pub fn holds(&self, offset: u32, width: u32) -> bool {
        offset.checked_add(width).is_some_and(|end| end <= self.length)
    }
}
