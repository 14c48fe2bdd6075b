//! What the threads layer holds on every CPU, for stall reports: the
//! running thread, the ReadyQ and PendQ, whether the CPU sits in its idle
//! loop, its last timer tick and the wake IPIs sent to it.
//!
//! Reads other CPUs' state without waiting on it: a queue lock that stays
//! held (its CPU may be the stuck one) is reported as held instead of
//! waited for. Never changes scheduling state.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::Ordering;

use machine::percpu;
use machine::symbols::SymbolTable;

use super::scheduler::CPUS;
use super::thread::Thread;
use crate::park_permit::ParkState;
use super::trace::TraceEvent;

/// Attempts at a queue lock before it is reported as held.
const LOCK_ATTEMPTS: usize = 1_000;

/// One thread as a report shows it.
#[derive(Debug, Clone)]
pub struct ThreadSummary {
    pub id: u64,
    pub name: &'static str,
    pub park: ParkState,
    pub home_cpu: usize,
    pub exited: bool,
    /// Its context is on a CPU (running, or being left).
    pub on_cpu: bool,
    /// Its last scheduling events (debug builds).
    pub trace: Vec<TraceEvent>,
    /// Where the timer last preempted it (debug builds; 0: never).
    pub preempted_at: u64,
}

impl ThreadSummary {
    pub fn of(thread: &Thread) -> Self {
        Self {
            id: thread.id(),
            name: thread.name(),
            park: thread.park_state(),
            home_cpu: thread.home_cpu(),
            exited: thread.has_exited(),
            on_cpu: thread.context.is_running(),
            trace: Vec::new(),
            preempted_at: 0,
        }
    }

    /// As [`of`](Self::of), with the thread's last scheduling events.
    pub fn traced(thread: &Thread) -> Self {
        Self { trace: thread.trace.events(), preempted_at: thread.trace.preempted_at(), ..Self::of(thread) }
    }
}

impl fmt::Display for ThreadSummary {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let park = match self.park {
            ParkState::Empty => "",
            ParkState::Notified => " notified",
            ParkState::Parked => " parked",
        };
        let exited = if self.exited { " exited" } else { "" };
        let on_cpu = if self.on_cpu { " on a CPU" } else { "" };
        write!(formatter, "{}#{} home {}{park}{exited}{on_cpu}", self.name, self.id, self.home_cpu)?;
        if self.preempted_at != 0 {
            let symbols = SymbolTable::parse(machine::layout::kernel_symbols());
            match symbols.as_ref().and_then(|table| table.lookup(self.preempted_at)) {
                Some((symbol, offset)) => write!(formatter, " last preempted in {}+{offset:#x}", symbol.name)?,
                None => write!(formatter, " last preempted at {:#x}", self.preempted_at)?,
            }
        }
        if !self.trace.is_empty() {
            let events: Vec<String> = self.trace.iter().map(|event| alloc::format!("{event}")).collect();
            write!(formatter, " [trace ms: {}]", events.join("; "))?;
        }
        Ok(())
    }
}

/// A queue as read, or the fact that its lock stayed held.
#[derive(Debug, Clone)]
pub enum QueueContents {
    Read(Vec<ThreadSummary>),
    LockHeld,
}

/// What one CPU's scheduler holds.
#[derive(Debug, Clone)]
pub struct CpuReport {
    pub cpu: usize,
    pub current: Option<ThreadSummary>,
    /// The CPU is in its idle loop with nothing to run (wakers IPI it).
    pub idle: bool,
    pub ready: QueueContents,
    pub pending: QueueContents,
    pub switches: u64,
    pub ticks: u64,
    /// Uptime (ns) of the last timer tick.
    pub last_tick: u64,
    pub wake_ipis_sent: u64,
    pub wake_ipis_taken: u64,
    /// Ticks that waited for this CPU's sleeper list (should stay 0).
    pub contended_ticks: u64,
}

/// Reads every online CPU's scheduler.
pub fn report() -> Vec<CpuReport> {
    (0..percpu::online_count()).map(report_cpu).collect()
}

fn report_cpu(cpu: usize) -> CpuReport {
    let scheduler = &CPUS[cpu];
    let current = retry(|| scheduler.current.try_lock().map(|current| current.as_deref().map(ThreadSummary::traced))).flatten();
    let queues = retry(|| {
        scheduler.queues.try_lock().map(|queues| {
            let summarize = |threads: &mut dyn Iterator<Item = &Arc<Thread>>| threads.map(|thread| ThreadSummary::traced(thread)).collect();
            (summarize(&mut queues.ready_iter()), summarize(&mut queues.pending_iter()))
        })
    });
    let (ready, pending) = match queues {
        Some((ready, pending)) => (QueueContents::Read(ready), QueueContents::Read(pending)),
        None => (QueueContents::LockHeld, QueueContents::LockHeld),
    };
    // Relaxed: statistics, read once for a report.
    CpuReport {
        cpu,
        current,
        idle: scheduler.idle.is_set(),
        ready,
        pending,
        switches: scheduler.switches.load(Ordering::Relaxed),
        ticks: percpu::cpu(cpu).map_or(0, |per_cpu| per_cpu.ticks.load(Ordering::Relaxed)),
        last_tick: scheduler.last_tick.load(Ordering::Relaxed),
        wake_ipis_sent: scheduler.wake_ipis_sent.load(Ordering::Relaxed),
        wake_ipis_taken: scheduler.wake_ipis_taken.load(Ordering::Relaxed),
        contended_ticks: super::sleepers::contended_ticks(cpu),
    }
}

/// `attempt` until it gives a value, at most [`LOCK_ATTEMPTS`] times.
fn retry<T>(mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    (0..LOCK_ATTEMPTS).find_map(|_| {
        let value = attempt();
        if value.is_none() {
            core::hint::spin_loop();
        }
        value
    })
}

fn write_queue(formatter: &mut fmt::Formatter<'_>, name: &str, queue: &QueueContents) -> fmt::Result {
    match queue {
        QueueContents::LockHeld => write!(formatter, " {name}: lock held"),
        QueueContents::Read(threads) if threads.is_empty() => Ok(()),
        QueueContents::Read(threads) => {
            let listed: Vec<String> = threads.iter().map(|thread| alloc::format!("\n      {thread}")).collect();
            write!(formatter, " {name}: [{}]", listed.join(","))
        }
    }
}

impl fmt::Display for CpuReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "CPU {}: ", self.cpu)?;
        match &self.current {
            Some(thread) => write!(formatter, "running {thread}\n     ")?,
            None => write!(formatter, "running ? (lock held)")?,
        }
        if self.idle {
            write!(formatter, ", idle flag set")?;
        }
        write_queue(formatter, "ready", &self.ready)?;
        write_queue(formatter, "pending", &self.pending)?;
        write!(
            formatter,
            "; {} switches, {} ticks ({} waited for the sleeper list), last tick at {} ms, wake IPIs {} sent / {} taken",
            self.switches,
            self.ticks,
            self.contended_ticks,
            self.last_tick / 1_000_000,
            self.wake_ipis_sent,
            self.wake_ipis_taken
        )
    }
}
