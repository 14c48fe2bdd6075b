//! `SetOnce<T>`: a `&'static T` published once at boot and read lock-free
//! ever after, for kernel-wide objects built at run time (the frame
//! allocator) whose every use must not take a lock just to find them.
//!
//! Must never hand out a reference before it is set, or let it change.

use core::sync::atomic::{AtomicPtr, Ordering};

/// A slot for one `&'static T`, empty until [`SetOnce::set`].
pub struct SetOnce<T: 'static> {
    pointer: AtomicPtr<T>,
}

/// [`SetOnce::set`] found the slot already set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlreadySet;

impl<T: Sync + 'static> SetOnce<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        Self { pointer: AtomicPtr::new(core::ptr::null_mut()) }
    }

    /// Publishes `value`; `Err` (and no change) if a value is there already.
    pub fn set(&self, value: &'static T) -> Result<(), AlreadySet> {
        let pointer = core::ptr::from_ref(value).cast_mut();
        // Release: whoever reads the pointer sees `value` fully built.
        self.pointer
            .compare_exchange(core::ptr::null_mut(), pointer, Ordering::Release, Ordering::Relaxed)
            .map(drop)
            .map_err(|_| AlreadySet)
    }

    /// The value, once set.
    pub fn get(&self) -> Option<&'static T> {
        // Acquire: pairs with the Release in `set`.
        let pointer = self.pointer.load(Ordering::Acquire);
        // SAFETY: the pointer is null or came from a `&'static T` in `set`
        // and is never changed afterwards, so it is valid, aligned and
        // immutable for 'static; `T: Sync` makes sharing it across CPUs
        // sound. `as_ref` maps null to `None`.
        unsafe { pointer.cast_const().as_ref() }
    }
}

impl<T: Sync + 'static> Default for SetOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}
