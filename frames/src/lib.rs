//! Layer 2 of Lamina: physical memory.
//!
//! Provides the physical frame allocator the kernel uses after boot: a bitmap
//! with one bit per 4 KiB frame that hands out single frames and aligned
//! contiguous runs, takes them back, and counts free frames in O(1).
//! Containers (a tree of quotas) and per-CPU frame caches will be built on top
//! of [`BitmapFrameAllocator`]: every operation either succeeds or returns a
//! [`FrameError`] having changed nothing, so a quota check or a cache refill
//! can sit in front of it.
//!
//! Relies on the machine layer for its storage: a `&'static mut [u64]` bitmap
//! (any contents: the allocator overwrites it) and the usable physical ranges
//! of the memory map, which the kernel passes to
//! [`BitmapFrameAllocator::add_free`]. It takes no lock: operations need
//! `&mut self`, and the layer above keeps the allocator inside its lock.
//!
//! Must never: touch hardware or the frames' contents (it only does
//! bookkeeping), use `unsafe`, allocate from a heap (the `alloc` crate is used
//! only by the `spec` feature), or panic on anything a caller passes it: a
//! double free, a frame out of range or an impossible request is an error
//! value and leaves the allocator unchanged.
//!
//! The `spec` module (feature `spec`) is the executable abstract model, a set
//! of free frames; `tests/refinement.rs` checks that the bitmap refines it.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "spec"))]
extern crate alloc;

mod address;
mod bit_array;
mod bitmap;
mod error;
#[cfg(any(test, feature = "spec"))]
pub mod spec;

pub use address::{FrameNumber, FrameRange, PhysicalAddress, FRAME_SHIFT, FRAME_SIZE};
pub use bitmap::BitmapFrameAllocator;
pub use error::FrameError;
