//! Physical frames for the layers above, through handles whose every use
//! the machine checks against its record of what each frame is
//! ([`crate::frame_states`]): no safe function here touches a frame the
//! caller does not hold.
//!
//! - [`Frame`]: a frame held by one handle (claimed from Free, given back
//!   by [`Frame::release`]); its contents are read and written through it.
//! - [`DeviceFrame`]: a held frame lent to a device for DMA; both sides
//!   write it, so it is reached only by copies and single atomics.
//! - [`SharedPage`]: one reference to a user page that shared-memory
//!   objects keep; the page goes back only after its last reference.
//! - [`SpaceTables`]: one user address space's page tables. Every entry
//!   write is checked (a table links only a frame the space adopted, a
//!   leaf only an adopted frame or a mapped page, counted), and copies to
//!   and from user memory walk the space's own tables, so they reach only
//!   pages it maps. A [`RootToken`] names its root for loading into CR3;
//!   the root goes back only when no CPU has it loaded.
//!
//! The allocator (`frames`, in `kernel-objects`) decides which free frame
//! to hand out; a handle exists only after the machine agreed it was free,
//! so a wrong number from above is an error, never an alias. Indexes and
//! offsets are checked too: an access outside the frame is refused.

extern crate alloc;

use core::cell::Cell;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};
use crate::loaded_roots::LoadedRoot;

use super::layout::{physical_to_virtual, Range, PAGE_SIZE};
use super::percpu::MAX_CPUS;
use super::set_once::SetOnce;
use crate::frame_states::{entry_bits, named_frame, FrameState, FrameStates, MAX_SPACE};

static STATES: SetOnce<FrameStates> = SetOnce::new();

/// Builds the record for the frames below `memory_end`, marking `free`
/// (the ranges handed to the frame allocator) Free and everything else
/// Reserved. Machine-private: only the boot sequence knows what is free.
pub(crate) fn init(memory_end: u64, free: &[Range]) -> bool {
    let Some(states) = FrameStates::new(0, (memory_end / PAGE_SIZE) as usize) else { return false };
    for range in free {
        states.mark_free(range.start, range.end);
    }
    STATES.set(alloc::boxed::Box::leak(alloc::boxed::Box::new(states))).is_ok()
}

fn states() -> Option<&'static FrameStates> {
    STATES.get()
}

/// The state of `frame` (Reserved before boot built the record).
fn state(frame: u64) -> FrameState {
    states().map_or(FrameState::Reserved, |states| states.state(frame))
}

fn swap(frame: u64, from: FrameState, to: FrameState) -> bool {
    states().is_some_and(|states| states.swap(frame, from, to).is_ok())
}

/// Words in a frame (page-table entries in a table frame).
pub const WORDS_PER_FRAME: usize = (PAGE_SIZE / 8) as usize;

/// True when `frame` is a page-aligned address the direct map covers.
fn is_frame(frame: u64) -> bool {
    frame % PAGE_SIZE == 0 && frame.checked_add(PAGE_SIZE).is_some_and(|end| end <= super::start::direct_map_end())
}

/// Word `index` of `frame`; `None` for a bad frame or index.
fn read_word(frame: u64, index: usize) -> Option<u64> {
    if !is_frame(frame) || index >= WORDS_PER_FRAME {
        return None;
    }
    // SAFETY: the word lies inside a frame covered by the direct map that
    // the caller reaches through a handle or its space's checked tables
    // (module comment), so no other code writes it meanwhile except the
    // MMU or user space, which is why it is accessed as volatile and
    // never as a reference.
    Some(unsafe { ((physical_to_virtual(frame) + index as u64 * 8) as *const u64).read_volatile() })
}

/// Words `first..first + out.len()` of `frame` into `out`; `false`
/// (nothing read) for a bad frame or range.
fn read_words(frame: u64, first: usize, out: &mut [u64]) -> bool {
    if !is_frame(frame) || first.checked_add(out.len()).is_none_or(|end| end > WORDS_PER_FRAME) {
        return false;
    }
    let base = physical_to_virtual(frame) + first as u64 * 8;
    for (index, word) in out.iter_mut().enumerate() {
        // SAFETY: as in `read_word`: each word lies inside the frame.
        *word = unsafe { ((base + index as u64 * 8) as *const u64).read_volatile() };
    }
    true
}

/// Writes word `index` of `frame`; `false` (nothing written) for a bad
/// frame or index.
fn write_word(frame: u64, index: usize, value: u64) -> bool {
    if !is_frame(frame) || index >= WORDS_PER_FRAME {
        return false;
    }
    // SAFETY: as in `read_word`.
    unsafe { ((physical_to_virtual(frame) + index as u64 * 8) as *mut u64).write_volatile(value) };
    true
}

/// Fills `frame` with zeroes.
fn zero(frame: u64) -> bool {
    if !is_frame(frame) {
        return false;
    }
    // SAFETY: the whole frame is covered by the direct map and reached
    // through the caller's handle or space (module comment).
    unsafe { core::ptr::write_bytes(physical_to_virtual(frame) as *mut u8, 0, PAGE_SIZE as usize) };
    true
}

/// Copies frame `from` into frame `to` (distinct frames).
fn copy(from: u64, to: u64) -> bool {
    if !is_frame(from) || !is_frame(to) || from == to {
        return false;
    }
    // SAFETY: both frames are covered by the direct map, reached through
    // the caller's space (module comment), and distinct whole frames, so
    // they do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            physical_to_virtual(from) as *const u8,
            physical_to_virtual(to) as *mut u8,
            PAGE_SIZE as usize,
        )
    };
    true
}

/// Copies `buffer.len()` bytes at `offset` of `frame` into `buffer`.
fn read_bytes(frame: u64, offset: usize, buffer: &mut [u8]) -> bool {
    if !is_frame(frame) || offset.checked_add(buffer.len()).is_none_or(|end| end > PAGE_SIZE as usize) {
        return false;
    }
    // SAFETY: the range lies inside a frame of the direct map reached
    // through the caller's handle or space (module comment), and cannot
    // overlap `buffer`: kernel memory is never such a frame.
    unsafe {
        core::ptr::copy_nonoverlapping((physical_to_virtual(frame) + offset as u64) as *const u8, buffer.as_mut_ptr(), buffer.len())
    };
    true
}

/// Copies `bytes` to `offset` of `frame`.
fn write_bytes(frame: u64, offset: usize, bytes: &[u8]) -> bool {
    if !is_frame(frame) || offset.checked_add(bytes.len()).is_none_or(|end| end > PAGE_SIZE as usize) {
        return false;
    }
    // SAFETY: as in `read_bytes`.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), (physical_to_virtual(frame) + offset as u64) as *mut u8, bytes.len()) };
    true
}

/// Atomically replaces the aligned `u32` at `offset` of `frame` with
/// `change(old)` while `change` gives `Some`, trying again when another
/// CPU (or user space) wrote the word meanwhile. The value found (when
/// `change` gave `None`, nothing was written); `None` for a bad frame or
/// offset.
fn update_u32(frame: u64, offset: usize, mut change: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
    if !is_frame(frame) || offset % 4 != 0 || offset + 4 > PAGE_SIZE as usize {
        return None;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller reaches through a handle or its space (module comment); user space may access it at the
    // same time, which is why it is only ever touched as an atomic here
    // (a lock-prefixed compare-exchange, the same instruction user space's
    // atomics use), and the reference lives only for this function.
    let word = unsafe { core::sync::atomic::AtomicU32::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u32) };
    let mut old = word.load(core::sync::atomic::Ordering::SeqCst);
    loop {
        let Some(new) = change(old) else { return Some(old) };
        match word.compare_exchange(old, new, core::sync::atomic::Ordering::SeqCst, core::sync::atomic::Ordering::SeqCst) {
            Ok(_) => return Some(old),
            Err(now) => old = now,
        }
    }
}

/// Stores `value` in the aligned `u64` at `offset` of `frame` as one
/// atomic write (a reader in user space sees the old or the new value,
/// never a mixture); `false` for a bad frame or offset.
fn store_u64(frame: u64, offset: usize, value: u64) -> bool {
    if !is_frame(frame) || offset % 8 != 0 || offset + 8 > PAGE_SIZE as usize {
        return false;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller reaches through a handle or its space (module comment); user space may read it at the
    // same time, which is why it is only written as an atomic here, and
    // the reference lives only for this statement.
    unsafe { core::sync::atomic::AtomicU64::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u64) }.store(value, core::sync::atomic::Ordering::Release);
    true
}

/// The aligned `u16` at `offset` of `frame`, read as one atomic load
/// with Acquire order (a device or another CPU may write it: what it wrote
/// before storing the word is visible after); `None` for a bad frame or
/// offset.
fn load_u16(frame: u64, offset: usize) -> Option<u16> {
    if !is_frame(frame) || offset % 2 != 0 || offset + 2 > PAGE_SIZE as usize {
        return None;
    }
    // SAFETY: the aligned word lies inside a frame of the direct map that
    // the caller reaches through a handle or its space (module comment); a device may write it meanwhile,
    // which is why it is only read as an atomic, and the reference lives
    // only for this statement.
    Some(unsafe { core::sync::atomic::AtomicU16::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u16) }.load(core::sync::atomic::Ordering::Acquire))
}

/// Stores `value` in the aligned `u16` at `offset` of `frame` as one
/// atomic write with Release order (whoever reads it sees the writes made
/// before); `false` for a bad frame or offset.
fn store_u16(frame: u64, offset: usize, value: u16) -> bool {
    if !is_frame(frame) || offset % 2 != 0 || offset + 2 > PAGE_SIZE as usize {
        return false;
    }
    // SAFETY: as in `load_u16`.
    unsafe { core::sync::atomic::AtomicU16::from_ptr((physical_to_virtual(frame) + offset as u64) as *mut u16) }.store(value, core::sync::atomic::Ordering::Release);
    true
}

/// A frame held by one handle (not `Copy`, not `Clone`). Dropping it
/// without [`release`](Frame::release) keeps it held for ever (a leak,
/// never an alias).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a frame dropped without release stays held for ever"]
pub struct Frame {
    address: u64,
}

impl Frame {
    /// The frame at `address`, if it is free (the allocator chose it).
    pub fn claim(address: u64) -> Option<Frame> {
        swap(address, FrameState::Free, FrameState::Held).then_some(Frame { address })
    }

    /// Gives the frame up; its address, for the allocator.
    pub fn release(self) -> u64 {
        let address = self.address;
        swap(address, FrameState::Held, FrameState::Free);
        address
    }

    /// A handle for a frame the machine layer holds already (its own
    /// tables and stacks, or boot frames, which stay Reserved).
    pub(crate) fn of_machine(address: u64) -> Frame {
        Frame { address }
    }

    /// Hands the frame to the machine layer's own use.
    pub(crate) fn into_machine(self) -> u64 {
        self.address
    }

    /// Its physical address.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Fills it with zeroes.
    pub fn zero(&mut self) -> bool {
        zero(self.address)
    }

    /// Copies `buffer.len()` bytes at `offset` of it into `buffer`.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        read_bytes(self.address, offset, buffer)
    }

    /// Copies `bytes` to `offset` of it.
    pub fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> bool {
        write_bytes(self.address, offset, bytes)
    }

    /// Makes it a user page held by one reference (a shared-memory
    /// object's), which spaces map as more references; the frame back if
    /// the machine does not record it as held.
    pub fn into_shared(self) -> Result<SharedPage, Frame> {
        if !swap(self.address, FrameState::Held, FrameState::Mapped { count: 1 }) {
            return Err(self);
        }
        Ok(SharedPage { address: self.address })
    }

    /// Lends it to a device.
    pub fn lend_to_device(self) -> DeviceFrame {
        DeviceFrame { address: self.address }
    }
}

/// A held frame lent to a device (see the module comment): the driver and
/// the device both write it, so it is reached only by copies and single
/// atomics, never as a Rust reference.
#[derive(Debug)]
pub struct DeviceFrame {
    address: u64,
}

impl DeviceFrame {
    /// Its physical address, for the device.
    pub fn physical(&self) -> u64 {
        self.address
    }

    /// Takes it back from the device (after the device was reset).
    pub fn into_frame(self) -> Frame {
        Frame { address: self.address }
    }

    /// Fills it with zeroes.
    pub fn zero(&self) -> bool {
        zero(self.address)
    }

    /// Copies `buffer.len()` bytes at `offset` out of it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        read_bytes(self.address, offset, buffer)
    }

    /// Copies `bytes` to `offset`.
    pub fn write_bytes(&self, offset: usize, bytes: &[u8]) -> bool {
        write_bytes(self.address, offset, bytes)
    }

    /// The aligned `u16` at `offset`, one Acquire load (a ring index the
    /// device writes); `None` for a bad offset.
    pub fn load_u16(&self, offset: usize) -> Option<u16> {
        load_u16(self.address, offset)
    }

    /// Stores the aligned `u16` at `offset` with Release order (a ring
    /// index the device reads).
    pub fn store_u16(&self, offset: usize, value: u16) -> bool {
        store_u16(self.address, offset, value)
    }
}

/// One reference to a user page that a shared-memory object keeps (not
/// `Copy`, not `Clone`): the page stays while it or any mapping names it.
/// User space may write the page at any time, so it is reached only by
/// copies and single atomics.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a reference dropped without release keeps its page for ever"]
pub struct SharedPage {
    address: u64,
}

impl SharedPage {
    /// Its physical address (to compare, to name it to a space's map).
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Copies `buffer.len()` bytes at `offset` out of it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        read_bytes(self.address, offset, buffer)
    }

    /// Copies `bytes` to `offset`.
    pub fn write_bytes(&self, offset: usize, bytes: &[u8]) -> bool {
        write_bytes(self.address, offset, bytes)
    }

    /// Stores the aligned `u64` at `offset` as one atomic write.
    pub fn store_u64(&self, offset: usize, value: u64) -> bool {
        store_u64(self.address, offset, value)
    }

    /// Drops the reference; the frame, held again, when it was the page's
    /// last (no mapping names it).
    pub fn release(self) -> Option<Frame> {
        let states = states()?;
        match states.drop_reference(self.address) {
            Ok(0) => states.reclaim(self.address, 0).is_ok().then_some(Frame { address: self.address }),
            _ => None,
        }
    }
}

/// Identities of address spaces (0 is no space's).
static NEXT_SPACE: AtomicU64 = AtomicU64::new(1);

/// The root each CPU has loaded (or is about to load): a root goes back
/// to the allocator only when no CPU names it here.
pub(crate) static LOADED_ROOTS: [LoadedRoot; MAX_CPUS] = [const { LoadedRoot::new() }; MAX_CPUS];
/// Per CPU: the root of the space a guest runs on as its nested page
/// tables (`svm`), while it runs; the same pact as [`LOADED_ROOTS`].
pub(crate) static NESTED_ROOTS: [LoadedRoot; MAX_CPUS] = [const { LoadedRoot::new() }; MAX_CPUS];

/// Bumped whenever the kernel half of the kernel's root changes, so a
/// space's root copied before knows to be checked in full.
pub(crate) static KERNEL_HALF_EPOCH: AtomicU64 = AtomicU64::new(0);

/// One address space's page tables (see the module comment). Not `Sync`:
/// one CPU at a time works on a space (the kernel keeps it under a lock),
/// which is what lets a user-memory copy trust the entry it walked.
pub struct SpaceTables {
    space: u64,
    /// The root (0 before one is installed and after it was given back).
    root: Cell<u64>,
    /// `KERNEL_HALF_EPOCH` when the root's kernel half was copied.
    epoch: u64,
    /// Tables below the root found to be this space's in the record: a
    /// table stops being the space's only through its `reclaim`, which
    /// forgets it here, so walks need not ask the record again.
    known: Cell<[u64; KNOWN_TABLES]>,
    next_known: Cell<usize>,
    _one_cpu_at_a_time: PhantomData<Cell<()>>,
}

/// How many tables a space remembers as its own (a walk's path).
const KNOWN_TABLES: usize = 4;

/// The root of a space's tables, to load into CR3 (see
/// [`super::paging::switch_address_space`]): checked at every load, so a
/// token outliving its space is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootToken {
    pub(crate) root: u64,
    pub(crate) space: u64,
    pub(crate) epoch: u64,
}

impl RootToken {
    /// The root's physical address (a number, to compare).
    pub fn root(&self) -> u64 {
        self.root
    }
}

/// Copies `buffer.len()` bytes from user memory at `address` through this
/// CPU's own translation, if CR3 holds `root` (a user space's root); takes
/// no lock. `false`: another root is loaded, or the copy faulted — then the
/// caller walks the space's tables under its lock. Why no lock is needed:
/// interrupts are off for the copy, so no switch loads another root and a
/// TLB shootdown of that space (which reaches this CPU, as it runs the
/// space) waits for the copy; the space frees no frame an unmap or a copy
/// let go before its shootdowns are done (`docs/memory.md`); a translation
/// the copy uses is one a user access at that moment could use.
pub fn read_user_on_root(root: u64, address: u64, buffer: &mut [u8]) -> bool {
    let _off = super::cpu::InterruptsOff::new();
    is_loaded_here(root) && super::user_copy::read(address, buffer)
}

/// [`read_user_on_root`]'s writing side: a page not mapped writable faults
/// and is never written (CR0.WP); bytes before a fault may have been
/// written (the caller's walk then writes them all).
pub fn write_user_on_root(root: u64, address: u64, bytes: &[u8]) -> bool {
    let _off = super::cpu::InterruptsOff::new();
    is_loaded_here(root) && super::user_copy::write(address, bytes)
}

/// Whether this CPU's CR3 holds `root` (call with interrupts off: nothing
/// loads another before the caller is done).
pub(crate) fn is_loaded_here(root: u64) -> bool {
    const ROOT_BITS: u64 = 0x000f_ffff_ffff_f000;
    root != 0 && super::cpu::read_cr3() & ROOT_BITS == root
}

/// Records that this CPU loads `root` (interrupts off), then checks that
/// `token` still names a live root: `false` (and the record restored) if
/// not. SeqCst on both sides: a root being given back either is seen Dying
/// here, or sees this CPU's record (`SpaceTables::reclaim`).
pub(crate) fn announce_load(token: &RootToken, cpu: usize) -> bool {
    let Some(slot) = LOADED_ROOTS.get(cpu) else { return false };
    let previous = slot.announce(token.root);
    let live = matches!(state(token.root), FrameState::Table { space, level: 3, .. } if space == token.space);
    if !live {
        slot.announce(previous);
    }
    live
}

/// [`announce_load`] for a guest's nested page tables: records that this
/// CPU is about to run a guest on `token`'s root, then checks it is live.
pub(crate) fn announce_nested(token: &RootToken, cpu: usize) -> bool {
    let Some(slot) = NESTED_ROOTS.get(cpu) else { return false };
    slot.announce(token.root);
    let live = matches!(state(token.root), FrameState::Table { space, level: 3, .. } if space == token.space);
    if !live {
        slot.announce(0);
    }
    live
}

/// The guest left this CPU: no translation of its nested tables is used
/// here again before the next [`announce_nested`] (each entry flushes the
/// guest's TLB).
pub(crate) fn announce_nested_gone(cpu: usize) {
    if let Some(slot) = NESTED_ROOTS.get(cpu) {
        slot.announce(0);
    }
}

/// Records that this CPU has `root` loaded (the kernel's own tables, or
/// the tables it keeps after a refused switch).
pub(crate) fn announce(cpu: usize, root: u64) {
    if let Some(slot) = LOADED_ROOTS.get(cpu) {
        slot.announce(root);
    }
}

impl SpaceTables {
    /// A new space's tables, without a root yet ([`install_root`](Self::install_root)).
    /// Identities run out after 2^56 spaces; a space made after that has
    /// identity 0, whose root is refused, so every use of it fails.
    pub fn new() -> SpaceTables {
        let space = NEXT_SPACE.fetch_add(1, Ordering::Relaxed);
        let space = if space <= MAX_SPACE { space } else { 0 };
        SpaceTables { space, root: Cell::new(0), epoch: 0, known: Cell::new([0; KNOWN_TABLES]), next_known: Cell::new(0), _one_cpu_at_a_time: PhantomData }
    }

    /// Makes `frame` the root: zeroed, the kernel's half copied in. Its
    /// address, or the frame back (a root is there already).
    pub fn install_root(&mut self, frame: Frame) -> Result<u64, Frame> {
        let Some(states) = states() else { return Err(frame) };
        if self.space == 0 || self.root.get() != 0 || !swap(frame.address, FrameState::Held, FrameState::Loose { space: self.space }) {
            return Err(frame);
        }
        let root = frame.address;
        zero(root);
        self.epoch = KERNEL_HALF_EPOCH.load(Ordering::SeqCst);
        let kernel = super::start::kernel_root();
        for index in 256..512 {
            write_word(root, index, read_word(kernel, index).unwrap_or(0));
        }
        if states.make_root(root, self.space).is_err() {
            return Err(frame);
        }
        self.root.set(root);
        Ok(root)
    }

    /// The root's physical address (0 before one is installed).
    pub fn root(&self) -> u64 {
        self.root.get()
    }

    /// The root, to load.
    pub fn token(&self) -> RootToken {
        RootToken { root: self.root.get(), space: self.space, epoch: self.epoch }
    }

    fn is_mine(&self, table: u64) -> bool {
        if table != 0 && (table == self.root.get() || self.known.get().contains(&table)) {
            return true;
        }
        let mine = states().is_some_and(|states| states.table_level(table, self.space).is_some());
        if mine {
            let mut known = self.known.get();
            let slot = self.next_known.get();
            known[slot] = table;
            self.known.set(known);
            self.next_known.set((slot + 1) % KNOWN_TABLES);
        }
        mine
    }

    /// Forgets `frame` as a known table (it is leaving the space).
    fn forget(&self, frame: u64) {
        let mut known = self.known.get();
        for slot in known.iter_mut().filter(|slot| **slot == frame) {
            *slot = 0;
        }
        self.known.set(known);
    }

    /// Word `index` of page table `table`; 0 for a table not this space's.
    pub fn read_entry(&self, table: u64, index: usize) -> u64 {
        if index >= WORDS_PER_FRAME || !self.is_mine(table) {
            return 0;
        }
        // SAFETY: `table` is a page table of this space in the record, so
        // a frame below the record's end, which the direct map covers; the
        // index is inside it; volatile, as the MMU writes entries too.
        unsafe { ((physical_to_virtual(table) + index as u64 * 8) as *const u64).read_volatile() }
    }

    /// Words `first..first + out.len()` of page table `table` (one check
    /// for them all); zeros for a table not this space's.
    pub fn read_entries(&self, table: u64, first: usize, out: &mut [u64]) {
        if !self.is_mine(table) || !read_words(table, first, out) {
            out.fill(0);
        }
    }

    /// Writes word `index` of page table `table` when the machine's rules
    /// agree (`FrameStates::write_entry`); `false`: refused, nothing written.
    pub fn write_entry(&self, table: u64, index: usize, value: u64) -> bool {
        let Some(states) = states() else { return false };
        let Some(old) = read_word(table, index) else { return false };
        if states.write_entry(self.space, table, index, old, value).is_err() {
            return false;
        }
        write_word(table, index, value)
    }

    /// Writes words `first..first + values.len()` of page table `table`
    /// where they differ from what it holds, each when the machine's rules
    /// agree (`FrameStates::write_entries`: one look-up of the table for
    /// them all). How many, from `first`, were written: all, or up to the
    /// first refused.
    pub fn write_entries(&self, table: u64, first: usize, values: &[u64]) -> usize {
        const BATCH: usize = 64;
        let Some(states) = states() else { return 0 };
        let mut old = [0u64; BATCH];
        let mut done = 0;
        for batch in values.chunks(BATCH) {
            let old = &mut old[..batch.len()];
            if !read_words(table, first + done, old) {
                return done;
            }
            let (agreed, refusal) = states.write_entries(self.space, table, first + done, old, batch);
            for (offset, (&was, &value)) in old[..agreed].iter().zip(batch).enumerate() {
                if was != value {
                    write_word(table, first + done + offset, value);
                }
            }
            done += agreed;
            if refusal.is_some() {
                break;
            }
        }
        done
    }

    /// Takes `frame` into the space (not yet in a table); its address.
    pub fn adopt(&self, frame: Frame) -> u64 {
        if self.space != 0 {
            swap(frame.address, FrameState::Held, FrameState::Loose { space: self.space });
        }
        frame.address
    }

    /// Takes a frame the space no longer names out of it, held again: one
    /// it adopted and never placed, an unlinked table, a page no entry
    /// names, or the root once no CPU has it loaded. `None`: refused.
    pub fn reclaim(&self, frame: u64) -> Option<Frame> {
        let states = states()?;
        self.forget(frame);
        let taken = if frame == self.root.get() {
            let loaded = || LOADED_ROOTS.iter().chain(NESTED_ROOTS.iter()).any(|slot| slot.get() == frame);
            let taken = states.reclaim_root(frame, self.space, loaded);
            if taken.is_ok() {
                // Gone: no walk or copy may start from it again.
                self.root.set(0);
            }
            taken
        } else {
            states.reclaim(frame, self.space)
        };
        taken.is_ok().then_some(Frame { address: frame })
    }

    /// Fills an adopted, unplaced frame with zeroes.
    pub fn zero(&self, frame: u64) -> bool {
        state(frame) == FrameState::Loose { space: self.space } && zero(frame)
    }

    /// Copies the page entry `index` of leaf table `table` names into the
    /// adopted, unplaced frame `to`.
    pub fn copy_page(&self, table: u64, index: usize, to: u64) -> bool {
        if state(to) != (FrameState::Loose { space: self.space }) || !self.is_mine(table) {
            return false;
        }
        match read_word(table, index).and_then(named_frame) {
            Some(from) if from != to => copy(from, to),
            _ => false,
        }
    }

    /// The frame of the user page at `address` (any offset in it), when
    /// this space's tables map it present and user-accessible, and
    /// writable when `write`.
    fn user_frame(&self, address: u64, write: bool) -> Option<u64> {
        if address >= crate::user_half::USER_END || self.root.get() == 0 {
            return None;
        }
        let mut table = self.root.get();
        for level in (0..4u32).rev() {
            if !self.is_mine(table) {
                return None;
            }
            let entry = read_word(table, ((address >> (12 + 9 * level)) & 0x1FF) as usize)?;
            let wanted = entry_bits::PRESENT | entry_bits::USER;
            if entry & wanted != wanted {
                return None;
            }
            if level == 0 {
                if write && entry & super::paging::WRITABLE == 0 {
                    return None;
                }
                return Some(entry & entry_bits::ADDRESS_MASK);
            }
            table = entry & entry_bits::ADDRESS_MASK;
        }
        None
    }

    /// Copies `buffer.len()` bytes of user memory at `address` (inside one
    /// page) into `buffer`; `false` when the page is not mapped readable.
    pub fn read_user(&self, address: u64, buffer: &mut [u8]) -> bool {
        let offset = (address % PAGE_SIZE) as usize;
        self.user_frame(address, false).is_some_and(|frame| read_bytes(frame, offset, buffer))
    }

    /// Copies `bytes` to user memory at `address` (inside one page);
    /// `false` when the page is not mapped writable.
    pub fn write_user(&self, address: u64, bytes: &[u8]) -> bool {
        let offset = (address % PAGE_SIZE) as usize;
        self.user_frame(address, true).is_some_and(|frame| write_bytes(frame, offset, bytes))
    }

    /// Atomically replaces the aligned user `u32` at `address` with
    /// `change(old)` while `change` gives `Some`; the value found, `None`
    /// when the page is not mapped writable or the address misaligned.
    pub fn update_user_u32(&self, address: u64, change: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
        let frame = self.user_frame(address, true)?;
        update_u32(frame, (address % PAGE_SIZE) as usize, change)
    }
}
