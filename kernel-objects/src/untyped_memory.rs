//! The key to untyped memory and the handles it hides behind.
//!
//! The machine layer reaches frame contents only through its `DirectMap`
//! key, made once by the kernel image with an `unsafe` constructor whose
//! promise this crate keeps: it passes only frames it owns. The key lives
//! here, private; the rest of the kernel reaches frame contents through:
//! - [`OwnedFrame`]: a frame the allocator handed out, charged to a
//!   container, with one holder (not `Copy`, not `Clone`); filled through
//!   its methods, then given to an address space (`map` takes it) or
//!   dropped (freed);
//! - [`SharedFrame`]: a shared-memory object's frame, made only here, which
//!   `map_shared` maps as one more owner;
//! - the address spaces' page tables and pages (`address_spaces.rs`) and
//!   the checked copies to and from user memory (`user_memory.rs`), which
//!   reach only frames their space's tables hold.
//!
//! Must never hand out the key or a raw-address accessor.

use containers::ContainerId;
use frames::{FrameNumber, PhysicalAddress};
use machine::frame_access::DirectMap;
use machine::set_once::SetOnce;

use crate::kernel_containers::{allocate_charged_frame, free_charged_frame, ChargedFrameError};

static KEY: SetOnce<DirectMap> = SetOnce::new();

/// Keeps the kernel's one `DirectMap` (the boot sequence's). Only the
/// first call counts.
pub fn install_key(key: DirectMap) {
    let key: &'static DirectMap = alloc::boxed::Box::leak(alloc::boxed::Box::new(key));
    let _ = KEY.set(key);
}

/// The key, once installed (always, after boot).
pub(crate) fn key() -> Option<&'static DirectMap> {
    KEY.get()
}

/// A frame charged to a container, held by one owner (see the module
/// comment). Dropping it frees it and its charge.
#[must_use = "dropping an owned frame frees it"]
pub struct OwnedFrame {
    address: u64,
    container: ContainerId,
}

impl OwnedFrame {
    /// A fresh frame charged to `container` (its contents are whatever was
    /// there: zero it before a program sees it).
    pub fn allocate(container: ContainerId) -> Result<Self, ChargedFrameError> {
        let frame = allocate_charged_frame(container)?;
        Ok(Self { address: frame.start_address().0, container })
    }

    /// Its physical address (to map it).
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Fills it with zeroes.
    pub fn zero(&mut self) -> bool {
        key().is_some_and(|key| key.zero(self.address))
    }

    /// Copies `bytes` to `offset` in it; `false` (nothing written) when they
    /// do not fit.
    pub fn write_bytes(&mut self, offset: usize, bytes: &[u8]) -> bool {
        key().is_some_and(|key| key.write_bytes(self.address, offset, bytes))
    }

    /// Copies `buffer.len()` bytes at `offset` out of it.
    pub fn read_bytes(&self, offset: usize, buffer: &mut [u8]) -> bool {
        key().is_some_and(|key| key.read_bytes(self.address, offset, buffer))
    }

    /// Gives the frame up to whatever owns it from now on (an address
    /// space's tables, a memory object), charge included; returns its
    /// address for the new owner's records.
    pub(crate) fn into_mapping(self) -> u64 {
        let address = self.address;
        core::mem::forget(self);
        address
    }
}

impl Drop for OwnedFrame {
    fn drop(&mut self) {
        if let Err(error) = free_charged_frame(self.container, FrameNumber::containing(PhysicalAddress(self.address))) {
            machine::println!("lamina: warning: freeing an owned frame {:#x} refused: {error}", self.address);
        }
    }
}

/// An address space takes an owned frame over when it maps it.
impl vmem::FreshFrame for OwnedFrame {
    fn address(&self) -> u64 {
        self.address
    }

    fn give_to_space(self) {
        let _ = self.into_mapping();
    }
}

/// A frame of a shared-memory object (`capabilities::memory_objects`),
/// lent to a space that maps it as one more owner. Made only in this
/// crate, from an object's own frames, so a caller outside it cannot name
/// an arbitrary frame to map.
pub struct SharedFrame {
    address: u64,
}

impl SharedFrame {
    /// The object's frame at `address` (this crate only: the caller holds
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
