//! The configuration space of one PCI function, as the kernel reaches it
//! (ports 0xCF8/0xCFC: 256 bytes, dword accesses).
//!
//! Must never: ask the kernel for an unaligned dword or an offset at or past
//! [`CONFIG_SPACE_SIZE`]; every offset this crate passes is a multiple of 4
//! below 256, even when it came from a device's capability pointers.

/// Bytes of configuration space reachable through the port mechanism.
pub const CONFIG_SPACE_SIZE: u16 = 256;

/// One function's configuration space. The kernel implements the two dword
/// accesses (selecting bus, device and function is its business); the byte
/// and word reads are derived from them.
pub trait ConfigSpace {
    /// Reads the dword at `offset`, a multiple of 4 below 256.
    fn read_u32(&self, offset: u16) -> u32;

    /// Writes the dword at `offset`, a multiple of 4 below 256.
    fn write_u32(&self, offset: u16, value: u32);

    /// Reads the little-endian word at `offset` (even, below 256).
    fn read_u16(&self, offset: u16) -> u16 {
        let dword = self.read_u32(offset & !3);
        (dword >> (8 * (offset & 2))) as u16
    }

    /// Reads the byte at `offset` (below 256).
    fn read_u8(&self, offset: u16) -> u8 {
        let dword = self.read_u32(offset & !3);
        (dword >> (8 * (offset & 3))) as u8
    }
}

impl<T: ConfigSpace + ?Sized> ConfigSpace for &T {
    fn read_u32(&self, offset: u16) -> u32 {
        (**self).read_u32(offset)
    }

    fn write_u32(&self, offset: u16, value: u32) {
        (**self).write_u32(offset, value)
    }
}
