//! Where the data of tmpfs files lives: physical frames, one per page,
//! charged to the container of the thread that made the file system (the
//! boot's root container for `/`, `/tmp` and `/dev`; the caller's for a
//! `mount`). A tmpfs so holds as much as memory allows — the kernel heap
//! keeps only its inodes and names — and a full memory is `ENOSPC` for the
//! one write, as on Linux.
//!
//! May not map these frames anywhere: a page is owned by its file alone
//! and freed with its charge when the file lets it go.

use alloc::boxed::Box;
use alloc::sync::Arc;

use containers::ContainerId;
use kernel_objects::untyped_memory::OwnedFrame;
use vfs::{Errno, Page, PageStore, Tmpfs};

/// A fresh tmpfs whose files' data lives in frames.
pub fn new_tmpfs() -> Tmpfs {
    Tmpfs::with_page_store(crate::clock::now(), Arc::new(FramePages { container: sched::current().container() }))
}

struct FramePages {
    container: ContainerId,
}

struct FramePage(OwnedFrame);

impl PageStore for FramePages {
    fn allocate(&self) -> Result<Box<dyn Page>, Errno> {
        let mut frame = OwnedFrame::allocate(self.container).map_err(|_| Errno::ENOSPC)?;
        if !frame.zero() {
            return Err(Errno::ENOSPC); // `frame` drops: freed
        }
        Ok(Box::new(FramePage(frame)))
    }

    fn free_pages(&self) -> Option<u64> {
        Some(kernel_objects::physical_memory::free_frames())
    }
}

impl Page for FramePage {
    fn read(&self, offset: usize, buffer: &mut [u8]) {
        // Only before the kernel's frame key exists can this fail; a page
        // is never made then.
        if !self.0.read_bytes(offset, buffer) {
            buffer.fill(0);
        }
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) {
        let _ = self.0.write_bytes(offset, bytes);
    }
}
