//! The running kernel's system-call trace (`cargo xtask exec --trace`,
//! `docs/tracing.md`): booted with `trace` (or `trace=KiB`) on the command
//! line, the personality records every system call of every process but
//! process 1 here, in one [`TraceLog`] of a size fixed at boot; at power-off
//! the records go to the console as `lamina-trace: LINE` lines, then
//! `lamina-trace: end N records, M dropped`.
//!
//! Provides a switch read with one relaxed load (tracing off costs the
//! system-call path one predictable branch) and a log that never grows
//! after boot: a full log counts the records it drops. Must never allocate
//! while recording nor hold its lock while printing.

use core::sync::atomic::{AtomicBool, Ordering};

use linux_abi::syscall_trace::{TraceLog, TraceRecord};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// The log's size unless the command line says `trace=KiB`.
const DEFAULT_KIB: usize = 2048;
/// Largest `trace=KiB` taken (the log lives in the kernel heap).
const MOST_KIB: usize = 32 * 1024;

/// Whether system calls are recorded.
static TRACING: AtomicBool = AtomicBool::new(false);
/// A leaf: nothing else is locked while it is held.
static LOG: KernelTicketLock<Option<TraceLog>> = KernelTicketLock::new(Level::new(2), None);

/// What the command line asked of the tracer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceRequest {
    Off,
    /// A log of this many KiB.
    On(usize),
}

/// `trace` or `trace=KiB` among the command line's words; a size that is
/// not a number, or is 0, is the default.
pub fn requested(command_line: &str) -> TraceRequest {
    let word = command_line.split_whitespace().find(|word| *word == "trace" || word.starts_with("trace="));
    match word.map(|word| word.strip_prefix("trace=").and_then(|size| size.parse::<usize>().ok())) {
        None => TraceRequest::Off,
        Some(Some(kib)) if kib > 0 => TraceRequest::On(kib.min(MOST_KIB)),
        Some(_) => TraceRequest::On(DEFAULT_KIB),
    }
}

/// Starts recording into a log of `kib` KiB; an error (and tracing stays
/// off) when the heap cannot hold it.
pub fn start(kib: usize) -> Result<(), alloc::collections::TryReserveError> {
    let log = TraceLog::new(kib * 1024)?;
    *LOG.lock() = Some(log);
    // Relaxed: a CPU that sees the switch late only misses records.
    TRACING.store(true, Ordering::Relaxed);
    Ok(())
}

/// Whether system calls are being recorded.
#[inline(always)]
pub fn enabled() -> bool {
    TRACING.load(Ordering::Relaxed)
}

/// Keeps `record` (or counts it as dropped when the log is full).
pub fn record(record: &TraceRecord<'_>) {
    if let Some(log) = LOG.lock().as_mut() {
        log.push(record);
    }
}

/// Stops tracing and prints the log on the console (nothing if tracing
/// was never on, or was already reported).
pub fn report() {
    TRACING.store(false, Ordering::Relaxed);
    let Some(log) = LOG.lock().take() else { return };
    for record in log.records() {
        machine::println!("lamina-trace: {record}");
    }
    machine::println!("lamina-trace: end {} records, {} dropped", log.stored(), log.dropped());
}
