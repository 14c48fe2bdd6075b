//! A process's memory as a system call sees it: [`UserMemory::read`] (the
//! reading side) and [`UserMemory::write`] (the writing side) copy between
//! kernel buffers and user addresses through the checked copies of
//! `crate::user_memory` (every address checked against the process's page
//! tables: EFAULT, never a kernel fault). Each copy holds the process's
//! address-space lock only for itself and carries out the TLB flushes its
//! copy-on-write resolution left after releasing it, then tries again when
//! the resolution asks (a copied page, or another thread's flush still
//! being carried out) — the one place that sequence is written.

use alloc::vec::Vec;

use super::processes::NativeProcess;
use crate::user_memory::{read_c_string, read_user, shared_location, update_user_u32, write_user, PendingFlush};
use linux_abi::Errno;

/// The user memory of one process (see the module comment).
#[derive(Clone, Copy)]
pub struct UserMemory<'a> {
    process: &'a NativeProcess,
}

impl<'a> UserMemory<'a> {
    pub fn of(process: &'a NativeProcess) -> Self {
        Self { process }
    }

    /// Copies `buffer.len()` bytes in from `address`: through this CPU's
    /// translation with no lock when it runs on the process's space, else
    /// (or when that faults) under the space's lock.
    pub fn read(&self, address: u64, buffer: &mut [u8]) -> Result<(), Errno> {
        if machine::frame_access::read_user_on_root(self.process.root(), address, buffer) {
            return Ok(());
        }
        self.copy(|memory, flush| read_user(memory, address, &mut *buffer, flush))
    }

    /// Copies `bytes` out to `address` (as [`Self::read`]).
    pub fn write(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        if machine::frame_access::write_user_on_root(self.process.root(), address, bytes) {
            return Ok(());
        }
        self.copy(|memory, flush| write_user(memory, address, bytes, flush))
    }

    /// The NUL-terminated string at `address`, without its NUL; at most
    /// `limit` bytes, else `too_long`.
    pub fn read_c_string(&self, address: u64, limit: usize, too_long: Errno) -> Result<Vec<u8>, Errno> {
        self.copy(|memory, flush| read_c_string(memory, address, limit, too_long, flush))
    }

    /// A little-endian `u64` at `address`.
    pub fn read_u64(&self, address: u64) -> Result<u64, Errno> {
        let mut bytes = [0u8; 8];
        self.read(address, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Atomically replaces the aligned `u32` at `address` with
    /// `change(old)` when it gives `Some`; the value found.
    pub fn update_u32(&self, address: u64, mut change: impl FnMut(u32) -> Option<u32>) -> Result<u32, Errno> {
        self.copy(|memory, flush| update_user_u32(memory, address, &mut change, flush))
    }

    /// For futexes: where the word at `address` lives when its page is
    /// shared memory, `None` when it is private to this process.
    pub fn shared_location(&self, address: u64) -> Result<Option<u64>, Errno> {
        self.copy(|memory, flush| shared_location(memory, address, flush))
    }

    fn copy<R>(&self, mut operation: impl FnMut(&mut crate::address_spaces::KernelSpace, &mut PendingFlush) -> Result<R, Errno>) -> Result<R, Errno> {
        report_copy_under_spinlock();
        loop {
            let mut flush = PendingFlush::default();
            let result = self.process.with_memory(|memory| operation(memory, &mut flush));
            if !flush.carry_out() {
                return result?;
            }
            sched::yield_now();
        }
    }
}

/// A copy that may fault may also wait (for the space's lock, a page read
/// from a file, another CPU's flush) or yield: its caller must hold no
/// spinlock. One that does (interrupts are off under every kernel
/// spinlock) can leave another CPU spinning on that lock for ever while
/// this thread waits off the CPU. Such a caller is a kernel bug: said
/// once, loudly, with its backtrace (the fuzzing tier fails on it), and
/// the copy goes on.
fn report_copy_under_spinlock() {
    use core::sync::atomic::{AtomicBool, Ordering};
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if machine::cpu::interrupts_enabled() || REPORTED.swap(true, Ordering::Relaxed) {
        return;
    }
    machine::println!("lamina: BUG: a user copy that may wait was made with interrupts off (a spinlock held); backtrace:");
    machine::backtrace::print_current();
}
