//! The scheduler's queues as plain data: one ReadyQ and one PendQ per CPU.
//!
//! This is the portable heart of the threads layer (mC2's design): a CPU
//! runs threads from its own ReadyQ, which only it touches; another CPU that
//! wakes a thread homed here pushes it on this CPU's PendQ (and sends an IPI
//! when this CPU is idle); the owner moves its PendQ into its ReadyQ each
//! time it schedules. Nothing here knows about hardware or locks: the kernel
//! wraps each queue in a spinlock, and `tests/` check this code against the
//! abstract model in [`crate::spec`].

extern crate alloc;
use alloc::collections::VecDeque;

/// What the waker must do after queueing a woken thread: on its own CPU
/// ([`CpuQueues::push_ready`]) or on another CPU ([`CpuQueues::push_pending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeDelivery {
    /// Queued on the waker's own ReadyQ.
    Local,
    /// Queued on another CPU's PendQ; that CPU will see it when it next schedules.
    Remote { cpu: usize },
}

/// The ReadyQ and PendQ of one CPU.
#[derive(Debug)]
pub struct CpuQueues<T> {
    ready: VecDeque<T>,
    pending: VecDeque<T>,
}

impl<T> Default for CpuQueues<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> CpuQueues<T> {
    pub const fn new() -> Self {
        Self { ready: VecDeque::new(), pending: VecDeque::new() }
    }

    /// Adds a runnable thread at the back of the ReadyQ (owner CPU only).
    pub fn push_ready(&mut self, thread: T) {
        self.ready.push_back(thread);
    }

    /// Adds a thread woken by another CPU (any CPU, under the PendQ's lock).
    pub fn push_pending(&mut self, thread: T) {
        self.pending.push_back(thread);
    }

    /// Moves every pending thread, in arrival order, behind the ready ones.
    pub fn absorb_pending(&mut self) {
        self.ready.extend(self.pending.drain(..));
    }

    /// The next thread to run, oldest first.
    pub fn pop_ready(&mut self) -> Option<T> {
        self.ready.pop_front()
    }

    pub fn ready_len(&self) -> usize {
        self.ready.len()
    }

    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The ReadyQ, oldest first (for reports).
    pub fn ready_iter(&self) -> impl Iterator<Item = &T> {
        self.ready.iter()
    }

    /// The PendQ, oldest first (for reports).
    pub fn pending_iter(&self) -> impl Iterator<Item = &T> {
        self.pending.iter()
    }

    /// True when neither queue holds a thread.
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty() && self.pending.is_empty()
    }

    /// Takes the ReadyQ's oldest thread for which `movable` holds (used to
    /// hand work to an idle CPU).
    pub fn take_ready_where(&mut self, movable: impl Fn(&T) -> bool) -> Option<T> {
        let position = self.ready.iter().position(movable)?;
        self.ready.remove(position)
    }
}

/// Where a wake-up from `waker_cpu` for a thread homed on `home_cpu` goes.
pub fn route_wakeup(waker_cpu: usize, home_cpu: usize) -> WakeDelivery {
    if waker_cpu == home_cpu {
        WakeDelivery::Local
    } else {
        WakeDelivery::Remote { cpu: home_cpu }
    }
}
