//! The kernel's virtual address layout and the direct map of physical memory.
//!
//! | region | base | what |
//! | --- | --- | --- |
//! | direct map | `0xFFFF_8000_0000_0000` | all physical memory, read-write, no-execute |
//! | heap | `0xFFFF_A000_0000_0000` | the kernel heap |
//! | stacks | `0xFFFF_C000_0000_0000` | kernel stacks, each above an unmapped guard |
//! | device memory | `0xFFFF_D000_0000_0000` | APIC and other MMIO, uncached |
//! | kernel image | `0xFFFF_FFFF_8000_0000` | text, rodata, data, bss |

use crate::bootinfo::PhysicalReader;

pub const DIRECT_MAP_BASE: u64 = 0xFFFF_8000_0000_0000;
pub const HEAP_BASE: u64 = 0xFFFF_A000_0000_0000;
pub const STACKS_BASE: u64 = 0xFFFF_C000_0000_0000;
pub const DEVICE_MEMORY_BASE: u64 = 0xFFFF_D000_0000_0000;
pub const KERNEL_VIRTUAL_BASE: u64 = 0xFFFF_FFFF_8000_0000;
pub const PAGE_SIZE: u64 = 4096;
pub const LARGE_PAGE_SIZE: u64 = 2 * 1024 * 1024;

/// The boot page tables map only the first 4 GiB at the direct-map base.
pub const BOOT_DIRECT_MAP_LIMIT: u64 = 4 << 30;

/// Virtual address of physical `address` in the direct map.
pub const fn physical_to_virtual(address: u64) -> u64 {
    DIRECT_MAP_BASE + address
}

/// Reads physical memory below `limit` through the direct map.
pub struct DirectMapReader {
    pub limit: u64,
}

impl PhysicalReader for DirectMapReader {
    fn read(&self, address: u64, length: usize) -> Option<&[u8]> {
        let end = address.checked_add(length as u64)?;
        if end > self.limit {
            return None;
        }
        // SAFETY: the direct map covers [0, limit) while this reader exists
        // (the boot tables map 4 GiB, the final tables all memory). Boot and
        // firmware tables are not written while they are parsed, so a shared
        // view of them is sound.
        Some(unsafe { core::slice::from_raw_parts(physical_to_virtual(address) as *const u8, length) })
    }
}

extern "C" {
    static __kernel_physical_start: u8;
    static __kernel_physical_end: u8;
    static __text_start: u8;
    static __text_end: u8;
    static __rodata_start: u8;
    static __rodata_end: u8;
    static __data_start: u8;
    static __data_end: u8;
    static __ksyms_start: u8;
    static __ksyms_end: u8;
}

/// A `[start, end)` address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub end: u64,
}

macro_rules! linker_range {
    ($start:ident, $end:ident) => {
        Range { start: core::ptr::addr_of!($start) as u64, end: core::ptr::addr_of!($end) as u64 }
    };
}

/// Physical extent of the whole kernel image (boot part included).
pub fn kernel_physical() -> Range {
    linker_range!(__kernel_physical_start, __kernel_physical_end)
}

pub fn kernel_text() -> Range {
    linker_range!(__text_start, __text_end)
}

pub fn kernel_rodata() -> Range {
    linker_range!(__rodata_start, __rodata_end)
}

pub fn kernel_data() -> Range {
    linker_range!(__data_start, __data_end)
}

/// The symbol table section filled in after linking.
pub fn kernel_symbols() -> &'static [u8] {
    let range = linker_range!(__ksyms_start, __ksyms_end);
    // SAFETY: the linker script places `.ksyms` in the read-only data of the
    // image, mapped for the kernel's whole life and never written at run time.
    unsafe { core::slice::from_raw_parts(range.start as *const u8, (range.end - range.start) as usize) }
}

/// Reserves the `.ksyms` section; `xtask` overwrites its bytes in the ELF.
#[used]
#[unsafe(link_section = ".ksyms")]
static SYMBOL_TABLE_SPACE: [u8; 1 << 20] = [0; 1 << 20];
