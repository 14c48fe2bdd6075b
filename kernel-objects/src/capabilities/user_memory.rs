//! Writing a native call's reply into the caller's memory: through the
//! user-memory copy of the user-space layer (every address checked against
//! the process's page tables: EFAULT, never a kernel fault), with the
//! process's address-space lock held only for the copy.

use super::processes::NativeProcess;
use linux_abi::Errno;
use crate::user_memory::{write_user as copy_out, PendingFlush};

/// Copies `bytes` to `address` in `process`'s memory.
pub fn write_user(process: &NativeProcess, address: u64, bytes: &[u8]) -> Result<(), Errno> {
    let mut flush = PendingFlush::default();
    let written = process.with_memory(|memory| copy_out(memory, address, bytes, &mut flush));
    flush.carry_out();
    written?
}
