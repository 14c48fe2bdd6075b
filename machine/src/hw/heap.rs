//! The kernel heap: a first-fit free list with coalescing over one region
//! of virtual memory mapped at boot.
//!
//! Free blocks form a list sorted by address; each free block stores its
//! size and the next block's address in its own first 16 bytes. Allocation
//! takes the first block that fits (splitting off the rest), freeing
//! inserts in address order and merges with both neighbours, so adjacent
//! free memory is always one block. Sizes are multiples of 16. Failure
//! returns null, which Rust's allocation API reports to the caller; the
//! reservation scheme of the memory layer keeps system calls from reaching it.
//!
//! In front of that list, blocks of the common small sizes (16 bytes to
//! 4 KiB, in 16 size classes, 16-byte alignment) are kept on one LIFO
//! quick list per class when freed and handed out again from there: O(1)
//! both ways, where the address-ordered list walks its length (with
//! thousands of live blocks — a disk cache's chunks — that walk was most
//! of the kernel's time). Quick-list blocks are not merged; when the main
//! list cannot serve a request they all go back to it (merging) and the
//! request is tried again.
//!
//! In front of the quick lists, each CPU keeps a few blocks per class of
//! its own ([`crate::heap_caches`], which says how a request the list
//! cannot serve first empties every CPU's cache). Cached blocks count as
//! free in [`usage`].

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::null_mut;

use core::marker::PhantomData;

use super::irq_lock::IrqLock;
use super::percpu::MAX_CPUS;
use crate::heap_caches::{BlockList, ClassCache, CpuCaches, CpuSlot, DrainGate, Exclusive};

const BLOCK_ALIGN: usize = 16;

/// Header of a free block, written into the block itself.
#[repr(C)]
struct FreeBlock {
    size: usize,
    next: usize,
}

struct FreeList {
    /// Address of the first free block, 0 when none.
    head: usize,
    free_bytes: usize,
    total_bytes: usize,
    /// First block of each size class's quick list, 0 when empty.
    quick: [usize; CLASSES.len()],
}

/// The quick lists' size classes (bytes).
const CLASSES: [usize; 16] = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096];

/// The class whose blocks serve `layout`, if any (allocation and freeing
/// agree on it, as both see the same layout).
fn class_for(layout: Layout) -> Option<usize> {
    if layout.align() > BLOCK_ALIGN {
        return None;
    }
    CLASSES.iter().position(|&class| class >= block_size(layout))
}

/// The global allocator (see the module comment).
pub struct KernelHeap {
    list: IrqLock<FreeList>,
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap { list: IrqLock::new(FreeList { head: 0, free_bytes: 0, total_bytes: 0, quick: [0; CLASSES.len()] }) };

/// Each CPU's cache of free blocks, indexed by CPU.
static CPU_SLOTS: [CpuSlot<IrqLock<ClassCache<{ CLASSES.len() }>>>; MAX_CPUS] = [const { CpuSlot::new(IrqLock::new(ClassCache::new())) }; MAX_CPUS];

/// Raised while a request the list could not serve empties the caches.
static DRAIN_GATE: DrainGate = DrainGate::new();

impl<T> Exclusive<T> for IrqLock<T> {
    #[inline]
    fn with<R>(&self, work: impl FnOnce(&mut T) -> R) -> R {
        work(&mut self.lock())
    }
}

impl BlockList for FreeList {
    fn take_class(&mut self, class: usize) -> Option<usize> {
        FreeList::take_class(self, class)
    }

    unsafe fn give_class(&mut self, address: usize, class: usize) {
        // SAFETY: the caller's promise is this one's.
        unsafe { FreeList::give_class(self, address, class) }
    }
}

/// The CPUs' caches in front of the heap's list.
fn cpu_caches() -> CpuCaches<'static, { CLASSES.len() }, IrqLock<ClassCache<{ CLASSES.len() }>>, IrqLock<FreeList>, FreeList> {
    CpuCaches { slots: &CPU_SLOTS, list: &HEAP.list, gate: &DRAIN_GATE, sizes: &CLASSES, _list: PhantomData }
}

/// Hands `[start, start + length)` (mapped, writable, unused) to the heap.
///
/// # Safety
/// The range must be mapped read-write for the kernel's whole life and used
/// by nothing else.
pub unsafe fn add_region(start: usize, length: usize) {
    let start_aligned = (start + BLOCK_ALIGN - 1) & !(BLOCK_ALIGN - 1);
    let length = (length - (start_aligned - start)) & !(BLOCK_ALIGN - 1);
    let mut list = HEAP.list.lock();
    list.total_bytes += length;
    // SAFETY: the caller gives us exclusive ownership of the range.
    unsafe { list.insert(start_aligned, length) };
}

/// (free bytes, total bytes) of the heap; blocks in CPUs' caches count
/// as free.
pub fn usage() -> (usize, usize) {
    let cached = cpu_caches().cached_bytes();
    let list = HEAP.list.lock();
    (list.free_bytes + cached, list.total_bytes)
}

/// The largest block on the main list after merging the quick lists and
/// every CPU's cache into it: the biggest request the heap can serve now
/// (for reports after an allocation failed; walks the whole list).
pub fn largest_free_block() -> usize {
    cpu_caches().drain_then(|list| {
        list.drain_quick_lists();
        let (mut largest, mut current) = (0, list.head);
        while current != 0 {
            let block = read_block(current);
            largest = largest.max(block.size);
            current = block.next;
        }
        largest
    })
}

fn read_block(address: usize) -> FreeBlock {
    // SAFETY: only called on addresses of free blocks in the list or a
    // quick list, which lie in heap memory owned by the allocator and hold
    // a header.
    unsafe { (address as *const FreeBlock).read() }
}

fn write_block(address: usize, size: usize, next: usize) {
    // SAFETY: `address` is the start of at least 16 free, 16-aligned bytes owned
    // by the allocator (a free block or memory just returned to it).
    unsafe { (address as *mut FreeBlock).write(FreeBlock { size, next }) };
}

impl FreeList {
    /// Inserts a free block in address order, merging with its neighbours.
    ///
    /// # Safety
    /// `[address, address + size)` must be heap memory not in the list and
    /// not in use.
    unsafe fn insert(&mut self, address: usize, size: usize) {
        self.free_bytes += size;
        let mut previous = 0;
        let mut current = self.head;
        while current != 0 && current < address {
            previous = current;
            current = read_block(current).next;
        }
        let (mut start, mut size, next) = (address, size, current);
        let mut next_after = next;
        if next != 0 && address + size == next {
            let following = read_block(next);
            size += following.size;
            next_after = following.next;
        }
        if previous != 0 {
            let before = read_block(previous);
            if previous + before.size == address {
                start = previous;
                size += before.size;
                write_block(start, size, next_after);
                return;
            }
            write_block(previous, before.size, start);
        } else {
            self.head = start;
        }
        write_block(start, size, next_after);
    }

    /// First fit: takes `size` bytes aligned to `align` from the list.
    fn take(&mut self, size: usize, align: usize) -> Option<usize> {
        let mut previous = 0;
        let mut current = self.head;
        while current != 0 {
            let block = read_block(current);
            let start = (current + align - 1) & !(align - 1);
            let front = start - current;
            let fits = front + size <= block.size && (front == 0 || front >= BLOCK_ALIGN);
            if fits {
                self.unlink(previous, current, block.next);
                self.free_bytes -= block.size;
                let back = block.size - front - size;
                if front > 0 {
                    // SAFETY: the front piece is part of the block just unlinked.
                    unsafe { self.insert(current, front) };
                }
                if back > 0 {
                    // SAFETY: the back piece is part of the block just unlinked.
                    unsafe { self.insert(start + size, back) };
                }
                return Some(start);
            }
            previous = current;
            current = block.next;
        }
        None
    }

    /// A block of class `class`: from its quick list, else from the main
    /// list (the whole class size, so that it can serve any request of
    /// the class once freed).
    fn take_class(&mut self, class: usize) -> Option<usize> {
        self.pop_quick(class).or_else(|| self.take(CLASSES[class], BLOCK_ALIGN))
    }

    /// Takes the first block off class `class`'s quick list, if any.
    fn pop_quick(&mut self, class: usize) -> Option<usize> {
        let head = self.quick[class];
        if head == 0 {
            return None;
        }
        self.quick[class] = read_block(head).next;
        self.free_bytes -= CLASSES[class];
        Some(head)
    }

    /// Puts a freed block of class `class` on its quick list.
    ///
    /// # Safety
    /// `address` must be a block of `CLASSES[class]` bytes this heap handed
    /// out for that class, no longer in use.
    unsafe fn give_class(&mut self, address: usize, class: usize) {
        write_block(address, CLASSES[class], self.quick[class]);
        self.quick[class] = address;
        self.free_bytes += CLASSES[class];
    }

    /// Returns every quick-list block to the main list (merging), before a
    /// request the main list alone could not serve is tried again.
    fn drain_quick_lists(&mut self) {
        for class in 0..CLASSES.len() {
            while let Some(address) = self.pop_quick(class) {
                // SAFETY: a quick-list block is free heap memory of its
                // class's size, now off every list.
                unsafe { self.insert(address, CLASSES[class]) };
            }
        }
    }

    /// A block for `layout`: its class's, or a fitting one from the main
    /// list; after draining the quick lists once if that fails.
    fn allocate(&mut self, layout: Layout) -> Option<usize> {
        let attempt = |list: &mut Self| match class_for(layout) {
            Some(class) => list.take_class(class),
            None => list.take(block_size(layout), layout.align().max(BLOCK_ALIGN)),
        };
        attempt(self).or_else(|| {
            self.drain_quick_lists();
            attempt(self)
        })
    }

    fn unlink(&mut self, previous: usize, current: usize, next: usize) {
        if previous == 0 {
            self.head = next;
        } else {
            let before = read_block(previous);
            debug_assert_eq!(before.next, current);
            write_block(previous, before.size, next);
        }
    }
}

fn block_size(layout: Layout) -> usize {
    layout.size().max(1).next_multiple_of(BLOCK_ALIGN)
}

// SAFETY: `alloc` returns blocks that are disjoint from every other live
// block (they leave the free list or their quick list), at least
// `layout.size()` bytes (a class's blocks are the class's size, at least
// the request's) and aligned to `layout.align()` (quick lists serve only
// 16-byte alignment, which every block has); `dealloc` returns exactly
// such a block, to the list its layout maps to.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let from_list = |list: &mut FreeList| list.allocate(layout);
        let found = match class_for(layout) {
            // The CPU may change under us (preemption): the cache is behind
            // a lock, so another CPU's is only slower, never wrong.
            Some(class) => cpu_caches().allocate_class(super::percpu::current_index(), class, from_list),
            None => cpu_caches().allocate_uncached(from_list),
        };
        found.map_or(null_mut(), |address| address as *mut u8)
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        let address = pointer as usize;
        match class_for(layout) {
            // SAFETY: the caller returns a block this allocator handed out
            // with the same layout: for this class, of the class's size.
            Some(class) => unsafe { cpu_caches().free_class(super::percpu::current_index(), class, address) },
            // SAFETY: the caller returns a block this allocator handed out
            // with the same layout, so it is heap memory no longer in use.
            None => unsafe { self.list.lock().insert(address, block_size(layout)) },
        }
    }
}
