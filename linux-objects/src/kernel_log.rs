//! The kernel's message log for user space: notes such as an unsupported
//! system call go to a ring of the last 64 KiB (read with `dmesg`, the
//! `syslog` system call) and, unless the kernel was booted `quiet`, to
//! the console too — a quiet console carries only what programs write.

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicBool, Ordering};

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

const CAPACITY: usize = 64 * 1024;

static LOG: KernelTicketLock<VecDeque<u8>> = KernelTicketLock::new(Level::new(5), VecDeque::new());
static QUIET: AtomicBool = AtomicBool::new(false);

/// Keeps kernel notes off the console.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Logs one line.
pub fn note(arguments: core::fmt::Arguments<'_>) {
    let line = alloc::format!("lamina: {arguments}\n");
    {
        let mut log = LOG.lock();
        if log.try_reserve(line.len()).is_ok() {
            log.extend(line.bytes());
        }
        while log.len() > CAPACITY {
            log.pop_front();
        }
    }
    if !QUIET.load(Ordering::Relaxed) {
        machine::print!("{line}");
    }
}

/// Up to `limit` bytes of the log, oldest first.
pub fn read_all(limit: usize) -> alloc::vec::Vec<u8> {
    let log = LOG.lock();
    let skip = log.len().saturating_sub(limit);
    log.iter().skip(skip).copied().collect()
}

/// Bytes in the log.
pub fn size() -> usize {
    LOG.lock().len()
}
