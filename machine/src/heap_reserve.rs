//! The heap's reserve: the free bytes a large allocation may not take.
//!
//! Large allocations (above the quick lists' largest class, 4 KiB) are
//! almost all fallible buffers sized by a caller's argument: a `write`'s
//! staging buffer, a pipe's or socket's queue, a table a program grows.
//! Small ones are mostly the kernel's own objects, made by code that
//! cannot fail cleanly half-way (a `Vec::push`, an `Arc::new`). So a large
//! allocation is refused while it would leave less than the reserve free,
//! and the last of the heap is kept for small ones: eight `write`s of
//! 1 MiB at once on a 16 MiB heap once took every byte, and the next
//! `push` of an unrelated call stopped the kernel (CI, seed 2 on 4 CPUs).
//! Linux's page allocator keeps its watermarks for the same reason.
//!
//! Pure arithmetic, host-tested; the heap (`hw::heap`) applies it under
//! its lock. Must not depend on anything but its arguments.

/// Bytes of a heap of `total` bytes that large allocations leave free:
/// 1/64 of it, at least 128 KiB (256 KiB of a 256 MiB machine's 16 MiB).
pub const fn reserve_bytes(total: usize) -> usize {
    let share = total / 64;
    if share > 128 * 1024 { share } else { 128 * 1024 }
}

/// Whether a large allocation of `size` bytes may come out of a heap with
/// `free` of `total` bytes free: only if the reserve stays free after it.
pub const fn large_allocation_fits(size: usize, free: usize, total: usize) -> bool {
    match free.checked_sub(size) {
        Some(left) => left >= reserve_bytes(total),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_large_allocation_leaves_the_reserve() {
        let total = 16 * MIB;
        assert_eq!(reserve_bytes(total), 256 * 1024);
        assert!(large_allocation_fits(MIB, MIB + 256 * 1024, total));
        assert!(!large_allocation_fits(MIB, MIB + 256 * 1024 - 16, total));
        assert!(!large_allocation_fits(MIB, MIB / 2, total), "more than is free");
    }

    #[test]
    fn a_small_heap_keeps_at_least_128_kib() {
        assert_eq!(reserve_bytes(2 * MIB), 128 * 1024);
        assert_eq!(reserve_bytes(0), 128 * 1024);
        assert!(!large_allocation_fits(8192, 100 * 1024, 0));
    }

    #[test]
    fn sizes_at_the_edges_do_not_overflow() {
        assert!(!large_allocation_fits(usize::MAX, 0, usize::MAX));
        assert!(!large_allocation_fits(usize::MAX, usize::MAX, usize::MAX));
        assert!(large_allocation_fits(0, usize::MAX, usize::MAX));
    }
}
