//! Kernel buffers for the bytes a call moves between user memory and an
//! object, allocated fallibly: a kernel heap that is short fails the one
//! call (ENOMEM) or makes its transfer shorter; it never stops the kernel
//! (the fuzzer found `write` panicking on a 1 MiB buffer the heap could
//! not give while other processes held most of it). And the heap's low
//! water mark, below which calls that make kernel objects are refused.

use alloc::vec::Vec;

use kernel_objects::allocation_failures::{should_fail, should_fail_tagged, AllocationSite};
use linux_abi::Errno;

/// The smallest part of a transfer worth making.
const SMALLEST_PART: usize = 4096;

/// `length` zero bytes, or ENOMEM (also when they would eat into the
/// heap kept for the kernel: `kernel_memory::program_data_fits`).
pub fn zeroed(length: usize) -> Result<Vec<u8>, Errno> {
    if should_fail(AllocationSite::Heap) || !kernel_objects::kernel_memory::program_data_fits(length) {
        return Err(Errno::ENOMEM);
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    bytes.resize(length, 0);
    Ok(bytes)
}

/// Zero bytes for a transfer of up to `length`: all of it if the heap has
/// room, else the largest half, quarter, ... of it down to one page (a
/// short transfer), else ENOMEM. Never shorter while the heap has room: a
/// program may write a regular file once and not look at the count (a cap
/// at an eighth of the free heap made `c/page_cache` and
/// `c/tmpfs_capacity` differ from Linux, and was taken back).
pub fn transfer_buffer(length: usize) -> Result<Vec<u8>, Errno> {
    let mut size = length;
    loop {
        match zeroed(size) {
            Ok(bytes) => return Ok(bytes),
            Err(error) if size <= SMALLEST_PART => return Err(error),
            Err(_) => size = (size / 2).max(SMALLEST_PART.min(length)),
        }
    }
}

/// Free heap below which no new kernel object is made: the larger of
/// 512 KiB and 1/32 of the heap. Objects' constructors (`Arc::new` of a
/// process, an open file, a socket) cannot fail cleanly, so the room is
/// checked before the call starts. Not a reservation: calls running at
/// once share the margin (Biscuit's per-call reservations are the full
/// answer; docs/reliability.md).
/// `number` is the call's (allocation-failure injection tells the calls
/// apart by it).
pub fn heap_admits_new_objects(number: u64) -> bool {
    if should_fail_tagged(AllocationSite::Heap, number) {
        return false;
    }
    let (free, total) = machine::heap::usage();
    free >= (512 * 1024).max(total / 32)
}
