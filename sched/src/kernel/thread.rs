//! Kernel threads: what the scheduler keeps of each one. The park/unpark
//! handshake is [`ParkPermit`]'s (portable, loom-checked); this file only
//! holds it.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use containers::ContainerId;
use machine::context::ThreadContext;

use super::lock::{queue_lock, QueueLock};
use super::trace::Trace;
use crate::kick_flag::KickFlag;
use crate::park_permit::{ParkPermit, ParkState};
use crate::placement::CpuMask;
use crate::thread_end::ThreadEnd;

/// A kernel thread.
pub struct Thread {
    id: u64,
    name: &'static str,
    pub(crate) context: Arc<ThreadContext>,
    pub(crate) permit: ParkPermit,
    /// Raised by `kick`: look before running user code again.
    pub(crate) kick: KickFlag,
    end: ThreadEnd,
    /// The CPU whose queues the thread joins when it becomes ready.
    home_cpu: AtomicUsize,
    /// A pinned thread is never moved by load balancing.
    pinned: AtomicBool,
    /// The CPUs it may run on ([`CpuMask`] bits; all ones: every CPU).
    allowed: AtomicU64,
    /// Uptime (ns) when it last joined a queue: how long it has waited.
    queued_at: AtomicU64,
    /// An idle CPU may take it from a busy one (threads made by
    /// `spawn_placed`: user threads; kernel threads stay where made).
    balanced: AtomicBool,
    /// The body, taken by the thread's first run.
    pub(crate) start: QueueLock<Option<Box<dyn FnOnce() + Send>>>,
    /// Whether this is a CPU's idle thread (never queued).
    pub(crate) idle: bool,
    /// The container the thread is charged to (and its children inherit).
    container: ContainerId,
    /// The last scheduling events (debug builds), for stall reports.
    pub(crate) trace: Trace,
    /// Time-stamp counter cycles it has run on a CPU, up to its CPU's
    /// last switch or timer tick.
    cpu_cycles: AtomicU64,
    /// Allocation-failure injection may fail this thread's allocations
    /// (set for a workload under test; threads it creates inherit it).
    injectable: AtomicBool,
    /// The part of `cpu_cycles` it spent in user mode, in time-stamp cycles
    /// (the machine layer measures each stay with interrupts off, so a stay
    /// never spans a switch); the rest is its system time.
    user_cycles: AtomicU64,
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
            permit: ParkPermit::new(),
            kick: KickFlag::new(),
            end: ThreadEnd::new(),
            home_cpu: AtomicUsize::new(home_cpu),
            pinned: AtomicBool::new(false),
            allowed: AtomicU64::new(CpuMask::ALL.bits()),
            queued_at: AtomicU64::new(0),
            balanced: AtomicBool::new(false),
            start: queue_lock(start),
            idle,
            container,
            trace: Trace::new(),
            cpu_cycles: AtomicU64::new(0),
            user_cycles: AtomicU64::new(0),
            injectable: AtomicBool::new(false),
        }
    }

    /// Whether allocation-failure injection may fail this thread's
    /// allocations.
    pub fn injectable(&self) -> bool {
        self.injectable.load(Ordering::Relaxed)
    }

    /// Lets allocation-failure injection fail this thread's allocations
    /// (and those of the threads it creates from now on), or not.
    pub fn set_injectable(&self, injectable: bool) {
        self.injectable.store(injectable, Ordering::Relaxed);
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

    /// The thread itself, before it looks at what a kick may have changed
    /// (its signals, its process's end): clears the kick; whether one came
    /// (`kick_flag`).
    #[inline]
    pub fn take_kick(&self) -> bool {
        self.kick.take()
    }

    /// The thread itself, interrupts off, just before user mode: whether a
    /// kick came after its looks (then it looks again instead).
    #[inline]
    pub fn is_kicked(&self) -> bool {
        self.kick.is_raised()
    }

    pub fn home_cpu(&self) -> usize {
        self.home_cpu.load(Ordering::Acquire)
    }

    pub fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Acquire)
    }

    /// The CPUs it may run on.
    pub fn allowed(&self) -> CpuMask {
        CpuMask::from_bits(self.allowed.load(Ordering::Acquire))
    }

    /// Restricts it to `allowed`; a thread homed elsewhere moves the next
    /// time it becomes ready (`make_ready`).
    pub(crate) fn set_allowed(&self, allowed: CpuMask) {
        self.allowed.store(allowed.bits(), Ordering::Release);
    }

    /// Whether an idle CPU may take it from a busy one.
    pub fn is_balanced(&self) -> bool {
        self.balanced.load(Ordering::Relaxed) && !self.is_pinned()
    }

    pub(crate) fn set_balanced(&self, balanced: bool) {
        self.balanced.store(balanced, Ordering::Relaxed);
    }

    /// Uptime (ns) when it last joined a queue.
    pub(crate) fn queued_at(&self) -> u64 {
        self.queued_at.load(Ordering::Relaxed)
    }

    pub(crate) fn set_queued_at(&self, uptime: u64) {
        // Relaxed: a hint for load balancing, read under the queue's lock.
        self.queued_at.store(uptime, Ordering::Relaxed);
    }

    /// Whether the thread has exited; its container charge is back by then.
    pub fn has_exited(&self) -> bool {
        self.end.has_exited()
    }

    /// Runs `settle` (the container charge goes back), then marks the
    /// thread exited (see `thread_end.rs` for why in that order).
    pub(crate) fn finish(&self, settle: impl FnOnce()) {
        self.end.finish(settle);
    }

    /// Moves the thread's home; takes effect the next time it becomes ready.
    pub(crate) fn set_home(&self, cpu: usize, pinned: bool) {
        self.home_cpu.store(cpu, Ordering::Release);
        self.pinned.store(pinned, Ordering::Release);
    }

    /// Nanoseconds charged to it, up to its CPU's last switch or tick
    /// ([`crate::cpu_time_of`] adds the stint of a thread running now;
    /// [`crate::own_cpu_time`] is the caller's own).
    pub fn cpu_time(&self) -> u64 {
        machine::timer::nanoseconds_of_cycles(self.cpu_cycles())
    }

    /// [`Self::cpu_time`] in time-stamp counter cycles, as charged.
    pub(crate) fn cpu_cycles(&self) -> u64 {
        self.cpu_cycles.load(Ordering::Relaxed)
    }

    pub(crate) fn add_cpu_cycles(&self, cycles: u64) {
        // Relaxed: a statistic, added only by the CPU running the thread.
        self.cpu_cycles.fetch_add(cycles, Ordering::Relaxed);
    }

    /// The part of its CPU time (ns) spent in user mode, up to its last
    /// exit from user mode (a stay in user mode under way is not in it yet:
    /// the machine layer hands the time over at the exit).
    pub fn user_time(&self) -> u64 {
        machine::timer::nanoseconds_of_cycles(self.user_cycles.load(Ordering::Relaxed))
    }

    /// Adds `cycles` of time-stamp counter spent in user mode. Only the
    /// thread itself calls it (the layer above, after each exit from user
    /// mode), so a load and a store do.
    #[inline]
    pub fn add_user_cycles(&self, cycles: u64) {
        // Relaxed: a statistic with one writer.
        let before = self.user_cycles.load(Ordering::Relaxed);
        self.user_cycles.store(before.wrapping_add(cycles), Ordering::Relaxed);
    }

    /// The thread's park state now (a snapshot, for reports).
    pub fn park_state(&self) -> ParkState {
        self.permit.state()
    }
}
