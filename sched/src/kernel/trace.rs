//! A thread's last scheduling events, for stall reports (debug builds
//! only: the in-kernel test image has them, release kernels pay nothing).
//!
//! Each thread keeps a ring of its last [`TRACE_LENGTH`] events — parked,
//! given a permit, queued, chosen to run, preempted — each with the CPU
//! and the time. When a thread is found stuck, its trace says which step
//! of the park/unpark hand-off it passed last. Only atomics: events are
//! recorded with interrupts off, from any CPU, without a lock.


use alloc::vec::Vec;
use core::fmt;
#[cfg(debug_assertions)]
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Events kept per thread.
#[cfg(debug_assertions)]
pub const TRACE_LENGTH: usize = 12;

/// What happened to a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    /// `park` found a permit and returned at once.
    TookPermit,
    /// `park` set PARKED and switched away.
    Parked,
    /// Resumed after parking.
    Unparked,
    /// An `unpark` left a permit; `detail` 1 when it found the thread parked.
    GivenPermit,
    /// Put on its home CPU's own ReadyQ.
    QueuedLocal,
    /// Put on another CPU's PendQ; `detail` 1 when an IPI was sent.
    QueuedRemote,
    /// Chosen to run (switched to).
    Chosen,
    /// Chosen while already running on this CPU (no switch).
    KeptRunning,
}

impl TraceKind {
    #[cfg(debug_assertions)]
    const ALL: [TraceKind; 8] = [
        TraceKind::TookPermit,
        TraceKind::Parked,
        TraceKind::Unparked,
        TraceKind::GivenPermit,
        TraceKind::QueuedLocal,
        TraceKind::QueuedRemote,
        TraceKind::Chosen,
        TraceKind::KeptRunning,
    ];
}

/// One recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: TraceKind,
    /// The CPU that recorded it (for `QueuedRemote`, the target CPU).
    pub cpu: usize,
    pub detail: u8,
    /// Uptime in microseconds (modulo 2⁴⁰).
    pub microseconds: u64,
}

impl TraceEvent {
    #[cfg(debug_assertions)]
    fn encode(&self) -> u64 {
        let kind = TraceKind::ALL.iter().position(|kind| *kind == self.kind).unwrap_or(0) as u64;
        // Bit 63 marks a used slot.
        1 << 63 | kind << 56 | (self.cpu as u64 & 0xFF) << 48 | u64::from(self.detail) << 40 | (self.microseconds & ((1 << 40) - 1))
    }

    #[cfg(debug_assertions)]
    fn decode(word: u64) -> Option<Self> {
        if word >> 63 == 0 {
            return None;
        }
        Some(TraceEvent {
            kind: TraceKind::ALL[((word >> 56) & 0x7F) as usize % TraceKind::ALL.len()],
            cpu: ((word >> 48) & 0xFF) as usize,
            detail: ((word >> 40) & 0xFF) as u8,
            microseconds: word & ((1 << 40) - 1),
        })
    }
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.microseconds as f64 / 1000.0;
        match self.kind {
            TraceKind::GivenPermit if self.detail == 1 => write!(formatter, "{at:.3} permit while parked (CPU {})", self.cpu),
            TraceKind::QueuedRemote if self.detail == 1 => write!(formatter, "{at:.3} queued remote on CPU {} + IPI", self.cpu),
            kind => write!(formatter, "{at:.3} {kind:?} (CPU {})", self.cpu),
        }
    }
}

/// The ring of a thread's last events.
pub struct Trace {
    #[cfg(debug_assertions)]
    slots: [AtomicU64; TRACE_LENGTH],
    #[cfg(debug_assertions)]
    next: AtomicUsize,
    /// Where the timer last preempted the thread (0: never).
    #[cfg(debug_assertions)]
    preempted_at: AtomicU64,
}

impl Trace {
    pub const fn new() -> Self {
        Trace {
            #[cfg(debug_assertions)]
            slots: [const { AtomicU64::new(0) }; TRACE_LENGTH],
            #[cfg(debug_assertions)]
            next: AtomicUsize::new(0),
            #[cfg(debug_assertions)]
            preempted_at: AtomicU64::new(0),
        }
    }

    /// Records that the timer preempted the thread at `instruction`.
    #[cfg(debug_assertions)]
    pub fn record_preemption(&self, instruction: u64) {
        self.preempted_at.store(instruction, Ordering::Relaxed);
    }

    /// Where the timer last preempted the thread (0: never, or a release build).
    pub fn preempted_at(&self) -> u64 {
        #[cfg(debug_assertions)]
        return self.preempted_at.load(Ordering::Relaxed);
        #[cfg(not(debug_assertions))]
        0
    }

    /// Records `kind` on `cpu` now (nothing in release builds).
    #[inline(always)]
    pub fn record(&self, kind: TraceKind, cpu: usize, detail: u8) {
        #[cfg(debug_assertions)]
        {
            let microseconds = machine::timer::uptime_nanoseconds() / 1_000;
            let event = TraceEvent { kind, cpu, detail, microseconds };
            // Relaxed: a diagnostic; the slot index only has to be unique.
            let slot = self.next.fetch_add(1, Ordering::Relaxed) % TRACE_LENGTH;
            self.slots[slot].store(event.encode(), Ordering::Relaxed);
        }
        #[cfg(not(debug_assertions))]
        let _ = (kind, cpu, detail);
    }

    /// The recorded events, oldest first (empty in release builds).
    pub fn events(&self) -> Vec<TraceEvent> {
        #[cfg(debug_assertions)]
        {
            let next = self.next.load(Ordering::Relaxed);
            let mut events: Vec<TraceEvent> =
                (0..TRACE_LENGTH).filter_map(|age| TraceEvent::decode(self.slots[(next + age) % TRACE_LENGTH].load(Ordering::Relaxed))).collect();
            events.sort_by_key(|event| event.microseconds);
            events
        }
        #[cfg(not(debug_assertions))]
        Vec::new()
    }
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}
