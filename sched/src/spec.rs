//! Executable specification of the scheduler's queues.
//!
//! Abstractly, each CPU has runnable threads that arrived from each waking
//! CPU in order. Scheduling on a CPU takes a thread that is the oldest of
//! those woken by *some* CPU: wake-ups by one CPU are served in the order
//! they happened, wake-ups by different CPUs may interleave in any way, and
//! a CPU with runnable threads never picks nothing. Threads are never lost
//! or duplicated. (The ReadyQ/PendQ split is how the kernel gets there
//! without a shared lock on the hot path.) An idle CPU may take a runnable
//! thread from another CPU ([`RunQueuesSpec::take`]): it becomes runnable
//! on the taker as if the taker had woken it.

extern crate alloc;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// For each home CPU, one FIFO per waking CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunQueuesSpec<T> {
    fifos: Vec<Vec<VecDeque<T>>>,
}

/// A scheduling result the spec does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecViolation<T> {
    /// The CPU picked a thread that is not the oldest from any waker.
    OutOfOrder { picked: T },
    /// The CPU picked nothing although threads were runnable.
    IdleWhileRunnable,
    /// A CPU took a thread from a CPU where it was not runnable.
    NotRunnableThere { taken: T },
}

impl<T: Clone + PartialEq> RunQueuesSpec<T> {
    pub fn new(cpus: usize) -> Self {
        Self { fifos: (0..cpus).map(|_| (0..cpus).map(|_| VecDeque::new()).collect()).collect() }
    }

    /// CPU `waker` makes `thread` runnable on CPU `home`.
    pub fn make_ready(&mut self, waker: usize, home: usize, thread: T) {
        self.fifos[home][waker].push_back(thread);
    }

    /// Checks and applies the implementation's pick on `cpu`.
    pub fn schedule(&mut self, cpu: usize, picked: Option<T>) -> Result<(), SpecViolation<T>> {
        let Some(picked) = picked else {
            let runnable = self.fifos[cpu].iter().any(|fifo| !fifo.is_empty());
            return if runnable { Err(SpecViolation::IdleWhileRunnable) } else { Ok(()) };
        };
        let fifo = self.fifos[cpu].iter_mut().find(|fifo| fifo.front() == Some(&picked));
        match fifo {
            Some(fifo) => {
                fifo.pop_front();
                Ok(())
            }
            None => Err(SpecViolation::OutOfOrder { picked }),
        }
    }

    /// Checks and applies CPU `to` taking `thread`, runnable on `from`:
    /// it is runnable on `to` next, woken by `to`.
    pub fn take(&mut self, from: usize, to: usize, thread: T) -> Result<(), SpecViolation<T>> {
        let fifo = self.fifos[from].iter_mut().find(|fifo| fifo.contains(&thread));
        let Some(fifo) = fifo else {
            return Err(SpecViolation::NotRunnableThere { taken: thread });
        };
        fifo.retain(|queued| *queued != thread);
        self.fifos[to][to].push_back(thread);
        Ok(())
    }

    /// Runnable threads on `cpu`.
    pub fn runnable(&self, cpu: usize) -> usize {
        self.fifos[cpu].iter().map(VecDeque::len).sum()
    }
}
