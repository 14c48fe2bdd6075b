//! The x86-64 page-table entry format, as this layer uses it: user leaves
//! and the intermediate tables above them. Bit 9 (free for software) marks
//! a private page that is shared after a fork: it is mapped read-only and
//! copied (or taken over) at the first write.

use crate::Rights;

pub(crate) const PRESENT: u64 = 1;
pub(crate) const WRITABLE: u64 = 1 << 1;
pub(crate) const USER: u64 = 1 << 2;
pub(crate) const COPY_ON_WRITE: u64 = 1 << 9;
pub(crate) const NO_EXECUTE: u64 = 1 << 63;
pub(crate) const ADDRESS_MASK: u64 = 0x000F_FFFF_FFFF_F000;

/// Entry of an intermediate table: everything allowed, leaves decide.
pub(crate) fn table(frame: u64) -> u64 {
    (frame & ADDRESS_MASK) | PRESENT | WRITABLE | USER
}

/// A user leaf mapping `frame` with `rights` (never called with NONE).
pub(crate) fn leaf(frame: u64, rights: Rights, copy_on_write: bool) -> u64 {
    let mut entry = (frame & ADDRESS_MASK) | PRESENT | USER;
    if rights.write() && !copy_on_write {
        entry |= WRITABLE;
    }
    if !rights.execute() {
        entry |= NO_EXECUTE;
    }
    if copy_on_write {
        entry |= COPY_ON_WRITE;
    }
    entry
}

/// Bit 11 (free for software) with PRESENT clear: a page whose rights are
/// `NONE` for now; the entry still holds its frame, so `protect` can give
/// access back with the contents intact.
pub(crate) const INACCESSIBLE: u64 = 1 << 11;

/// Whether the entry holds a frame (mapped, or inaccessible for now).
pub(crate) fn holds_frame(entry: u64) -> bool {
    entry & (PRESENT | INACCESSIBLE) != 0
}

pub(crate) fn is_present(entry: u64) -> bool {
    entry & PRESENT != 0
}

pub(crate) fn frame(entry: u64) -> u64 {
    entry & ADDRESS_MASK
}

pub(crate) fn is_copy_on_write(entry: u64) -> bool {
    entry & COPY_ON_WRITE != 0
}

/// Index into the table at `level` (3 = root … 0 = leaf table) for `address`.
pub(crate) fn index(address: u64, level: u32) -> usize {
    ((address >> (12 + 9 * level)) & 0x1FF) as usize
}
