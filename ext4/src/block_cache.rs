//! A write-back block cache in front of a [`BlockDevice`]: it behaves as
//! a disk with a volatile write cache, which is exactly the disk the
//! journal is written for — writes may reach the device late and in any
//! order, and [`BlockDevice::flush`] returns only once every write before
//! it is on the device and the device has flushed. So the file system's
//! crash guarantees (ordered data before each commit block, the commit
//! before the checkpoint) hold through it unchanged; the crash tiers
//! check them on the device beneath.
//!
//! The cache holds 4 KiB chunks (8 sectors), each with a mask of the
//! sectors it knows and of those written but not yet on the device, and
//! evicts the least recently used eighth when full (writing dirty chunks
//! back first). A miss right after the chunk before it reads 64 KiB ahead
//! (a file read page by page, a mapping faulted in order). Requests of
//! 64 KiB or more stream past it (the cache's
//! copies of their sectors are kept up to date), so a large sequential
//! read or write does not evict what small requests reuse.
//!
//! Must never return stale data: every read sees the last write to each
//! sector, whether it is in the cache or on the device. Must never panic
//! when memory runs out: a chunk that cannot be allocated is read or
//! written straight through.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::block_device::{checked_byte_range, BlockDevice, IoError, SECTOR_SIZE};

/// Sectors per chunk.
const CHUNK_SECTORS: u64 = 8;
const CHUNK_BYTES: usize = CHUNK_SECTORS as usize * SECTOR_SIZE;
/// Requests this long or longer stream past the cache.
pub const STREAM_BYTES: usize = 64 * 1024;
/// Chunks a sequential reader's miss reads at once (64 KiB).
const READ_AHEAD_CHUNKS: u64 = 16;

struct Chunk {
    data: Box<[u8]>,
    /// Bit `i`: sector `i` of the chunk is known (equal to the device's,
    /// or newer if dirty).
    valid: u8,
    /// Bit `i`: sector `i` is newer than the device's.
    dirty: u8,
    used: u64,
}

impl Chunk {
    /// Takes the sectors of `fresh` (the device's, from the chunk's first
    /// sector on) that the chunk does not know; a known sector — a dirty
    /// one above all — stays as it is.
    fn fill_unknown(&mut self, fresh: &[u8]) {
        for (sector, bytes) in fresh.chunks(SECTOR_SIZE).enumerate() {
            if self.valid & (1 << sector) == 0 {
                self.data[sector * SECTOR_SIZE..(sector + 1) * SECTOR_SIZE].copy_from_slice(bytes);
                self.valid |= 1 << sector;
            }
        }
    }
}

/// What the cache has done, for benchmarks and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStatistics {
    /// Requests (or pieces of one) served without reading the device.
    pub hits: u64,
    /// Chunks read from the device.
    pub misses: u64,
    /// Sectors written back from the cache.
    pub written_back: u64,
    /// Chunks evicted.
    pub evicted: u64,
    /// Pieces read or written straight through for want of memory.
    pub uncached: u64,
    /// Flushes with nothing written since the last: not sent.
    pub flushes_skipped: u64,
    /// Misses that read ahead (a sequential reader).
    pub read_ahead: u64,
}

/// The cache's state, for a device the caller passes to each request:
/// what a kernel keeps under its own lock ([`CachedDevice`] keeps it in a
/// `RefCell`, for one thread).
pub struct BlockCache {
    chunks: BTreeMap<u64, Chunk>,
    capacity: usize,
    clock: u64,
    statistics: CacheStatistics,
    /// Something was written to the device since its last flush (a
    /// flush with nothing dirty and nothing written has nothing to do).
    unflushed: bool,
}

/// `device` behind a write-back cache of at most `capacity` chunks, for
/// one thread (host tests, tools).
pub struct CachedDevice<D> {
    device: D,
    cache: RefCell<BlockCache>,
}

impl<D: BlockDevice> CachedDevice<D> {
    /// `device` with a cache of at most `capacity` 4 KiB chunks (0: none).
    pub fn new(device: D, capacity: usize) -> Self {
        Self { device, cache: RefCell::new(BlockCache::new(capacity)) }
    }

    /// What the cache has done so far.
    pub fn statistics(&self) -> CacheStatistics {
        self.cache.try_borrow().map_or_else(|_| CacheStatistics::default(), |cache| cache.statistics())
    }

    /// Chunks held now.
    pub fn cached_chunks(&self) -> usize {
        self.cache.try_borrow().map_or(0, |cache| cache.cached_chunks())
    }

    /// The device beneath, without writing anything back.
    pub fn into_inner(self) -> D {
        self.device
    }
}

impl<D: BlockDevice> BlockDevice for CachedDevice<D> {
    fn sector_count(&self) -> u64 {
        self.device.sector_count()
    }

    fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        self.cache.try_borrow_mut().map_err(|_| IoError::Busy)?.read(&self.device, first_sector, buffer)
    }

    fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        self.cache.try_borrow_mut().map_err(|_| IoError::Busy)?.write(&self.device, first_sector, data)
    }

    fn flush(&self) -> Result<(), IoError> {
        self.cache.try_borrow_mut().map_err(|_| IoError::Busy)?.flush(&self.device)
    }
}

impl BlockCache {
    /// An empty cache of at most `capacity` 4 KiB chunks (0: none).
    pub const fn new(capacity: usize) -> Self {
        let statistics = CacheStatistics { hits: 0, misses: 0, written_back: 0, evicted: 0, uncached: 0, flushes_skipped: 0, read_ahead: 0 };
        Self { chunks: BTreeMap::new(), capacity, clock: 0, statistics, unflushed: false }
    }

    /// What the cache has done so far.
    pub fn statistics(&self) -> CacheStatistics {
        self.statistics
    }

    /// Chunks held now.
    pub fn cached_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The sectors of chunk `index` that lie on the device (the last
    /// chunk may be cut short by the device's end).
    fn sectors_in<D: BlockDevice>(device: &D, index: u64) -> u64 {
        device.sector_count().saturating_sub(index * CHUNK_SECTORS).min(CHUNK_SECTORS)
    }

    /// Chunk `index` with at least the sectors of `needed` valid (read
    /// from the device when `read` and some are missing); `None` when
    /// no memory could hold it.
    fn chunk<D: BlockDevice>(&mut self, device: &D, index: u64, needed: u8, read: bool) -> Result<Option<&mut Chunk>, IoError> {
        let known = self.chunks.get(&index).is_some_and(|chunk| chunk.valid & needed == needed);
        if read && !known && index > 0 && self.chunks.contains_key(&(index - 1)) {
            // The chunk before is here: a sequential reader (a file read
            // page by page, a mapping faulted in order). Read ahead.
            self.read_ahead(device, index)?;
        }
        let Some(chunk) = self.held(device, index)? else { return Ok(None) };
        if read && chunk.valid & needed != needed {
            let sectors = Self::sectors_in(device, index);
            let mut fresh = [0u8; CHUNK_BYTES];
            device.read_sectors(index * CHUNK_SECTORS, &mut fresh[..sectors as usize * SECTOR_SIZE])?;
            chunk.fill_unknown(&fresh[..sectors as usize * SECTOR_SIZE]);
            self.statistics.misses += 1;
        } else {
            self.statistics.hits += 1;
        }
        Ok(self.chunks.get_mut(&index))
    }

    /// Chunk `index`, made empty (evicting first when the cache is full)
    /// if it is not held, and marked just used; `None` when no memory
    /// could hold it.
    fn held<D: BlockDevice>(&mut self, device: &D, index: u64) -> Result<Option<&mut Chunk>, IoError> {
        if !self.chunks.contains_key(&index) {
            if self.chunks.len() >= self.capacity {
                self.evict(device)?;
            }
            let mut data = Vec::new();
            if self.chunks.len() >= self.capacity || data.try_reserve_exact(CHUNK_BYTES).is_err() {
                return Ok(None);
            }
            data.resize(CHUNK_BYTES, 0);
            self.chunks.insert(index, Chunk { data: data.into_boxed_slice(), valid: 0, dirty: 0, used: 0 });
        }
        self.clock += 1;
        let clock = self.clock;
        Ok(self.chunks.get_mut(&index).map(|chunk| {
            chunk.used = clock;
            chunk
        }))
    }

    /// Reads chunks `index..` (up to [`READ_AHEAD_CHUNKS`], a quarter of
    /// the cache at most) in one request and keeps them, filling only the
    /// sectors the cache does not know (a dirty sector stays as written).
    /// Best effort: without memory it reads nothing.
    fn read_ahead<D: BlockDevice>(&mut self, device: &D, index: u64) -> Result<(), IoError> {
        let window = (READ_AHEAD_CHUNKS as usize).min(self.capacity / 4).max(1) as u64;
        let first_sector = index * CHUNK_SECTORS;
        let end_sector = ((index + window) * CHUNK_SECTORS).min(device.sector_count());
        if end_sector <= first_sector {
            return Ok(());
        }
        let length = (end_sector - first_sector) as usize * SECTOR_SIZE;
        let mut fresh = Vec::new();
        if fresh.try_reserve_exact(length).is_err() {
            return Ok(());
        }
        fresh.resize(length, 0);
        device.read_sectors(first_sector, &mut fresh)?;
        self.statistics.misses += 1;
        self.statistics.read_ahead += 1;
        for (offset, piece) in fresh.chunks(CHUNK_BYTES).enumerate() {
            let Some(chunk) = self.held(device, index + offset as u64)? else { return Ok(()) };
            chunk.fill_unknown(piece);
        }
        Ok(())
    }

    /// Drops the least recently used eighth of the chunks, writing the
    /// dirty ones back first (a write without a flush, as a disk's cache
    /// may do at any time).
    fn evict<D: BlockDevice>(&mut self, device: &D) -> Result<(), IoError> {
        let mut by_age: Vec<(u64, u64)> = Vec::new();
        if by_age.try_reserve_exact(self.chunks.len()).is_err() {
            return Ok(());
        }
        by_age.extend(self.chunks.iter().map(|(&index, chunk)| (chunk.used, index)));
        by_age.sort_unstable();
        let mut victims: Vec<u64> = by_age.iter().take((self.chunks.len() / 8).max(1)).map(|&(_, index)| index).collect();
        victims.sort_unstable();
        self.write_back(device, &victims)?;
        for index in victims {
            self.chunks.remove(&index);
            self.statistics.evicted += 1;
        }
        Ok(())
    }

    /// Writes the dirty sectors of chunks `indices` (ascending) to the
    /// device, contiguous ones in one request each.
    fn write_back<D: BlockDevice>(&mut self, device: &D, indices: &[u64]) -> Result<(), IoError> {
        // Each chunk's runs of contiguous dirty sectors, borrowed in place
        // (no copy: the cache may be most of the heap), handed to the
        // device together (it may have several in flight, and merges
        // neighbours).
        let mut pieces: Vec<(u64, &[u8])> = Vec::new();
        let mut written = 0u64;
        for &index in indices {
            let Some(chunk) = self.chunks.get(&index) else { continue };
            let mut sector = 0;
            while sector < CHUNK_SECTORS {
                if chunk.dirty & (1 << sector) == 0 {
                    sector += 1;
                    continue;
                }
                let run = (sector..CHUNK_SECTORS).take_while(|next| chunk.dirty & (1 << next) != 0).count() as u64;
                let bytes = &chunk.data[sector as usize * SECTOR_SIZE..(sector + run) as usize * SECTOR_SIZE];
                if pieces.try_reserve(1).is_err() {
                    // No room for the list: this piece on its own.
                    device.write_sectors(index * CHUNK_SECTORS + sector, bytes)?;
                } else {
                    pieces.push((index * CHUNK_SECTORS + sector, bytes));
                }
                written += run;
                sector += run;
            }
        }
        if written == 0 {
            return Ok(());
        }
        self.unflushed = true;
        device.write_many(&pieces)?;
        drop(pieces);
        for index in indices {
            if let Some(chunk) = self.chunks.get_mut(index) {
                chunk.dirty = 0;
            }
        }
        self.statistics.written_back += written;
        Ok(())
    }

    /// Copies the cache's known sectors over `buffer` (which holds the
    /// device's sectors from `first_sector` on).
    fn overlay(&self, first_sector: u64, buffer: &mut [u8]) {
        let last_sector = first_sector + (buffer.len() / SECTOR_SIZE) as u64;
        let chunks = first_sector / CHUNK_SECTORS..last_sector.div_ceil(CHUNK_SECTORS);
        for (&index, chunk) in self.chunks.range(chunks) {
            for sector in 0..CHUNK_SECTORS {
                let absolute = index * CHUNK_SECTORS + sector;
                if chunk.valid & (1 << sector) != 0 && (first_sector..last_sector).contains(&absolute) {
                    let target = (absolute - first_sector) as usize * SECTOR_SIZE;
                    let source = sector as usize * SECTOR_SIZE;
                    buffer[target..target + SECTOR_SIZE].copy_from_slice(&chunk.data[source..source + SECTOR_SIZE]);
                }
            }
        }
    }
}

/// The mask of sectors `first..first + count` of a chunk.
fn mask(first: u64, count: u64) -> u8 {
    (((1u16 << count) - 1) << first) as u8
}

impl BlockCache {
    /// Reads sectors from `first_sector` on into `buffer`, from the cache
    /// or `device`.
    pub fn read<D: BlockDevice>(&mut self, device: &D, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        checked_byte_range(first_sector, buffer.len(), device.sector_count())?;
        if buffer.len() >= STREAM_BYTES {
            device.read_sectors(first_sector, buffer)?;
            self.overlay(first_sector, buffer);
            return Ok(());
        }
        let mut sector = first_sector;
        let mut done = 0;
        while done < buffer.len() {
            let (index, offset) = (sector / CHUNK_SECTORS, sector % CHUNK_SECTORS);
            let count = (CHUNK_SECTORS - offset).min(((buffer.len() - done) / SECTOR_SIZE) as u64);
            let piece = &mut buffer[done..done + count as usize * SECTOR_SIZE];
            match self.chunk(device, index, mask(offset, count), true)? {
                Some(chunk) => piece.copy_from_slice(&chunk.data[offset as usize * SECTOR_SIZE..(offset + count) as usize * SECTOR_SIZE]),
                None => {
                    self.statistics.uncached += 1;
                    device.read_sectors(sector, piece)?;
                    self.overlay(sector, piece);
                }
            }
            sector += count;
            done += count as usize * SECTOR_SIZE;
        }
        Ok(())
    }

    /// Writes `data` from `first_sector` on: into the cache, or (long
    /// requests, or no memory) to `device`.
    pub fn write<D: BlockDevice>(&mut self, device: &D, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
        checked_byte_range(first_sector, data.len(), device.sector_count())?;
        let last_sector = first_sector + (data.len() / SECTOR_SIZE) as u64;
        if data.len() >= STREAM_BYTES {
            // The cache's copies of these sectors take the new bytes and
            // are clean once the device has them; if the device refuses,
            // they are forgotten (the caller sees the error).
            self.unflushed = true;
            let written = device.write_sectors(first_sector, data);
            let chunks = first_sector / CHUNK_SECTORS..last_sector.div_ceil(CHUNK_SECTORS);
            for (&index, chunk) in self.chunks.range_mut(chunks) {
                for sector in 0..CHUNK_SECTORS {
                    let absolute = index * CHUNK_SECTORS + sector;
                    if !(first_sector..last_sector).contains(&absolute) {
                        continue;
                    }
                    let bit = 1u8 << sector;
                    if written.is_ok() {
                        let source = (absolute - first_sector) as usize * SECTOR_SIZE;
                        chunk.data[sector as usize * SECTOR_SIZE..(sector as usize + 1) * SECTOR_SIZE].copy_from_slice(&data[source..source + SECTOR_SIZE]);
                        chunk.valid |= bit;
                    } else {
                        chunk.valid &= !bit;
                    }
                    chunk.dirty &= !bit;
                }
            }
            return written;
        }
        let mut sector = first_sector;
        let mut done = 0;
        while done < data.len() {
            let (index, offset) = (sector / CHUNK_SECTORS, sector % CHUNK_SECTORS);
            let count = (CHUNK_SECTORS - offset).min(((data.len() - done) / SECTOR_SIZE) as u64);
            let piece = &data[done..done + count as usize * SECTOR_SIZE];
            match self.chunk(device, index, mask(offset, count), false)? {
                Some(chunk) => {
                    chunk.data[offset as usize * SECTOR_SIZE..(offset + count) as usize * SECTOR_SIZE].copy_from_slice(piece);
                    chunk.valid |= mask(offset, count);
                    chunk.dirty |= mask(offset, count);
                }
                None => {
                    self.statistics.uncached += 1;
                    self.unflushed = true;
                    device.write_sectors(sector, piece)?;
                }
            }
            sector += count;
            done += count as usize * SECTOR_SIZE;
        }
        Ok(())
    }

    /// Writes every dirty sector back to `device`, then flushes it.
    pub fn flush<D: BlockDevice>(&mut self, device: &D) -> Result<(), IoError> {
        let dirty: Vec<u64> = self.chunks.iter().filter(|(_, chunk)| chunk.dirty != 0).map(|(&index, _)| index).collect();
        self.write_back(device, &dirty)?;
        if !self.unflushed {
            self.statistics.flushes_skipped += 1;
            return Ok(());
        }
        device.flush()?;
        self.unflushed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_disk::MemoryDisk;
    use alloc::vec;
    use core::cell::Cell;

    /// A memory disk that counts requests, can refuse writes, and keeps
    /// a copy of its contents at each flush.
    struct Watched {
        disk: MemoryDisk,
        writes: Cell<usize>,
        reads: Cell<usize>,
        refuse_writes: Cell<bool>,
        at_flushes: RefCell<Vec<Vec<u8>>>,
    }

    impl Watched {
        fn new(sectors: usize) -> Self {
            let disk = MemoryDisk::new((0..sectors * SECTOR_SIZE).map(|at| (at / SECTOR_SIZE) as u8).collect());
            Self { disk, writes: Cell::new(0), reads: Cell::new(0), refuse_writes: Cell::new(false), at_flushes: RefCell::new(Vec::new()) }
        }

        fn contents(&self) -> Vec<u8> {
            let mut all = vec![0u8; self.disk.sector_count() as usize * SECTOR_SIZE];
            self.disk.read_sectors(0, &mut all).unwrap();
            all
        }
    }

    impl BlockDevice for Watched {
        fn sector_count(&self) -> u64 {
            self.disk.sector_count()
        }
        fn read_sectors(&self, first_sector: u64, buffer: &mut [u8]) -> Result<(), IoError> {
            self.reads.set(self.reads.get() + 1);
            self.disk.read_sectors(first_sector, buffer)
        }
        fn write_sectors(&self, first_sector: u64, data: &[u8]) -> Result<(), IoError> {
            if self.refuse_writes.get() {
                return Err(IoError::Device);
            }
            self.writes.set(self.writes.get() + 1);
            self.disk.write_sectors(first_sector, data)
        }
        fn flush(&self) -> Result<(), IoError> {
            let contents = self.contents();
            self.at_flushes.borrow_mut().push(contents);
            Ok(())
        }
    }

    fn sectors(count: usize, fill: u8) -> Vec<u8> {
        vec![fill; count * SECTOR_SIZE]
    }

    #[test]
    fn small_writes_wait_for_the_flush_and_reads_see_them_at_once() {
        let cached = CachedDevice::new(Watched::new(64), 16);
        cached.write_sectors(3, &sectors(2, 0xAB)).unwrap();
        assert_eq!(cached.device.writes.get(), 0, "nothing reaches the device before a flush");
        let mut read = sectors(4, 0);
        cached.read_sectors(2, &mut read).unwrap();
        assert_eq!(&read[..512], &sectors(1, 2)[..], "sector 2 read from the device");
        assert_eq!(&read[512..1536], &sectors(2, 0xAB)[..], "sectors 3 and 4 from the cache");
        assert_eq!(&read[1536..], &sectors(1, 5)[..]);
        cached.flush().unwrap();
        let flushed = cached.device.at_flushes.borrow()[0].clone();
        assert_eq!(&flushed[3 * 512..5 * 512], &sectors(2, 0xAB)[..], "on the device when it flushed");
        assert_eq!(cached.device.writes.get(), 1, "two contiguous dirty sectors, one request");
    }

    #[test]
    fn a_flush_with_nothing_written_since_the_last_is_not_sent() {
        let cached = CachedDevice::new(Watched::new(256), 16);
        cached.flush().unwrap();
        assert_eq!(cached.device.at_flushes.borrow().len(), 0, "nothing was ever written");
        cached.write_sectors(1, &sectors(1, 1)).unwrap();
        cached.flush().unwrap();
        cached.flush().unwrap();
        assert_eq!(cached.device.at_flushes.borrow().len(), 1);
        // A streamed write reaches the device at once but is durable only
        // after a flush, which must then be sent.
        cached.write_sectors(64, &sectors(STREAM_BYTES / SECTOR_SIZE, 2)).unwrap();
        cached.flush().unwrap();
        assert_eq!(cached.device.at_flushes.borrow().len(), 2);
        assert_eq!(cached.statistics().flushes_skipped, 2);
    }

    #[test]
    fn a_sequential_reader_reads_ahead_without_touching_dirty_sectors() {
        let cached = CachedDevice::new(Watched::new(1024), 64);
        cached.write_sectors(8 * 5 + 2, &sectors(1, 0xEE)).unwrap();
        let mut page = sectors(8, 0);
        for chunk in 0..40u64 {
            cached.read_sectors(chunk * 8, &mut page).unwrap();
            let expected: Vec<u8> = (0..8u64).flat_map(|sector| if chunk == 5 && sector == 2 { sectors(1, 0xEE) } else { sectors(1, (chunk * 8 + sector) as u8) }).collect();
            assert_eq!(page, expected, "chunk {chunk}");
        }
        // Chunk 0 alone, then 16 at a time: 1 + 3 reads for 40 chunks.
        assert_eq!(cached.device.reads.get(), 4);
        assert_eq!(cached.statistics().read_ahead, 3);
    }

    #[test]
    fn a_cached_chunk_is_read_from_the_device_once() {
        let cached = CachedDevice::new(Watched::new(64), 16);
        let mut read = sectors(1, 0);
        for _ in 0..5 {
            cached.read_sectors(9, &mut read).unwrap();
        }
        assert_eq!(cached.device.reads.get(), 1);
        assert_eq!(read, sectors(1, 9));
        assert_eq!(cached.statistics().misses, 1);
    }

    #[test]
    fn streams_pass_by_but_keep_the_cache_true() {
        let cached = CachedDevice::new(Watched::new(512), 64);
        cached.write_sectors(10, &sectors(1, 0xCD)).unwrap();
        // A stream read overlapping the dirty sector sees it.
        let mut stream = sectors(STREAM_BYTES / SECTOR_SIZE, 0);
        cached.read_sectors(0, &mut stream).unwrap();
        assert_eq!(&stream[10 * 512..11 * 512], &sectors(1, 0xCD)[..]);
        assert_eq!(&stream[11 * 512..12 * 512], &sectors(1, 11)[..]);
        // A stream write over it replaces the cached copy, which is clean now.
        let new = sectors(STREAM_BYTES / SECTOR_SIZE, 0x77);
        cached.write_sectors(0, &new).unwrap();
        let mut one = sectors(1, 0);
        cached.read_sectors(10, &mut one).unwrap();
        assert_eq!(one, sectors(1, 0x77));
        cached.flush().unwrap();
        assert_eq!(cached.device.contents()[10 * 512..11 * 512], sectors(1, 0x77)[..], "the old dirty copy was not written back over it");
    }

    #[test]
    fn a_full_cache_writes_back_and_evicts_yet_loses_nothing() {
        let cached = CachedDevice::new(Watched::new(1024), 4);
        for chunk in 0..40u64 {
            cached.write_sectors(chunk * 8 + 1, &sectors(1, chunk as u8 + 100)).unwrap();
        }
        assert!(cached.cached_chunks() <= 4);
        assert!(cached.statistics().evicted > 0 && cached.device.writes.get() > 0);
        for chunk in 0..40u64 {
            let mut one = sectors(1, 0);
            cached.read_sectors(chunk * 8 + 1, &mut one).unwrap();
            assert_eq!(one, sectors(1, chunk as u8 + 100), "chunk {chunk}");
        }
    }

    #[test]
    fn a_refused_write_back_keeps_the_data_dirty_for_the_next_flush() {
        let cached = CachedDevice::new(Watched::new(64), 16);
        cached.write_sectors(20, &sectors(1, 0x42)).unwrap();
        cached.device.refuse_writes.set(true);
        assert_eq!(cached.flush(), Err(IoError::Device));
        assert!(cached.device.at_flushes.borrow().is_empty(), "no device flush after a failed write-back");
        cached.device.refuse_writes.set(false);
        cached.flush().unwrap();
        assert_eq!(cached.device.contents()[20 * 512..21 * 512], sectors(1, 0x42)[..]);
    }

    #[test]
    fn without_memory_for_a_chunk_requests_go_straight_through() {
        let cached = CachedDevice::new(Watched::new(64), 0);
        cached.write_sectors(5, &sectors(1, 9)).unwrap();
        assert_eq!(cached.device.writes.get(), 1);
        let mut one = sectors(1, 0);
        cached.read_sectors(5, &mut one).unwrap();
        assert_eq!(one, sectors(1, 9));
        assert_eq!(cached.statistics().uncached, 2);
    }

    #[test]
    fn bad_requests_are_refused_before_anything_changes() {
        let cached = CachedDevice::new(Watched::new(16), 4);
        assert_eq!(cached.write_sectors(15, &sectors(2, 1)), Err(IoError::OutOfRange));
        assert_eq!(cached.read_sectors(0, &mut [0u8; 100]), Err(IoError::PartialSector));
        assert_eq!(cached.cached_chunks(), 0);
    }

    /// Random requests against a plain disk: every read agrees, and at each
    /// device flush the device holds everything written before the flush.
    #[test]
    fn random_requests_agree_with_a_plain_disk_and_every_flush_makes_all_durable() {
        let sector_count = 300usize; // not a multiple of 8: a short last chunk
        let cached = CachedDevice::new(Watched::new(sector_count), 6);
        let reference = Watched::new(sector_count);
        let mut state = 0x1234_5678_9ABC_DEF0u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let mut flushes = 0;
        for step in 0..3000u64 {
            let long = next(10) == 0;
            let count = if long { STREAM_BYTES / SECTOR_SIZE + next(8) as usize } else { 1 + next(12) as usize };
            let count = count.min(sector_count);
            let first = next((sector_count - count + 1) as u64);
            match next(7) {
                0..=2 => {
                    let data: Vec<u8> = (0..count * SECTOR_SIZE).map(|at| (step as usize * 7 + at / SECTOR_SIZE) as u8).collect();
                    cached.write_sectors(first, &data).unwrap();
                    reference.write_sectors(first, &data).unwrap();
                }
                3..=5 => {
                    let (mut ours, mut theirs) = (sectors(count, 0), sectors(count, 0));
                    cached.read_sectors(first, &mut ours).unwrap();
                    reference.read_sectors(first, &mut theirs).unwrap();
                    assert_eq!(ours, theirs, "step {step}: {count} sectors at {first}");
                }
                _ => {
                    cached.flush().unwrap();
                    flushes += 1;
                    assert_eq!(cached.device.at_flushes.borrow().last(), Some(&reference.contents()), "step {step}: the flush left writes behind");
                }
            }
        }
        assert!(flushes > 100 && cached.statistics().evicted > 0 && cached.statistics().hits > 0);
    }
}
