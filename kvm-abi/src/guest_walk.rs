//! A guest's own address translation, for the hypervisor's reads of the
//! instruction a guest stopped at: a linear address to a guest-physical
//! one through the guest's page tables (4-level long-mode tables, 3-level
//! PAE or 2-level 32-bit tables), or unchanged when paging is off.
//! Reads each table entry through the caller (`read`, guest-physical);
//! `None` when an entry is missing, not present, or cannot be read.
//! Must never loop: at most four reads.

const PRESENT: u64 = 1;
const LARGE: u64 = 1 << 7;
const ADDRESS: u64 = 0x000F_FFFF_FFFF_F000;

/// The guest's paging registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// CR0.
    pub cr0: u64,
    /// CR3.
    pub cr3: u64,
    /// CR4.
    pub cr4: u64,
    /// EFER.
    pub efer: u64,
}

/// The guest-physical address of linear `address`.
pub fn translate(paging: Paging, address: u64, mut read: impl FnMut(u64) -> Option<u64>) -> Option<u64> {
    const CR0_PG: u64 = 1 << 31;
    const CR4_PAE: u64 = 1 << 5;
    const EFER_LMA: u64 = 1 << 10;
    if paging.cr0 & CR0_PG == 0 {
        return Some(address);
    }
    if paging.efer & EFER_LMA != 0 || paging.cr4 & CR4_PAE != 0 {
        let long = paging.efer & EFER_LMA != 0;
        let (mut table, levels) = if long {
            (paging.cr3 & ADDRESS, 4)
        } else {
            // PAE: four 8-byte pointers at CR3 (32-byte aligned).
            let pointer = read((paging.cr3 & 0xFFFF_FFE0) + ((address >> 30) & 3) * 8)?;
            if pointer & PRESENT == 0 {
                return None;
            }
            (pointer & ADDRESS, 2)
        };
        for level in (0..levels).rev() {
            let shift = 12 + 9 * level;
            let entry = read(table + ((address >> shift) & 0x1FF) * 8)?;
            if entry & PRESENT == 0 {
                return None;
            }
            if level > 0 && level < 3 && entry & LARGE != 0 {
                let size = 1u64 << shift;
                return Some((entry & ADDRESS & !(size - 1)) | (address & (size - 1)));
            }
            table = entry & ADDRESS;
        }
        return Some(table | (address & 0xFFF));
    }
    // 32-bit tables: 4-byte entries, 4 MiB pages with PSE.
    let address = address & 0xFFFF_FFFF;
    let directory = read((paging.cr3 & 0xFFFF_F000) + (address >> 22) * 4)? & 0xFFFF_FFFF;
    if directory & PRESENT == 0 {
        return None;
    }
    if directory & LARGE != 0 && paging.cr4 & (1 << 4) != 0 {
        return Some((directory & 0xFFC0_0000) | (address & 0x3F_FFFF));
    }
    let entry = read((directory & 0xFFFF_F000) + ((address >> 12) & 0x3FF) * 4)? & 0xFFFF_FFFF;
    if entry & PRESENT == 0 {
        return None;
    }
    Some((entry & 0xFFFF_F000) | (address & 0xFFF))
}
