//! Four-level page tables: building the kernel's address space.
//!
//! Page-table frames are reached through the direct map. This file builds
//! the kernel's final tables (direct map, image with per-section rights,
//! heap, guarded stacks, device memory) and switches to them; user address
//! spaces come with the virtual-memory layer, which will drive the same
//! entry format through a safe API.

use super::boot_frames::{align_up, zero_frame, BootFrames};
use super::frame_access::{Frame, RootToken};
use super::cpu;
use super::layout::{self, physical_to_virtual, Range, LARGE_PAGE_SIZE, PAGE_SIZE};

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const WRITE_THROUGH: u64 = 1 << 3;
pub const CACHE_DISABLE: u64 = 1 << 4;
pub const LARGE: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;
pub const NO_EXECUTE: u64 = 1 << 63;
const ADDRESS_MASK: u64 = 0x000F_FFFF_FFFF_F000;

/// Why a mapping could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    OutOfFrames,
    AlreadyMapped { virtual_address: u64 },
}

/// The page size of one mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageSize {
    Small,
    Large,
}

/// Where page-table and stack frames come from (the boot allocator during
/// boot, the frame layer afterwards). The machine layer zeroes every frame
/// it gets, so the source only promises that the frame is free: correctness
/// of that promise is the frame layer's spec, checked by its refinement tests.
pub trait TableFrameSource {
    /// A held frame, or `None` when out of memory.
    fn allocate_table(&mut self) -> Option<Frame>;

    /// Takes back a frame this source gave out (a table or stack frame
    /// that was unmapped and invalidated everywhere).
    fn free_table(&mut self, frame: Frame);
}

impl TableFrameSource for BootFrames {
    fn allocate_table(&mut self) -> Option<Frame> {
        self.allocate_zeroed().map(Frame::of_machine)
    }

    /// Boot frames are never given back (boot builds only what lives
    /// forever); a frame freed here stays used.
    fn free_table(&mut self, frame: Frame) {
        let _ = frame.into_machine();
    }
}

/// Takes a frame from `frames` and zeroes it.
fn zeroed_frame(frames: &mut dyn TableFrameSource) -> Result<u64, MapError> {
    let frame = frames.allocate_table().ok_or(MapError::OutOfFrames)?.into_machine();
    zero_frame(frame);
    Ok(frame)
}

fn entry_pointer(table: u64, index: usize) -> *mut u64 {
    (physical_to_virtual(table) + (index as u64) * 8) as *mut u64
}

fn read_entry(table: u64, index: usize) -> u64 {
    // SAFETY: `table` is the physical address of a page-table frame owned by
    // this module and covered by the direct map; `index < 512`.
    unsafe { entry_pointer(table, index).read_volatile() }
}

fn write_entry(table: u64, index: usize, value: u64) {
    if index >= 256 && table == super::start::kernel_root() {
        // Roots copied before now carry an old kernel half.
        super::frame_access::KERNEL_HALF_EPOCH.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    }
    // SAFETY: as in `read_entry`; page-table frames are only written by this
    // module, with the kernel address-space lock held (or during boot).
    unsafe { entry_pointer(table, index).write_volatile(value) }
}

fn table_index(virtual_address: u64, level: u32) -> usize {
    ((virtual_address >> (12 + 9 * level)) & 0x1FF) as usize
}

/// The next-level table under `table[index]`, created if missing.
fn next_table(table: u64, index: usize, frames: &mut dyn TableFrameSource) -> Result<u64, MapError> {
    let entry = read_entry(table, index);
    if entry & PRESENT != 0 {
        return Ok(entry & ADDRESS_MASK);
    }
    let frame = zeroed_frame(frames)?;
    // Intermediate entries grant everything; leaves decide the rights.
    write_entry(table, index, frame | PRESENT | WRITABLE);
    Ok(frame)
}

/// Maps one page in the tables rooted at `root`.
pub(crate) fn map(
    root: u64,
    virtual_address: u64,
    physical_address: u64,
    flags: u64,
    size: PageSize,
    frames: &mut dyn TableFrameSource,
) -> Result<(), MapError> {
    let leaf_level = match size {
        PageSize::Small => 0,
        PageSize::Large => 1,
    };
    let mut table = root;
    for level in (leaf_level + 1..=3).rev() {
        table = next_table(table, table_index(virtual_address, level), frames)?;
    }
    let index = table_index(virtual_address, leaf_level);
    if read_entry(table, index) & PRESENT != 0 {
        return Err(MapError::AlreadyMapped { virtual_address });
    }
    let large = if size == PageSize::Large { LARGE } else { 0 };
    write_entry(table, index, (physical_address & ADDRESS_MASK) | flags | large | PRESENT);
    Ok(())
}

/// The leaf entry mapping `virtual_address` in this CPU's active tables,
/// if any (flags included).
pub fn translate(virtual_address: u64) -> Option<u64> {
    translate_in(active_root(), virtual_address)
}

/// The leaf entry mapping `virtual_address` in the tables rooted at
/// `root`, if any. Private to the machine layer: `root` must be a table
/// the caller owns.
pub(crate) fn translate_in(root: u64, virtual_address: u64) -> Option<u64> {
    let mut table = root;
    for level in (0..=3).rev() {
        let entry = read_entry(table, table_index(virtual_address, level));
        if entry & PRESENT == 0 {
            return None;
        }
        if level == 0 || entry & LARGE != 0 {
            return Some(entry);
        }
        table = entry & ADDRESS_MASK;
    }
    None
}

/// Maps `[start, end)` of the kernel image with `flags`, 4 KiB pages.
fn map_image_part(root: u64, part: Range, flags: u64, frames: &mut BootFrames) -> Result<(), MapError> {
    let mut address = part.start;
    while address < part.end {
        map(root, address, address - layout::KERNEL_VIRTUAL_BASE, flags, PageSize::Small, frames)?;
        address += PAGE_SIZE;
    }
    Ok(())
}

/// Builds the kernel's final tables: direct map of `[0, memory_end)` and the
/// kernel image with text read-only+executable, rodata read-only, data
/// no-execute. Returns the root's physical address.
pub(crate) fn build_kernel_tables(memory_end: u64, frames: &mut BootFrames) -> Result<u64, MapError> {
    let root = zeroed_frame(frames)?;
    let data_flags = WRITABLE | NO_EXECUTE | GLOBAL;
    let mut physical = 0;
    while physical < align_up(memory_end, LARGE_PAGE_SIZE) {
        map(root, physical_to_virtual(physical), physical, data_flags, PageSize::Large, frames)?;
        physical += LARGE_PAGE_SIZE;
    }
    map_image_part(root, layout::kernel_text(), GLOBAL, frames)?;
    map_image_part(root, layout::kernel_rodata(), NO_EXECUTE | GLOBAL, frames)?;
    map_image_part(root, layout::kernel_data(), data_flags, frames)?;
    Ok(root)
}

/// Maps fresh zeroed frames at `[start, end)`, read-write, no-execute.
pub(crate) fn map_fresh(root: u64, range: Range, frames: &mut dyn TableFrameSource) -> Result<(), MapError> {
    let mut address = range.start;
    while address < range.end {
        let frame = zeroed_frame(frames)?;
        map(root, address, frame, WRITABLE | NO_EXECUTE | GLOBAL, PageSize::Small, frames)?;
        address += PAGE_SIZE;
    }
    Ok(())
}

/// Maps device memory `[physical, physical + length)` uncached at `virtual_address`.
pub(crate) fn map_device(root: u64, virtual_address: u64, physical: u64, length: u64, frames: &mut BootFrames) -> Result<(), MapError> {
    let flags = WRITABLE | NO_EXECUTE | GLOBAL | CACHE_DISABLE | WRITE_THROUGH;
    let mut offset = 0;
    while offset < length {
        map(root, virtual_address + offset, physical + offset, flags, PageSize::Small, frames)?;
        offset += PAGE_SIZE;
    }
    Ok(())
}

/// Loads `root` into CR3.
///
/// # Safety
/// `root` must map the kernel image, the current stack and everything the
/// caller will touch next exactly as the current tables do.
pub unsafe fn activate(root: u64) {
    // SAFETY: the caller guarantees the new tables keep the running code and
    // data mapped at the same addresses.
    unsafe { core::arch::asm!("mov cr3, {}", in(reg) root, options(nostack, preserves_flags)) };
}

/// The root of the tables this CPU is using.
pub fn active_root() -> u64 {
    cpu::read_cr3() & ADDRESS_MASK
}

/// Whether every entry of `table` is empty.
fn is_empty_table(table: u64) -> bool {
    (0..512).all(|index| read_entry(table, index) & PRESENT == 0)
}

/// Unmaps the 4 KiB pages of `range` in the tables rooted at `root`, giving
/// each mapped frame to `freed`, and frees (through `freed` too) every
/// page table below the second level that is left empty. Tables the root
/// points at directly are kept: their entries are shared with every
/// address space's root. The caller shoots the TLBs down before it reuses
/// the frames.
pub(crate) fn unmap_and_free(root: u64, range: Range, freed: &mut dyn FnMut(u64)) {
    let mut address = range.start;
    while address < range.end {
        // The path root → third → second → leaf table, where present.
        let mut path = [root; 4];
        let mut present = true;
        for level in (1..=3).rev() {
            let entry = read_entry(path[level], table_index(address, level as u32));
            if entry & PRESENT == 0 || entry & LARGE != 0 {
                present = false;
                break;
            }
            path[level - 1] = entry & ADDRESS_MASK;
        }
        if present {
            let leaf_index = table_index(address, 0);
            let entry = read_entry(path[0], leaf_index);
            if entry & PRESENT != 0 {
                write_entry(path[0], leaf_index, 0);
                freed(entry & ADDRESS_MASK);
            }
            // Free emptied leaf and second-level tables, bottom up.
            for level in 0..=1 {
                if !is_empty_table(path[level]) {
                    break;
                }
                write_entry(path[level + 1], table_index(address, level as u32 + 1), 0);
                freed(path[level]);
            }
        }
        address += PAGE_SIZE;
    }
}

/// Loads the tables `token` names into CR3 if they are not loaded
/// already. Refused (`false`) when the token's space gave its root back,
/// or when the root's kernel half is not the kernel's (checked in full only
/// if the kernel half changed since the root was made), so the running
/// kernel stays mapped exactly as before.
pub fn switch_address_space(token: RootToken) -> bool {
    let _off = cpu::InterruptsOff::new();
    switch_with_token(&token)
}

/// [`switch_address_space`] with interrupts off already (so this CPU's
/// record of its root stays this CPU's).
#[inline(always)]
pub(crate) fn switch_with_token(token: &RootToken) -> bool {
    // Loaded by an earlier switch, which recorded it: it cannot have been
    // given back since.
    active_root() == token.root || load_with_token(token)
}

/// [`switch_with_token`] when the root is not loaded yet.
fn load_with_token(token: &RootToken) -> bool {
    let root = token.root;
    let me = super::percpu::current_index();
    if !super::frame_access::announce_load(token, me) {
        return false;
    }
    let kernel = super::start::kernel_root();
    let stale = token.epoch != super::frame_access::KERNEL_HALF_EPOCH.load(core::sync::atomic::Ordering::SeqCst);
    if stale && (256..512).any(|index| read_entry(root, index) != read_entry(kernel, index)) {
        super::frame_access::announce(me, active_root());
        return false;
    }
    // SAFETY: `root` is a live root of the machine's record (announced
    // above: it cannot be given back while this CPU names it), made by
    // `SpaceTables::install_root` with the kernel's half, whose entries
    // no write outside the machine can change; it maps all kernel code,
    // data, stacks and heap as the kernel's root does.
    unsafe { activate(root) };
    true
}

/// Loads the kernel's own tables (before an address space this CPU ran is
/// destroyed).
pub fn switch_to_kernel_tables() {
    let _off = cpu::InterruptsOff::new();
    let kernel = super::start::kernel_root();
    super::frame_access::announce(super::percpu::current_index(), kernel);
    if active_root() != kernel {
        // SAFETY: the kernel's own root maps everything the kernel uses.
        unsafe { activate(kernel) };
    }
}
