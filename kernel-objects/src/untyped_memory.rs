//! Frames charged to containers, as the rest of the kernel holds them.
//!
//! The machine layer reaches frame contents only through its handles,
//! checked against its record of every frame (`machine::frame_access`).
//! This file wraps them with the container each frame is charged to:
//! - [`OwnedFrame`]: a frame the allocator handed out, charged to a
//!   container, with one holder (not `Copy`, not `Clone`); filled through
//!   its methods, then given to an address space (`map` takes it) or
//!   dropped (freed);
//! - [`SharedFrame`]: a shared-memory object's page, lent by address to a
//!   space that maps it as one more reference (the machine checks that
//!   the page is a mapped one when the entry is written).
//!
//! Must never free a frame without its charge, or charge one twice.

use containers::ContainerId;
use machine::frame_access::Frame;

use crate::kernel_containers::{allocate_charged_frame, free_charged_frame, ChargedFrameError};

/// A frame charged to a container, held by one owner (see the module
/// comment). Dropping it frees it and its charge.
#[must_use = "dropping an owned frame frees it"]
pub struct OwnedFrame {
    /// Always `Some` until it is given away or dropped.
    frame: Option<Frame>,
    container: ContainerId,
}

impl OwnedFrame {
    /// A fresh frame charged to `container` (its contents are whatever was
    /// there: zero it before a program sees it).
    pub fn allocate(container: ContainerId) -> Result<Self, ChargedFrameError> {
        Ok(Self { frame: Some(allocate_charged_frame(container)?), container })
    }

    /// Its physical address (to map it).
    pub fn address(&self) -> u64 {
        self.frame.as_ref().map_or(0, Frame::address)
    }

    /// Fills it with zeroes.
    pub fn zero(&mut self) -> bool {
        self.frame.as_mut().is_some_and(Frame::zero)
    }

    /// Copies `bytes` to `offset` in it; `false` (nothing written) when they
    /// do not fit.
    pub fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> bool {
        self.frame.as_mut().is_some_and(|frame| frame.write_bytes(offset, bytes))
    }

    /// Copies `buffer.len()` bytes at `offset` out of it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        self.frame.as_ref().is_some_and(|frame| frame.read_bytes(offset, buffer))
    }

    /// Gives the frame up to whatever owns it from now on (an address
    /// space's tables, a memory object), charge included.
    pub(crate) fn into_frame(mut self) -> Option<Frame> {
        self.frame.take()
    }
}

impl Drop for OwnedFrame {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            free_charged_frame(self.container, frame);
        }
    }
}

/// An address space takes an owned frame over when it maps it.
impl vmem::FreshFrame for OwnedFrame {
    type Frame = Frame;

    fn address(&self) -> u64 {
        OwnedFrame::address(self)
    }

    fn into_frame(self) -> Option<Frame> {
        OwnedFrame::into_frame(self)
    }
}

/// A frame of a shared-memory object (`capabilities::memory_objects`),
/// lent to a space that maps it as one more reference. Made only in this
/// crate, from an object's own pages.
pub struct SharedFrame {
    address: u64,
}

impl SharedFrame {
    /// The object's page at `address` (this crate only: the caller holds
    /// the object).
    pub(crate) fn of_object(address: u64) -> Self {
        Self { address }
    }
}

impl vmem::SharedFrame for SharedFrame {
    fn address(&self) -> u64 {
        self.address
    }
}
