//! Layer 2 of Lamina: physical memory.
//!
//! Provides the physical frame allocator the kernel uses after boot:
//! - [`BitmapFrameAllocator`]: one bit per 4 KiB frame; hands out single
//!   frames and aligned contiguous runs, takes them back, counts free frames
//!   in O(1). It takes no lock (operations need `&mut self`);
//! - [`CachedFrameAllocator`]: the bitmap behind one lock plus a cache of
//!   free frames per CPU, callable from every CPU at once, with a per-frame
//!   table that catches double frees even of frames sitting in a cache.
//!
//! Quota containers (crate `containers`) sit in front of it: every
//! operation either succeeds or returns a [`FrameError`] having changed
//! nothing, so a charge can be undone when the allocation fails.
//!
//! Relies on the spinlock layer for the cached allocator's locks, and on the
//! kernel for storage: a `&'static mut [u64]` bitmap (any contents: the
//! allocator overwrites it), a zeroed `&'static [AtomicU64]` table, and the
//! usable physical ranges, which it passes to
//! [`BitmapFrameAllocator::add_free`]. The heap is used once, at
//! construction, for the array of per-CPU caches.
//!
//! Must never: touch hardware or the frames' contents (it only does
//! bookkeeping), use `unsafe`, or panic on anything a caller passes it: a
//! double free, a frame out of range or an impossible request is an error
//! value and leaves the allocator unchanged.
//!
//! The `spec` module (feature `spec`) is the executable abstract model, a set
//! of free frames; `tests/refinement.rs` checks that the bitmap refines it,
//! `src/tests/` that the cached allocator does, on threads and under loom.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(any(test, loom))]
extern crate std;

mod address;
mod bit_array;
mod bitmap;
mod cached;
mod error;
mod frame_stack;
mod handed_out;
mod sync;
#[cfg(test)]
mod tests;
#[cfg(any(test, feature = "spec"))]
pub mod spec;

pub use address::{FrameNumber, FrameRange, PhysicalAddress, FRAME_SHIFT, FRAME_SIZE};
pub use bitmap::BitmapFrameAllocator;
pub use cached::{CachedFrameAllocator, FRAMES_GLOBAL_LEVEL, FRAME_CACHE_LEVEL};
pub use frame_stack::{BATCH, CACHE_CAPACITY};
pub use error::FrameError;
