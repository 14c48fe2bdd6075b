//! The park/unpark handshake of one thread, as plain atomics.
//!
//! Parking follows the permit model of `std::thread::park`: `unpark` leaves
//! a permit; `park` consumes one, sleeping until it arrives. This is the one
//! blocking primitive of the kernel; condition variables, queues and IPC
//! channels are built on it, so "no lost wake-up" rests on this state
//! machine (checked by loom in `tests/loom_park.rs`):
//!
//! | state | `park` | `unpark` |
//! | --- | --- | --- |
//! | `EMPTY` | → `PARKED`, switch away | → `NOTIFIED` |
//! | `NOTIFIED` | → `EMPTY`, return at once | stays |
//! | `PARKED` | — | → `NOTIFIED`, make the thread ready |
//!
//! Exactly one `unpark` sees `PARKED` per park that switched away, so a
//! parked thread is made ready exactly once. A thread that set `PARKED`
//! may still be on its CPU when it is made ready; the machine layer's
//! context switch waits for it to be off-CPU before anyone resumes it.

use crate::atomics::{AtomicU8, Ordering};

const EMPTY: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

/// Where a thread stands in the handshake (for reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkState {
    /// No permit waiting, not parked.
    Empty,
    /// A permit waits for the next `park`.
    Notified,
    /// Parked: only an `unpark` makes it ready again.
    Parked,
}

/// One thread's permit.
#[derive(Debug)]
pub struct ParkPermit {
    state: AtomicU8,
}

impl Default for ParkPermit {
    fn default() -> Self {
        Self::new()
    }
}

impl ParkPermit {
    loom_const_fn! {
        pub fn new() -> Self {
            Self { state: AtomicU8::new(EMPTY) }
        }
    }

    /// The state now (a snapshot, for reports).
    pub fn state(&self) -> ParkState {
        match self.state.load(Ordering::Relaxed) {
            EMPTY => ParkState::Empty,
            NOTIFIED => ParkState::Notified,
            _ => ParkState::Parked,
        }
    }

    /// Consumes a waiting permit; true when there was one.
    pub fn take_permit(&self) -> bool {
        // Acquire: see what the unparker wrote before leaving the permit.
        self.state.compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// EMPTY → PARKED: true when the caller must now switch away. False
    /// when a permit arrived meanwhile (then it is consumed).
    pub fn begin_park(&self) -> bool {
        match self.state.compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(_) => {
                self.state.store(EMPTY, Ordering::Release);
                false
            }
        }
    }

    /// After waking from a park: consume the permit that woke us.
    pub fn finish_park(&self) {
        // Acquire: pairs with the Release of the unparker's swap.
        self.state.swap(EMPTY, Ordering::Acquire);
    }

    /// Leaves a permit; true when the thread was parked and the caller must
    /// make it ready.
    pub fn give_permit(&self) -> bool {
        // AcqRel: publish the waker's writes; read the parker's state.
        self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED
    }
}
