//! `AddressSpace`: the user half of one 4-level page table, its demand-zero
//! regions and the CPUs that ran it. Map, unmap, protect, translate and
//! destroy live here; page faults in `fault_handling` below, fork in
//! `fork.rs`. Must never write the kernel half of the root after creation.

use alloc::vec::Vec;

use crate::cpu_set::{FlushesOwed, RanOn};
use crate::sync::Arc;
use crate::table_list::{PageTable, TableList};
use crate::entry::{self, COPY_ON_WRITE, NO_EXECUTE, WRITABLE};
use crate::{Access, CpuSet, Fault, FaultOutcome, FrameMemory, FrameSource, FreshFrame, LeaveOutcome, SharedFrame, OwnerTable, Rights, TlbFlush, VmError, PAGE_SIZE};

pub use machine::user_half::USER_END;

/// Bit 10 (free for software): a shared-memory page. Fork shares it as it
/// is, and writes never copy it.
pub(crate) const SHARED: u64 = 1 << 10;

/// Entries of a leaf table.
#[cfg(test)]
pub(crate) const LEAF_ENTRIES: usize = 512;

/// Leaf entries fork and destroy read and write at once.
pub(crate) const BATCH: usize = 64;

/// `span` (entries of a leaf table) in pieces of at most [`BATCH`].
fn batches(span: core::ops::Range<usize>) -> impl Iterator<Item = core::ops::Range<usize>> {
    let end = span.end;
    span.step_by(BATCH).map(move |first| first..(first + BATCH).min(end))
}

/// A demand-zero region: pages get a zeroed frame at their first access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) rights: Rights,
}

/// What `translate` reports for a mapped page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// The frame (physical address).
    pub frame: u64,
    /// The page's rights (a copy-on-write page counts as writable).
    pub rights: Rights,
    /// Shared with another space until the first write copies it.
    pub copy_on_write: bool,
    /// A shared-memory page.
    pub shared: bool,
}

/// One user address space. Not `Sync`: the kernel keeps it under a lock.
pub struct AddressSpace<'o, M: FrameMemory, S: FrameSource<Frame = M::Frame>> {
    pub(crate) memory: M,
    pub(crate) frames: S,
    pub(crate) owners: &'o OwnerTable,
    pub(crate) root: u64,
    pub(crate) regions: Vec<Region>,
    /// The bytes of `regions`, and the pages holding a frame outside them:
    /// [`Self::size`] without a walk (kept by every change of either).
    pub(crate) region_bytes: u64,
    pub(crate) loose_pages: u64,
    pub(crate) ran_on: RanOn,
    /// The tables below the root (fork and destroy go through it).
    pub(crate) tables: TableList,
    /// Flushes handed out and not yet carried out (see [`FlushesOwed`]).
    pub(crate) owed: Arc<FlushesOwed>,
    /// Frames let go while flushes were owed: another CPU may still reach
    /// them through a stale translation, so they leave the owner set only
    /// once every owed flush is carried out ([`Self::settle`]).
    pub(crate) limbo: Vec<u64>,
}

/// Checks that `[start, start + length)` is a non-empty page-aligned range
/// of the user half.
pub(crate) fn user_range(start: u64, length: u64) -> Result<core::ops::Range<u64>, VmError> {
    if !start.is_multiple_of(PAGE_SIZE) || !length.is_multiple_of(PAGE_SIZE) {
        return Err(VmError::Misaligned);
    }
    let end = start.checked_add(length).ok_or(VmError::OutOfRange)?;
    if length == 0 || end > USER_END {
        return Err(VmError::OutOfRange);
    }
    Ok(start..end)
}

impl<'o, M: FrameMemory, S: FrameSource<Frame = M::Frame>> AddressSpace<'o, M, S> {
    /// An empty space whose root carries the kernel's half (entries
    /// 256..512, filled in by `memory`) so that it can be activated.
    pub fn new(mut memory: M, frames: S, owners: &'o OwnerTable) -> Result<Self, VmError> {
        let frame = frames.allocate().ok_or(VmError::OutOfMemory)?;
        let root = match memory.install_root(frame) {
            Ok(root) => root,
            Err(frame) => {
                frames.free(frame);
                return Err(VmError::OutOfMemory);
            }
        };
        Ok(Self {
            memory,
            frames,
            owners,
            root,
            regions: Vec::new(),
            region_bytes: 0,
            loose_pages: 0,
            ran_on: RanOn::default(),
            tables: TableList::default(),
            owed: Arc::new(FlushesOwed::default()),
            limbo: Vec::new(),
        })
    }

    /// The space's tables and pages (for copies to and from user memory).
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// A frame from the source, adopted by the space (not yet in a table).
    pub(crate) fn take_frame(&self) -> Option<u64> {
        self.frames.allocate().map(|frame| self.memory.adopt(frame))
    }

    /// Gives a frame no entry names any more back to the source (one the
    /// memory refuses, being still named, is kept: a bug, but nothing is
    /// freed that a table can reach).
    pub(crate) fn give_back(&self, frame: u64) {
        if let Some(frame) = self.memory.reclaim(frame) {
            self.frames.free(frame);
        }
    }

    /// The root table's physical address (what CR3 gets).
    pub fn root(&self) -> u64 {
        self.root
    }

    /// Records that CPU `cpu` is about to run this space: later flushes
    /// name it.
    pub fn activate_on(&self, cpu: usize) {
        self.ran_on.insert(cpu);
    }

    /// The CPUs that have run this space.
    pub fn ran_on(&self) -> CpuSet {
        self.ran_on.snapshot()
    }

    /// Page-table frames in use, the root included.
    pub fn table_frames(&self) -> u64 {
        self.tables.all().len() as u64 + 1
    }

    /// An empty flush of the CPUs that ran the space.
    pub(crate) fn flush(&self) -> TlbFlush {
        TlbFlush::on(self.ran_on(), self.root)
    }

    /// `flush`, owed to this space until dropped (when not empty).
    pub(crate) fn owe(&self, flush: TlbFlush) -> TlbFlush {
        flush.owed_to(&self.owed)
    }

    /// Whether a flush this space handed out is still to be carried out.
    pub fn flush_owed(&self) -> bool {
        !self.owed.all_paid()
    }

    /// Lets go of the frames in limbo once no flush is owed (cheap when
    /// there are none; every changing operation calls it first).
    #[inline]
    pub fn settle(&mut self) {
        if !self.limbo.is_empty() {
            self.settle_limbo();
        }
    }

    fn settle_limbo(&mut self) {
        if self.owed.all_paid() {
            for frame in core::mem::take(&mut self.limbo) {
                self.let_go(frame);
            }
        }
    }

    /// Room in limbo for `frames` more, so that an operation that lets go
    /// of frames cannot fail half-way.
    fn reserve_limbo(&mut self, frames: usize) -> Result<(), VmError> {
        self.limbo.try_reserve(frames).map_err(|_| VmError::OutOfMemory)
    }

    /// The leaf table and index for `address`, creating missing tables
    /// when `create`. `Ok(None)`: not there and not created.
    pub(crate) fn leaf_slot(&mut self, address: u64, create: bool) -> Result<Option<(u64, usize)>, VmError> {
        let mut table = self.root;
        for level in (1..=3).rev() {
            let index = entry::index(address, level);
            let current = self.memory.read_word(table, index);
            table = if entry::is_present(current) {
                entry::frame(current)
            } else if create {
                self.tables.reserve_one()?;
                let frame = self.take_frame().ok_or(VmError::OutOfMemory)?;
                if !self.memory.zero(frame) || !self.memory.write_word(table, index, entry::table(frame)) {
                    self.give_back(frame);
                    return Err(VmError::OutOfMemory);
                }
                let covers = 1u64 << (12 + 9 * level);
                let address = address & !(covers - 1);
                self.tables.record(PageTable { level: level as u8 - 1, address, frame, parent: table, parent_index: index as u16, used_start: 0, used_end: 0 });
                frame
            } else {
                return Ok(None);
            };
        }
        // Handed out to be filled: the entry may hold a frame from now on.
        // (Every caller that places a frame asked with `create`; the
        // others only change or empty entries that hold one.)
        let index = entry::index(address, 0);
        if create {
            self.tables.widen(address, index);
        }
        Ok(Some((table, index)))
    }

    /// The leaf table holding `address`'s entry, if the tables exist.
    fn leaf_table(&self, address: u64) -> Option<u64> {
        let mut table = self.root;
        for level in (1..=3).rev() {
            let current = self.memory.read_word(table, entry::index(address, level));
            if !entry::is_present(current) {
                return None;
            }
            table = entry::frame(current);
        }
        Some(table)
    }

    /// How many pages of `range` hold a frame: one walk and one batch read
    /// per leaf table, not a walk per page.
    fn frames_in(&self, range: core::ops::Range<u64>) -> usize {
        let mut held = 0;
        let mut words = [0u64; BATCH];
        for table in self.tables.leaves_in(range.clone()) {
            for batch in batches(table.used_in(&range)) {
                held += self.read_batch(table.frame, batch, &mut words).iter().filter(|word| entry::holds_frame(**word)).count();
            }
        }
        held
    }

    /// The leaf entry for `address` (0 when nothing is mapped).
    pub(crate) fn leaf_entry(&self, address: u64) -> u64 {
        self.leaf_table(address).map_or(0, |table| self.memory.read_word(table, entry::index(address, 0)))
    }

    /// Maps `frame` at `address` with `rights` as a private page: the space
    /// takes the frame over (its first owner). On an error the frame stays
    /// with the caller's handle (the kernel's frees it when dropped).
    pub fn map(&mut self, address: u64, frame: S::Fresh, rights: Rights) -> Result<(), VmError> {
        self.map_fresh(address, frame, rights, false)
    }

    /// Maps a fresh frame: every check first, so that on an error the
    /// frame is still the caller's; then the space takes it over.
    fn map_fresh(&mut self, address: u64, frame: S::Fresh, rights: Rights, shared: bool) -> Result<(), VmError> {
        let (table, index) = self.prepare_leaf(address, frame.address(), rights)?;
        let adopted = self.memory.adopt(frame.into_frame().ok_or(VmError::UnknownFrame)?);
        self.place(table, index, adopted, rights, shared).inspect_err(|_| self.give_back(adopted))?;
        self.count_if_loose(address);
        Ok(())
    }

    /// A page just mapped at `address`: counted when outside the regions.
    fn count_if_loose(&mut self, address: u64) {
        if self.region_at(address).is_none() {
            self.loose_pages += 1;
        }
    }

    /// Takes `gone` loose pages off the count.
    fn forget_loose(&mut self, gone: u64) {
        self.loose_pages = self.loose_pages.saturating_sub(gone);
    }

    /// Maps `frame` at `address` with `rights` as a shared page of this
    /// space's own (anonymous `MAP_SHARED`): the space takes the frame over
    /// like [`map`](Self::map), but fork shares the page and writes never
    /// copy it.
    pub fn map_shared_fresh(&mut self, address: u64, frame: S::Fresh, rights: Rights) -> Result<(), VmError> {
        self.map_fresh(address, frame, rights, true)
    }

    /// Maps a shared-memory object's `frame` at `address` with `rights`, as
    /// one more owner of it (writes never copy it; fork shares it).
    pub fn map_shared(&mut self, address: u64, frame: &S::Shared, rights: Rights) -> Result<(), VmError> {
        self.map_frame(address, frame.address(), rights, true)
    }

    /// Maps a shared frame at `address` with `rights` as a private page of
    /// this space, one more owner of it: the frame is never written through
    /// it — the first write (allowed by `rights` or by a later `protect`)
    /// copies it — and fork copies it on write as any private page
    /// (program text and private file mappings shared between processes).
    pub fn map_private(&mut self, address: u64, frame: &S::Shared, rights: Rights) -> Result<(), VmError> {
        self.map_frame(address, frame.address(), rights.without_write(), false)?;
        if rights.write() {
            // Writable from the start: copy on the first write.
            let (table, index) = self.leaf_slot(address, false)?.ok_or(VmError::OutOfMemory)?;
            if !self.memory.write_word(table, index, entry::leaf(frame.address(), rights, true)) {
                return Err(VmError::UnknownFrame);
            }
        }
        Ok(())
    }

    /// Maps `frame`, a page another space owns and maps (a VMM's memory
    /// lent to a guest's nested tables), at `address` with `rights`, as one
    /// more owner of it: shared, so writes through either side reach the
    /// same frame and neither side's fork copies it for the other. The
    /// caller holds the lending space, so the frame cannot be freed
    /// before this space has joined its owners.
    pub fn map_lent(&mut self, address: u64, frame: u64, rights: Rights) -> Result<(), VmError> {
        self.map_frame(address, frame, rights, true)
    }

    /// Maps the frame at `address` with `rights`, as one more owner of it:
    /// a fresh frame (its first owner: a private page) or, with `shared`, a
    /// shared-memory frame another space owns too.
    pub(crate) fn map_frame(&mut self, address: u64, frame: u64, rights: Rights, shared: bool) -> Result<(), VmError> {
        let (table, index) = self.prepare_leaf(address, frame, rights)?;
        self.place(table, index, frame, rights, shared)?;
        self.count_if_loose(address);
        Ok(())
    }

    /// Checks that `frame` may be mapped at `address` with `rights` and
    /// makes the tables down to its leaf entry.
    fn prepare_leaf(&mut self, address: u64, frame: u64, rights: Rights) -> Result<(u64, usize), VmError> {
        user_range(address, PAGE_SIZE)?;
        if !rights.read() {
            return Err(VmError::UnsupportedRights);
        }
        if !self.owners.covers(frame) {
            return Err(VmError::UnknownFrame);
        }
        if entry::holds_frame(self.leaf_entry(address)) {
            return Err(VmError::AlreadyMapped);
        }
        self.leaf_slot(address, true)?.ok_or(VmError::OutOfMemory)
    }

    /// Writes the leaf entry for `frame`, one more owner of it.
    fn place(&mut self, table: u64, index: usize, frame: u64, rights: Rights, shared: bool) -> Result<(), VmError> {
        self.owners.join(frame)?;
        let extra = if shared { SHARED } else { 0 };
        if !self.memory.write_word(table, index, entry::leaf(frame, rights, false) | extra) {
            self.owners.leave(frame);
            return Err(VmError::UnknownFrame);
        }
        Ok(())
    }

    /// Declares `[start, start + length)` a demand-zero region with
    /// `rights` (`Rights::NONE`: a guard that faults on every access).
    pub fn add_demand_zero(&mut self, start: u64, length: u64, rights: Rights) -> Result<(), VmError> {
        let range = user_range(start, length)?;
        if self.regions.iter().any(|region| region.start < range.end && range.start < region.end) {
            return Err(VmError::AlreadyMapped);
        }
        self.regions.try_reserve(1).map_err(|_| VmError::OutOfMemory)?;
        // Pages mapped there before (outside every region, as no region
        // overlaps) are the region's from now on.
        let taken = self.frames_in(range.clone()) as u64;
        self.forget_loose(taken);
        let position = self.regions.partition_point(|region| region.start < range.start);
        self.regions.insert(position, Region { start: range.start, end: range.end, rights });
        self.region_bytes += range.end - range.start;
        Ok(())
    }

    /// Whether the page at `address` belongs to the space: mapped, or in a
    /// demand-zero region not touched yet.
    pub fn is_mapped(&self, address: u64) -> bool {
        self.translate(address).is_some() || self.region_at(address).is_some()
    }

    /// The rights of the page at `address`: its demand-zero region's, or
    /// its mapping's; `None` when nothing is there.
    pub fn rights_at(&self, address: u64) -> Option<Rights> {
        self.region_at(address).map(|region| region.rights).or_else(|| self.translate(address).map(|page| page.rights))
    }

    /// Whether the page at `address` has a frame now (`mincore`).
    pub fn is_resident(&self, address: u64) -> bool {
        self.translate(address).is_some()
    }

    /// The region holding `address` (the regions are kept sorted and
    /// apart: a binary search).
    pub(crate) fn region_at(&self, address: u64) -> Option<&Region> {
        region_in(&self.regions, address)
    }

    /// Cuts `range` out of the regions (splitting one that straddles it)
    /// and gives the cut part `rights`, if any.
    fn reshape_regions(&mut self, range: core::ops::Range<u64>, rights: Option<Rights>) -> Result<(), VmError> {
        let kept = self.reshaped_regions(range, rights)?;
        self.install_regions(kept);
        Ok(())
    }

    /// The regions [`Self::reshape_regions`] would leave (nothing changed
    /// yet; the only step that can fail).
    fn reshaped_regions(&self, range: core::ops::Range<u64>, rights: Option<Rights>) -> Result<Vec<Region>, VmError> {
        let mut kept = Vec::new();
        kept.try_reserve(self.regions.len() + 2).map_err(|_| VmError::OutOfMemory)?;
        for region in self.regions.iter().copied() {
            if region.end <= range.start || range.end <= region.start {
                kept.push(region);
                continue;
            }
            if region.start < range.start {
                kept.push(Region { end: range.start, ..region });
            }
            if let Some(rights) = rights {
                kept.push(Region { start: region.start.max(range.start), end: region.end.min(range.end), rights });
            }
            if range.end < region.end {
                kept.push(Region { start: range.end, ..region });
            }
        }
        kept.sort_unstable_by_key(|region| region.start);
        Ok(kept)
    }

    fn install_regions(&mut self, kept: Vec<Region>) {
        self.regions = kept;
        self.recount_region_bytes();
    }

    fn recount_region_bytes(&mut self) {
        self.region_bytes = self.regions.iter().map(|region| region.end - region.start).sum();
    }

    /// Removes every mapping and region in `[start, start + length)`,
    /// freeing frames whose last owner this space was.
    /// The frames go to limbo (freed once the flush is carried out), so
    /// that no CPU can write a frame after it is reused.
    pub fn unmap(&mut self, start: u64, length: u64) -> Result<TlbFlush, VmError> {
        let range = user_range(start, length)?;
        self.settle();
        self.reserve_limbo(self.frames_in(range.clone()))?;
        let kept = self.reshaped_regions(range.clone(), None)?;
        // Pages outside the old regions are counted off as they go (the
        // addresses rise: one pass over the regions, not a search a page).
        let mut loose = 0;
        let mut next_region = self.regions.partition_point(|region| region.end <= range.start);
        let mut flush = self.flush();
        self.empty_entries_in(range, &mut flush, |regions, address, _| {
            while regions.get(next_region).is_some_and(|region| region.end <= address) {
                next_region += 1;
            }
            if !regions.get(next_region).is_some_and(|region| region.start <= address) {
                loose += 1;
            }
            true
        });
        self.install_regions(kept);
        self.forget_loose(loose);
        self.settle_now_if_unseen(&flush);
        Ok(self.owe(flush))
    }

    /// Drops the private pages of `[start, start + length)` that lie in a
    /// demand-zero region: each entry is emptied and its frame let go (in
    /// limbo until the flush is carried out), so the next access faults
    /// in a zeroed page with the region's rights (`MADV_DONTNEED` on
    /// anonymous memory). Shared pages and pages outside regions (file and
    /// shared-memory mappings, which would not come back on a fault) stay
    /// as they are.
    pub fn discard(&mut self, start: u64, length: u64) -> Result<TlbFlush, VmError> {
        let range = user_range(start, length)?;
        self.settle();
        self.reserve_limbo(self.frames_in(range.clone()))?;
        let mut flush = self.flush();
        self.empty_entries_in(range, &mut flush, |regions, address, current| current & SHARED == 0 && region_in(regions, address).is_some());
        self.settle_now_if_unseen(&flush);
        Ok(self.owe(flush))
    }

    /// Empties the entries of `range` that hold a frame and that `take`
    /// (given the regions, the page's address and its entry, in rising
    /// address order) chooses: a present page's frame waits in limbo for
    /// `flush`, which gains the page; any other is let go at once (never
    /// reachable through a translation). Limbo must have room for them.
    /// Only the leaf tables in the range are read, inside their used
    /// spans: an untouched region costs no look at its entries.
    fn empty_entries_in(&mut self, range: core::ops::Range<u64>, flush: &mut TlbFlush, mut take: impl FnMut(&[Region], u64, u64) -> bool) {
        let mut words = [0u64; BATCH];
        for table in self.tables.leaves_in(range.clone()) {
            for batch in batches(table.used_in(&range)) {
                let first = batch.start;
                for (offset, &current) in self.read_batch(table.frame, batch, &mut words).iter().enumerate().filter(|&(_, &current)| entry::holds_frame(current)) {
                    let address = table.address + (first + offset) as u64 * PAGE_SIZE;
                    if !take(&self.regions, address, current) {
                        continue;
                    }
                    self.memory.write_word(table.frame, first + offset, 0);
                    if entry::is_present(current) {
                        flush.add_page(address);
                        self.limbo.push(entry::frame(current));
                    } else {
                        self.let_go(entry::frame(current));
                    }
                }
            }
        }
    }

    /// When `flush` reaches no CPU (the space never ran), nothing can
    /// reach the frames in limbo: they go at once.
    fn settle_now_if_unseen(&mut self, flush: &TlbFlush) {
        if flush.cpus.is_empty() {
            self.settle();
        }
    }

    /// Moves the pages and regions of `[from, from + length)` to `to`: each
    /// page keeps its frame, rights and sharing (no owner changes, nothing
    /// copied), each region its rights (`mremap`). The destination must be
    /// empty and apart from the source (AlreadyMapped). The tables the
    /// destination needs are made first, so running out of memory moves
    /// nothing.
    pub fn move_range(&mut self, from: u64, to: u64, length: u64) -> Result<TlbFlush, VmError> {
        let source = user_range(from, length)?;
        let target = user_range(to, length)?;
        let overlaps = |region: &Region| region.start < target.end && target.start < region.end;
        if (source.start < target.end && target.start < source.end) || self.regions.iter().any(overlaps) {
            return Err(VmError::AlreadyMapped);
        }
        let pages = || (0..length).step_by(PAGE_SIZE as usize);
        if pages().any(|offset| entry::holds_frame(self.leaf_entry(to + offset))) {
            return Err(VmError::AlreadyMapped);
        }
        for offset in pages() {
            if entry::holds_frame(self.leaf_entry(from + offset)) {
                self.leaf_slot(to + offset, true)?.ok_or(VmError::OutOfMemory)?;
            }
        }
        let mut moved = Vec::new();
        moved.try_reserve(self.regions.len()).map_err(|_| VmError::OutOfMemory)?;
        for region in self.regions.iter().filter(|region| region.start < source.end && source.start < region.end) {
            let (start, end) = (region.start.max(source.start), region.end.min(source.end));
            moved.push(Region { start: start - from + to, end: end - from + to, rights: region.rights });
        }
        self.regions.try_reserve(moved.len() + 2).map_err(|_| VmError::OutOfMemory)?;
        self.reshape_regions(source, None)?;
        self.regions.extend(moved);
        self.regions.sort_unstable_by_key(|region| region.start);
        self.recount_region_bytes();
        let mut flush = self.flush();
        for offset in pages() {
            let Some((table, index)) = self.leaf_slot(from + offset, false)? else { continue };
            let current = self.memory.read_word(table, index);
            if !entry::holds_frame(current) {
                continue;
            }
            let (new_table, new_index) = self.leaf_slot(to + offset, false)?.ok_or(VmError::OutOfMemory)?;
            // The new entry first: the page is never named by none.
            if !self.memory.write_word(new_table, new_index, current) {
                continue;
            }
            self.memory.write_word(table, index, 0);
            if entry::is_present(current) {
                flush.add_page(from + offset);
            }
        }
        Ok(self.owe(flush))
    }

    /// Leaves the owner set of `frame`, freeing it if this was the last owner.
    pub(crate) fn let_go(&self, frame: u64) {
        if self.owners.leave(frame) == LeaveOutcome::Last {
            self.give_back(frame);
        }
    }

    /// Gives the pages and regions of `[start, start + length)` `rights`.
    /// Unmapped pages outside regions stay unmapped. Refused (nothing
    /// changed) for W^X or unsupported rights.
    pub fn protect(&mut self, start: u64, length: u64, rights: Rights) -> Result<TlbFlush, VmError> {
        let range = user_range(start, length)?;
        Rights::new(rights.read(), rights.write(), rights.execute())?;
        self.reshape_regions(range.clone(), Some(rights))?;
        let mut flush = self.flush();
        for address in range.step_by(PAGE_SIZE as usize) {
            let Some((table, index)) = self.leaf_slot(address, false)? else { continue };
            let current = self.memory.read_word(table, index);
            if !entry::holds_frame(current) {
                continue;
            }
            let frame = entry::frame(current);
            if !rights.read() {
                // No access for now: the frame stays, the entry faults.
                let kept = (current & !entry::PRESENT) | entry::INACCESSIBLE;
                self.memory.write_word(table, index, kept);
                if entry::is_present(current) {
                    flush.add_page(address);
                }
                continue;
            }
            let shared = current & SHARED != 0;
            let copy_on_write = rights.write() && !shared && self.owners.owners(frame) > 1;
            let new = entry::leaf(frame, rights, copy_on_write) | (current & SHARED);
            let was_present = entry::is_present(current);
            let lost_write = was_present && current & WRITABLE != 0 && new & WRITABLE == 0;
            let lost_execute = was_present && current & NO_EXECUTE == 0 && new & NO_EXECUTE != 0;
            self.memory.write_word(table, index, new);
            if lost_write || lost_execute {
                flush.add_page(address);
            }
        }
        Ok(self.owe(flush))
    }

    /// The mapping at `address`, if a page is mapped there.
    pub fn translate(&self, address: u64) -> Option<Translation> {
        if address >= USER_END {
            return None;
        }
        let current = self.leaf_entry(address & !(PAGE_SIZE - 1));
        if !entry::is_present(current) {
            return None;
        }
        let write = current & (WRITABLE | COPY_ON_WRITE) != 0;
        let execute = current & NO_EXECUTE == 0;
        let rights = Rights::new(true, write, execute).unwrap_or(Rights::READ);
        Some(Translation {
            frame: entry::frame(current),
            rights,
            copy_on_write: entry::is_copy_on_write(current),
            shared: current & SHARED != 0,
        })
    }

    /// Decides a page fault at `address`: maps a zeroed frame in a
    /// demand-zero region, copies or takes over a copy-on-write page, or
    /// says the access is not allowed.
    /// The CPU that faulted is not known: a copied page is mapped
    /// read-only until its flush is carried out (see [`Self::handle_fault_on`]).
    pub fn handle_fault(&mut self, address: u64, access: Access) -> Result<FaultOutcome, Fault> {
        self.handle_fault_on(address, access, None)
    }

    /// As [`Self::handle_fault`], for a fault on CPU `cpu`. A copy-on-write
    /// page is copied or taken over only while no flush is owed
    /// (`Fault::Busy` otherwise: carry the flushes out, then try again):
    /// until then another CPU may still write the old frame through a
    /// stale translation, and the write would be lost. A copy is mapped
    /// writable at once only when no CPU but `cpu` ever ran the space;
    /// else read-only until its flush is carried out (the access faults
    /// once more and takes the copy over), so that no CPU writes the new
    /// frame while another still reads the old one.
    pub fn handle_fault_on(&mut self, address: u64, access: Access, cpu: Option<usize>) -> Result<FaultOutcome, Fault> {
        self.settle();
        if address >= USER_END {
            return Err(Fault::Segmentation);
        }
        let page = address & !(PAGE_SIZE - 1);
        let current = self.leaf_entry(page);
        if entry::is_present(current) {
            return self.fault_on_present(page, current, access, cpu);
        }
        if entry::holds_frame(current) {
            return Err(Fault::Segmentation);
        }
        let region = *self.region_at(page).ok_or(Fault::Segmentation)?;
        if !allows(region.rights, access) {
            return Err(Fault::Segmentation);
        }
        let frame = self.take_frame().ok_or(Fault::OutOfMemory)?;
        if !self.memory.zero(frame) {
            self.give_back(frame);
            return Err(Fault::OutOfMemory);
        }
        // The page is in the user half, empty, and its region's rights
        // (never NONE here) include reading: only the tables are missing.
        let placed = match self.leaf_slot(page, true) {
            Ok(Some((table, index))) => self.place(table, index, frame, region.rights, false),
            _ => Err(VmError::OutOfMemory),
        };
        match placed {
            Ok(()) => Ok(FaultOutcome::DemandZero),
            Err(_) => {
                self.give_back(frame);
                Err(Fault::OutOfMemory)
            }
        }
    }

    fn fault_on_present(&mut self, page: u64, current: u64, access: Access, cpu: Option<usize>) -> Result<FaultOutcome, Fault> {
        match access {
            Access::Read => Ok(FaultOutcome::Spurious),
            Access::Execute if current & NO_EXECUTE == 0 => Ok(FaultOutcome::Spurious),
            Access::Execute => Err(Fault::Segmentation),
            Access::Write if current & WRITABLE != 0 => Ok(FaultOutcome::Spurious),
            Access::Write if !entry::is_copy_on_write(current) => Err(Fault::Segmentation),
            Access::Write => self.break_copy_on_write(page, current, cpu),
        }
    }

    fn break_copy_on_write(&mut self, page: u64, current: u64, cpu: Option<usize>) -> Result<FaultOutcome, Fault> {
        if self.flush_owed() {
            return Err(Fault::Busy);
        }
        let old = entry::frame(current);
        let (table, index) = self.leaf_slot(page, false).ok().flatten().ok_or(Fault::Segmentation)?;
        let writable = (current | WRITABLE) & !COPY_ON_WRITE;
        if self.owners.owners(old) == 1 {
            self.memory.write_word(table, index, writable);
            return Ok(FaultOutcome::TookOver);
        }
        self.reserve_limbo(1).map_err(|_| Fault::OutOfMemory)?;
        let fresh = self.take_frame().ok_or(Fault::OutOfMemory)?;
        if !self.memory.copy_page(table, index, fresh) || self.owners.join(fresh).is_err() {
            self.give_back(fresh);
            return Err(Fault::OutOfMemory);
        }
        let mut flush = self.flush();
        let only_here = cpu.is_some_and(|cpu| flush.cpus.is_only(cpu));
        let mapped = if only_here { writable } else { current };
        if !self.memory.write_word(table, index, (mapped & !entry::ADDRESS_MASK) | fresh) {
            self.owners.leave(fresh);
            self.give_back(fresh);
            return Err(Fault::OutOfMemory);
        }
        self.limbo.push(old);
        flush.add_page(page);
        self.settle_now_if_unseen(&flush);
        Ok(FaultOutcome::Copied { flush: self.owe(flush) })
    }

    /// Unmaps everything, frees every frame this space was the last owner
    /// of and every page table, the root included. The flush covers every
    /// user translation on every CPU that ran the space; the kernel must
    /// also make sure no CPU still has the root loaded before the frames
    /// are reused.
    pub fn destroy(mut self) -> TlbFlush {
        self.release_everything();
        let mut flush = self.flush();
        flush.everything = true;
        flush
    }

    /// Frees all user pages and tables of the lower half, and the root.
    pub(crate) fn release_everything(&mut self) {
        for frame in core::mem::take(&mut self.limbo) {
            self.let_go(frame);
        }
        // Leaf tables first, then the tables above them: every table goes
        // after its children.
        let mut entries = [0u64; BATCH];
        for table in self.tables.all() {
            for batch in batches(table.used()) {
                // Emptied first, so that no page is named by an entry of
                // this space when it goes.
                let first = batch.start;
                let read = self.read_batch(table.frame, batch, &mut entries);
                let emptied = self.memory.write_words(table.frame, first, &[0; BATCH][..read.len()]);
                for &current in read[..emptied].iter().filter(|&&current| entry::holds_frame(current)) {
                    self.let_go(entry::frame(current));
                }
            }
            self.memory.write_word(table.parent, usize::from(table.parent_index), 0);
            self.give_back(table.frame);
        }
        self.tables.clear();
        self.give_back(self.root);
        self.regions.clear();
        self.region_bytes = 0;
        self.loose_pages = 0;
    }

    /// The bytes the space covers: its demand-zero regions and every
    /// mapped page outside them (what `RLIMIT_AS` limits). Kept as the
    /// space changes: a walk per `mmap` under a limit made filling 64 MiB
    /// page by page quadratic (posix `pthread_cond_init/4-1`: 5.3 billion
    /// instructions, 94 % here).
    pub fn size(&self) -> u64 {
        self.region_bytes + self.loose_pages * PAGE_SIZE
    }

    /// [`Self::size`] by walking the tables: what the kept counts must
    /// equal (tests).
    #[cfg(test)]
    pub(crate) fn size_by_walk(&self) -> u64 {
        let regions: u64 = self.regions.iter().map(|region| region.end - region.start).sum();
        let mut loose = 0u64;
        let mut walk = crate::table_walk::TableWalk::new(self.root);
        while let Some(step) = walk.next(&self.memory) {
            if let crate::table_walk::Step::LeafTable { address, table } = step {
                for index in 0..LEAF_ENTRIES {
                    let page = address + index as u64 * PAGE_SIZE;
                    if entry::holds_frame(self.memory.read_word(table, index)) && self.region_at(page).is_none() {
                        loose += 1;
                    }
                }
            }
        }
        regions + loose * PAGE_SIZE
    }

    /// Checks the table list against a walk of the tables themselves:
    /// the same tables, each under the parent entry the list names, and
    /// every leaf entry holding a frame inside its table's used span
    /// (tests).
    #[cfg(test)]
    pub(crate) fn check_table_list(&self) -> Result<(), alloc::string::String> {
        use crate::table_walk::{Step, TableWalk};
        let mut walked = Vec::new();
        let mut walk = TableWalk::new(self.root);
        while let Some(step) = walk.next(&self.memory) {
            match step {
                Step::LeafTable { address, table } => {
                    let Some(known) = self.tables.leaves().iter().find(|known| known.frame == table) else {
                        return Err(alloc::format!("leaf table {table:#x} ({address:#x}) is not in the list"));
                    };
                    if known.address != address {
                        return Err(alloc::format!("leaf table {table:#x} maps {address:#x}, the list says {:#x}", known.address));
                    }
                    let used = known.used();
                    if let Some(index) = (0..LEAF_ENTRIES).find(|index| !used.contains(index) && entry::holds_frame(self.memory.read_word(table, *index))) {
                        return Err(alloc::format!("entry {index} of {address:#x}'s table holds a frame outside {used:?}"));
                    }
                }
                Step::TableDone { table, parent, parent_index } => walked.push((table, parent, parent_index)),
            }
        }
        let mut listed: Vec<(u64, u64, usize)> = self.tables.all().iter().map(|known| (known.frame, known.parent, usize::from(known.parent_index))).collect();
        walked.sort_unstable();
        listed.sort_unstable();
        if walked != listed {
            return Err(alloc::format!("tables walked {walked:x?}, listed {listed:x?}"));
        }
        Ok(())
    }

    /// Every page holding a frame: (address, leaf table, index, entry), in
    /// address order.
    #[cfg(test)]
    pub(crate) fn for_each_leaf(&self, mut visit: impl FnMut(u64, u64, usize, u64) -> Result<(), VmError>) -> Result<(), VmError> {
        self.for_each_leaf_batch(|address, table, first, entries| {
            for (offset, &current) in entries.iter().enumerate().filter(|&(_, &current)| entry::holds_frame(current)) {
                visit(address + offset as u64 * PAGE_SIZE, table, first + offset, current)?;
            }
            Ok(())
        })
    }

    /// Entries `batch` (at most [`BATCH`]) of leaf table `table`, read
    /// into `words` at once.
    fn read_batch<'w>(&self, table: u64, batch: core::ops::Range<usize>, words: &'w mut [u64; BATCH]) -> &'w [u64] {
        let read = &mut words[..batch.len()];
        self.memory.read_words(table, batch.start, read);
        read
    }

    /// The entries of every leaf table that may hold a frame, in
    /// batches of at most [`BATCH`] read at once, each from its first to
    /// its last entry holding a frame: (the address the first maps, the
    /// table, the first's index, the entries), in address order.
    pub(crate) fn for_each_leaf_batch(&self, mut visit: impl FnMut(u64, u64, usize, &[u64]) -> Result<(), VmError>) -> Result<(), VmError> {
        let mut entries = [0u64; BATCH];
        for table in self.tables.leaves() {
            for batch in batches(table.used()) {
                let first = batch.start;
                let batch = self.read_batch(table.frame, batch, &mut entries);
                // Narrowed to the entries holding frames: a span stays
                // wide after its pages are unmapped.
                let holds = |current: &u64| entry::holds_frame(*current);
                let Some(start) = batch.iter().position(holds) else { continue };
                let end = batch.iter().rposition(holds).map_or(start, |last| last + 1);
                visit(table.address + (first + start) as u64 * PAGE_SIZE, table.frame, first + start, &batch[start..end])?;
            }
        }
        Ok(())
    }
}

/// The region of `regions` (sorted, apart) holding `address`.
fn region_in(regions: &[Region], address: u64) -> Option<&Region> {
    let after = regions.partition_point(|region| region.start <= address);
    regions[..after].last().filter(|region| address < region.end)
}

/// Whether `rights` allow `access`.
pub(crate) fn allows(rights: Rights, access: Access) -> bool {
    match access {
        Access::Read => rights.read(),
        Access::Write => rights.write(),
        Access::Execute => rights.execute(),
    }
}
