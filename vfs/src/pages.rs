//! The bytes of a tmpfs file: a length and a sparse run of pages, each
//! from a [`PageStore`]. The kernel's store hands out physical frames (so
//! a tmpfs holds as much as memory allows, not as much as the kernel
//! heap); [`HeapPages`] keeps them on the heap for host tests and tools.
//! A page never written is a hole and reads as zeroes.
//!
//! **Must never** panic on any offset or length: past the largest file
//! is `EFBIG`, no page to be had is `ENOSPC` (as a full tmpfs on Linux),
//! and a refused change leaves the file as it was.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::Errno;

/// Bytes per page.
pub const PAGE_BYTES: usize = 4096;

/// The largest file a tmpfs holds (Linux's `MAX_LFS_FILESIZE` is far
/// larger; memory ends well before this).
pub const MAX_FILE_BYTES: u64 = 1 << 40;

/// One page of file data.
pub trait Page: Send + Sync {
    /// Copies `buffer.len()` bytes at `offset` (within the page) out.
    fn read(&self, offset: usize, buffer: &mut [u8]);
    /// Copies `bytes` to `offset` (within the page).
    fn write(&mut self, offset: usize, bytes: &[u8]);
}

/// Where a tmpfs gets pages; a page goes back when it is dropped.
pub trait PageStore: Send + Sync {
    /// A zeroed page, or `ENOSPC` when there is none to be had.
    fn allocate(&self) -> Result<Box<dyn Page>, Errno>;

    /// Pages that could be had now, if the store knows (for `statfs`).
    fn free_pages(&self) -> Option<u64> {
        None
    }
}

/// Pages on the heap.
pub struct HeapPages;

struct HeapPage(Box<[u8]>);

impl Page for HeapPage {
    fn read(&self, offset: usize, buffer: &mut [u8]) {
        buffer.copy_from_slice(&self.0[offset..offset + buffer.len()]);
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) {
        self.0[offset..offset + bytes.len()].copy_from_slice(bytes);
    }
}

impl PageStore for HeapPages {
    fn allocate(&self) -> Result<Box<dyn Page>, Errno> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(PAGE_BYTES).map_err(|_| Errno::ENOSPC)?;
        bytes.resize(PAGE_BYTES, 0);
        Ok(Box::new(HeapPage(bytes.into_boxed_slice())))
    }
}

/// A file's bytes: its length and its pages (`None`: a hole).
#[derive(Default)]
pub(crate) struct PagedData {
    length: u64,
    pages: Vec<Option<Box<dyn Page>>>,
}

/// Pages needed to hold `length` bytes.
fn pages_for(length: u64) -> usize {
    length.div_ceil(PAGE_BYTES as u64) as usize
}

impl PagedData {
    /// Bytes in the file.
    pub(crate) fn len(&self) -> u64 {
        self.length
    }

    /// Pages that hold data (holes not counted).
    pub(crate) fn pages_held(&self) -> u64 {
        self.pages.iter().filter(|page| page.is_some()).count() as u64
    }

    /// Copies from `offset` into `buffer`; how many bytes (0 at the end).
    pub(crate) fn read(&self, offset: u64, buffer: &mut [u8]) -> usize {
        let end = offset.saturating_add(buffer.len() as u64).min(self.length);
        let mut at = offset;
        while at < end {
            let (index, within) = ((at / PAGE_BYTES as u64) as usize, (at % PAGE_BYTES as u64) as usize);
            let chunk = ((end - at) as usize).min(PAGE_BYTES - within);
            let done = (at - offset) as usize;
            let into = &mut buffer[done..done + chunk];
            match self.pages.get(index).and_then(Option::as_ref) {
                Some(page) => page.read(within, into),
                None => into.fill(0),
            }
            at += chunk as u64;
        }
        end.saturating_sub(offset) as usize
    }

    /// Writes `bytes` at `offset`, growing the file (a hole in between);
    /// every page it needs is had first, so a refusal changes nothing.
    pub(crate) fn write(&mut self, store: &dyn PageStore, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let end = offset.checked_add(bytes.len() as u64).filter(|end| *end <= MAX_FILE_BYTES).ok_or(Errno::EFBIG)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let (first, last) = ((offset / PAGE_BYTES as u64) as usize, ((end - 1) / PAGE_BYTES as u64) as usize);
        if self.pages.len() <= last {
            self.pages.try_reserve(last + 1 - self.pages.len()).map_err(|_| Errno::ENOSPC)?;
        }
        let missing = (first..=last).filter(|&index| self.pages.get(index).is_none_or(Option::is_none)).count();
        let mut fresh = Vec::new();
        fresh.try_reserve_exact(missing).map_err(|_| Errno::ENOSPC)?;
        for _ in 0..missing {
            fresh.push(store.allocate()?);
        }
        if self.pages.len() <= last {
            self.pages.resize_with(last + 1, || None);
        }
        for index in first..=last {
            if self.pages[index].is_none() {
                self.pages[index] = fresh.pop();
            }
        }
        let mut at = offset;
        while at < end {
            let (index, within) = ((at / PAGE_BYTES as u64) as usize, (at % PAGE_BYTES as u64) as usize);
            let chunk = ((end - at) as usize).min(PAGE_BYTES - within);
            let done = (at - offset) as usize;
            if let Some(page) = self.pages[index].as_mut() {
                page.write(within, &bytes[done..done + chunk]);
            }
            at += chunk as u64;
        }
        self.length = self.length.max(end);
        Ok(())
    }

    /// Sets the length: cutting gives back the pages past it and zeroes
    /// the rest of the last one (so growing again shows zeroes); growing
    /// leaves a hole.
    pub(crate) fn set_length(&mut self, length: u64) -> Result<(), Errno> {
        if length > MAX_FILE_BYTES {
            return Err(Errno::EFBIG);
        }
        if length < self.length {
            self.pages.truncate(pages_for(length));
            let (index, within) = ((length / PAGE_BYTES as u64) as usize, (length % PAGE_BYTES as u64) as usize);
            if within != 0 {
                if let Some(Some(page)) = self.pages.get_mut(index) {
                    page.write(within, &[0; PAGE_BYTES][within..]);
                }
            }
            self.pages.shrink_to(pages_for(length));
        }
        self.length = length;
        Ok(())
    }

    /// A copy of `bytes` in pages of `store` (a borrowed file's first
    /// change).
    pub(crate) fn copy_of(store: &dyn PageStore, bytes: &[u8]) -> Result<Self, Errno> {
        let mut data = Self::default();
        data.write(store, 0, bytes)?;
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// Heap pages, at most `limit` of them alive at once.
    struct Limited {
        limit: usize,
        alive: alloc::sync::Arc<AtomicUsize>,
    }

    struct Counted(Box<dyn Page>, alloc::sync::Arc<AtomicUsize>);

    impl Page for Counted {
        fn read(&self, offset: usize, buffer: &mut [u8]) {
            self.0.read(offset, buffer)
        }
        fn write(&mut self, offset: usize, bytes: &[u8]) {
            self.0.write(offset, bytes)
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_sub(1, Ordering::Relaxed);
        }
    }

    impl PageStore for Limited {
        fn allocate(&self) -> Result<Box<dyn Page>, Errno> {
            if self.alive.load(Ordering::Relaxed) >= self.limit {
                return Err(Errno::ENOSPC);
            }
            self.alive.fetch_add(1, Ordering::Relaxed);
            Ok(Box::new(Counted(HeapPages.allocate()?, self.alive.clone())))
        }
    }

    fn limited(limit: usize) -> Limited {
        Limited { limit, alive: Default::default() }
    }

    fn read_all(data: &PagedData) -> Vec<u8> {
        let mut bytes = vec![0xAA; data.len() as usize];
        assert_eq!(data.read(0, &mut bytes), bytes.len());
        bytes
    }

    #[test]
    fn writes_across_pages_read_back_and_holes_read_as_zeroes() {
        let store = limited(100);
        let mut data = PagedData::default();
        let far = 5 * PAGE_BYTES as u64 + 100;
        data.write(&store, far, b"far").unwrap();
        data.write(&store, 4090, &[7; 20]).unwrap();
        assert_eq!(data.len(), far + 3);
        assert_eq!(data.pages_held(), 3, "pages 0, 1 and 5; 2 to 4 are holes");
        let mut expected = vec![0u8; (far + 3) as usize];
        expected[4090..4110].fill(7);
        expected[far as usize..].copy_from_slice(b"far");
        assert!(read_all(&data) == expected);
        let mut tail = [0xAA; 10];
        assert_eq!(data.read(far + 1, &mut tail), 2);
        assert_eq!(&tail[..2], b"ar");
        assert_eq!(data.read(far + 3, &mut tail), 0);
        assert_eq!(data.read(u64::MAX, &mut tail), 0);
    }

    #[test]
    fn a_write_without_pages_to_be_had_changes_nothing() {
        let store = limited(2);
        let mut data = PagedData::default();
        data.write(&store, 0, b"kept").unwrap();
        assert_eq!(data.write(&store, 0, &[1; 3 * PAGE_BYTES]), Err(Errno::ENOSPC));
        assert_eq!(read_all(&data), b"kept");
        assert_eq!(store.alive.load(Ordering::Relaxed), 1, "the pages had for the refused write went back");
        assert_eq!(data.write(&store, u64::MAX - 1, b"xy"), Err(Errno::EFBIG));
        assert_eq!(data.write(&store, MAX_FILE_BYTES, b"x"), Err(Errno::EFBIG));
    }

    #[test]
    fn cutting_gives_pages_back_and_growing_again_shows_zeroes() {
        let store = limited(100);
        let mut data = PagedData::default();
        data.write(&store, 0, &[9; 3 * PAGE_BYTES]).unwrap();
        data.set_length(PAGE_BYTES as u64 + 10).unwrap();
        assert_eq!(store.alive.load(Ordering::Relaxed), 2);
        data.set_length(3 * PAGE_BYTES as u64).unwrap();
        let bytes = read_all(&data);
        assert!(bytes[..PAGE_BYTES + 10].iter().all(|&byte| byte == 9));
        assert!(bytes[PAGE_BYTES + 10..].iter().all(|&byte| byte == 0), "nothing cut off comes back");
        data.set_length(0).unwrap();
        assert_eq!((data.len(), store.alive.load(Ordering::Relaxed)), (0, 0));
        assert_eq!(data.set_length(MAX_FILE_BYTES + 1), Err(Errno::EFBIG));
    }

    #[test]
    fn random_writes_and_cuts_match_a_plain_buffer() {
        let store = limited(1000);
        let mut data = PagedData::default();
        let mut model: Vec<u8> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for step in 0..2000 {
            if next(10) == 0 {
                let length = next(6 * PAGE_BYTES as u64);
                data.set_length(length).unwrap();
                model.resize(length as usize, 0);
            } else {
                let offset = next(6 * PAGE_BYTES as u64) as usize;
                let bytes: Vec<u8> = (0..next(2 * PAGE_BYTES as u64)).map(|i| (i as u8) ^ (step as u8)).collect();
                data.write(&store, offset as u64, &bytes).unwrap();
                if model.len() < offset + bytes.len() {
                    model.resize(offset + bytes.len(), 0);
                }
                model[offset..offset + bytes.len()].copy_from_slice(&bytes);
            }
            let bytes = read_all(&data);
            assert_eq!(bytes.len(), model.len(), "length at step {step}");
            let differs = bytes.iter().zip(&model).position(|(got, want)| got != want);
            assert_eq!(differs, None, "first differing byte at step {step}");
        }
    }
}
