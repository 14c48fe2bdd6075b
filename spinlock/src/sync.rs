//! The synchronization primitives the locks are built from: `core`'s in a
//! normal build, loom's under `--cfg loom`, so that loom model-checks the
//! very code the kernel runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Declares a `const fn` in a normal build and a plain `fn` under loom,
/// whose atomics and cells cannot be built in a constant.
macro_rules! loom_const_fn {
    ($(#[$attribute:meta])* $visibility:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attribute])* $visibility const fn $($rest)*
        #[cfg(loom)]
        $(#[$attribute])* $visibility fn $($rest)*
    };
}

/// Called once per turn of a spin loop (also by the layers above: the
/// sync layer's sleep lock spins a little before it sleeps).
#[inline(always)]
pub fn spin_hint() {
    // On x86 `pause`: frees the sibling hyperthread and avoids the
    // memory-order flush when the awaited store arrives.
    #[cfg(not(loom))]
    core::hint::spin_loop();
    // Host tests run more threads than cores, and a FIFO lock then hands
    // over to waiters the OS has descheduled: each hand-over would wait for
    // a time slice. Yielding lets that waiter run. (The kernel spins with
    // preemption off, so its waiters are always running.)
    #[cfg(all(test, not(loom)))]
    std::thread::yield_now();
    // Loom must be told that this thread cannot progress on its own, or it
    // would explore the spin loop forever.
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// An `UnsafeCell` that hands out raw pointers. Under loom each hand-out is
/// recorded as an access, so loom reports two unsynchronized accesses (as
/// from two holders of a broken lock) as a causality violation.
pub(crate) struct DataCell<T>(
    #[cfg(not(loom))] core::cell::UnsafeCell<T>,
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
);

impl<T> DataCell<T> {
    loom_const_fn! {
        pub(crate) fn new(value: T) -> Self {
            #[cfg(not(loom))]
            return Self(core::cell::UnsafeCell::new(value));
            #[cfg(loom)]
            return Self(loom::cell::UnsafeCell::new(value));
        }
    }

    /// A pointer for reading.
    #[inline(always)]
    pub(crate) fn get_const(&self) -> *const T {
        #[cfg(not(loom))]
        return self.0.get();
        #[cfg(loom)]
        return self.0.with(|pointer| pointer);
    }

    /// A pointer for writing.
    #[inline(always)]
    pub(crate) fn get_mut(&self) -> *mut T {
        #[cfg(not(loom))]
        return self.0.get();
        #[cfg(loom)]
        return self.0.with_mut(|pointer| pointer);
    }

    pub(crate) fn into_inner(self) -> T {
        self.0.into_inner()
    }
}
