//! Kernel threads and their park/unpark handshake.
//!
//! Parking follows the permit model of `std::thread::park`: `unpark` leaves
//! a permit; `park` consumes one, sleeping until it arrives. This is the one
//! blocking primitive; condition variables, queues and IPC channels in the
//! synchronization layer are built on it, so "no lost wake-up" rests on the
//! state machine below:
//!
//! | state | `park` | `unpark` |
//! | --- | --- | --- |
//! | `EMPTY` | → `PARKED`, switch away | → `NOTIFIED` |
//! | `NOTIFIED` | → `EMPTY`, return at once | stays |
//! | `PARKED` | — | → `NOTIFIED`, make the thread ready |
//!
//! A thread that set `PARKED` may still be on its CPU when it is made
//! ready; the machine layer's context switch waits for it to be off-CPU
//! before anyone resumes it.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use containers::ContainerId;
use machine::context::ThreadContext;

use super::lock::{queue_lock, QueueLock};
use super::trace::Trace;

const EMPTY: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

/// Where a thread stands in the park/unpark handshake (for reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkState {
    /// No permit waiting, not parked.
    Empty,
    /// A permit waits for the next `park`.
    Notified,
    /// Parked: only an `unpark` makes it ready again.
    Parked,
}

/// A kernel thread.
pub struct Thread {
    id: u64,
    name: &'static str,
    pub(crate) context: Arc<ThreadContext>,
    park_state: AtomicU8,
    exited: AtomicBool,
    /// The CPU whose queues the thread joins when it becomes ready.
    home_cpu: AtomicUsize,
    /// A pinned thread is never moved by load balancing.
    pinned: AtomicBool,
    /// The body, taken by the thread's first run.
    pub(crate) start: QueueLock<Option<Box<dyn FnOnce() + Send>>>,
    /// Whether this is a CPU's idle thread (never queued).
    pub(crate) idle: bool,
    /// The container the thread is charged to (and its children inherit).
    container: ContainerId,
    /// The last scheduling events (debug builds), for stall reports.
    pub(crate) trace: Trace,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Thread {
    pub(crate) fn new(
        name: &'static str,
        context: Arc<ThreadContext>,
        home_cpu: usize,
        start: Option<Box<dyn FnOnce() + Send>>,
        idle: bool,
        container: ContainerId,
    ) -> Self {
        Self {
            // Relaxed: ids only need to be unique.
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name,
            context,
            park_state: AtomicU8::new(EMPTY),
            exited: AtomicBool::new(false),
            home_cpu: AtomicUsize::new(home_cpu),
            pinned: AtomicBool::new(false),
            start: queue_lock(start),
            idle,
            container,
            trace: Trace::new(),
        }
    }

    /// The container this thread is charged to.
    pub fn container(&self) -> ContainerId {
        self.container
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn home_cpu(&self) -> usize {
        self.home_cpu.load(Ordering::Acquire)
    }

    pub fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Acquire)
    }

    pub fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    pub(crate) fn mark_exited(&self) {
        self.exited.store(true, Ordering::Release);
    }

    /// Moves the thread's home; takes effect the next time it becomes ready.
    pub(crate) fn set_home(&self, cpu: usize, pinned: bool) {
        self.home_cpu.store(cpu, Ordering::Release);
        self.pinned.store(pinned, Ordering::Release);
    }

    /// The thread's park state now (a snapshot, for reports).
    pub fn park_state(&self) -> ParkState {
        match self.park_state.load(Ordering::Relaxed) {
            EMPTY => ParkState::Empty,
            NOTIFIED => ParkState::Notified,
            _ => ParkState::Parked,
        }
    }

    /// Consumes a waiting permit; true when there was one.
    pub(crate) fn take_permit(&self) -> bool {
        // Acquire: see what the unparker wrote before leaving the permit.
        self.park_state.compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// EMPTY → PARKED. False when a permit arrived meanwhile (then it is consumed).
    pub(crate) fn begin_park(&self) -> bool {
        match self.park_state.compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(_) => {
                self.park_state.store(EMPTY, Ordering::Release);
                false
            }
        }
    }

    /// After waking from a park: consume the permit that woke us.
    pub(crate) fn finish_park(&self) {
        // Acquire: pairs with the Release of the unparker's swap.
        self.park_state.swap(EMPTY, Ordering::Acquire);
    }

    /// Leaves a permit; true when the thread was parked and must be made ready.
    pub(crate) fn give_permit(&self) -> bool {
        // AcqRel: publish the waker's writes; read the parker's state.
        self.park_state.swap(NOTIFIED, Ordering::AcqRel) == PARKED
    }
}
