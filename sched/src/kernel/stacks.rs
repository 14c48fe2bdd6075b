//! Kernel stacks for threads, and the charge each thread makes to its
//! container.
//!
//! The kernel supplies a [`StackSource`] at boot: how to map and free a
//! stack, and how to charge and release pages of a container. Spawning
//! charges [`THREAD_PAGES`] to the new thread's container before it takes
//! a stack, so a container at its quota gets an error and nothing else
//! changes; exiting releases the charge. Stacks of exited threads wait in a
//! pool until their CPU has switched away from them; up to
//! [`SPARE_STACKS`] are kept for reuse (kernel cache, charged to no one),
//! the rest are freed. Must never free a stack whose context may still run,
//! or call the source with a queue lock held (freeing shoots TLBs down).

use alloc::sync::Arc;
use alloc::vec::Vec;

use containers::ContainerId;
use machine::context::ThreadContext;
use machine::stacks::{KernelStack, STACK_FRAMES};

use super::lock::{queue_lock, QueueLock};

/// Pages one thread charges to its container: its stack, the two page
/// tables a new stack may need (a leaf table and a second-level table of
/// the stack region), and one page for its kernel objects (the thread
/// record, its context and queue entries, far below 4 KiB together).
pub const THREAD_PAGES: u64 = STACK_FRAMES + 2 + 1;

/// Spare stacks kept for reuse once their threads exited.
pub const SPARE_STACKS: usize = 16;

/// What the kernel provides the threads layer with.
pub struct StackSource {
    /// Maps a fresh kernel stack; `None` when out of frames.
    pub allocate: fn() -> Option<KernelStack>,
    /// Unmaps a stack, invalidates it on every CPU and frees its frames.
    pub free: fn(KernelStack),
    /// Charges pages to a container; `false` (nothing charged) over quota.
    pub charge: fn(ContainerId, u64) -> bool,
    /// Releases pages charged earlier.
    pub release: fn(ContainerId, u64),
}

static SOURCE: QueueLock<Option<&'static StackSource>> = queue_lock(None);

/// Contexts of exited threads, whose stacks are reused or freed once the
/// context no longer runs.
static POOL: QueueLock<Vec<Arc<ThreadContext>>> = queue_lock(Vec::new());

pub(crate) fn set_source(source: &'static StackSource) {
    *SOURCE.lock() = Some(source);
}

pub(crate) fn source() -> Option<&'static StackSource> {
    *SOURCE.lock()
}

/// A stack for a new thread: a spare one, else a fresh one. Frees spares
/// beyond [`SPARE_STACKS`] on the way.
pub(crate) fn take_stack(source: &StackSource) -> Option<KernelStack> {
    let (reused, surplus) = {
        let mut pool = POOL.lock();
        let reused = take_idle(&mut pool);
        let idle = pool.iter().filter(|context| !context.is_running()).count();
        let mut surplus = Vec::new();
        // Without heap for the list the surplus simply stays for next time.
        let excess = idle.saturating_sub(SPARE_STACKS);
        if surplus.try_reserve_exact(excess).is_ok() {
            surplus.extend((0..excess).filter_map(|_| take_idle(&mut pool)));
        }
        (reused, surplus)
    };
    for stack in surplus {
        (source.free)(stack);
    }
    reused.or_else(|| (source.allocate)())
}

/// Takes a stack whose context no longer runs out of the pool.
fn take_idle(pool: &mut Vec<Arc<ThreadContext>>) -> Option<KernelStack> {
    let position = pool.iter().position(|context| !context.is_running())?;
    pool.swap_remove(position).take_stack()
}

/// Puts an exited thread's context (and so its stack) in the pool. Called
/// with interrupts off, on the exiting thread's own stack.
pub(crate) fn retire(context: Arc<ThreadContext>) {
    POOL.lock().push(context);
}

/// Frees every spare stack whose thread has left its CPU; returns how many.
/// Spares are kernel cache: this gives their frames back (tests compare
/// free frames before and after a workload; a kernel short of frames may
/// call it too).
pub fn release_spare_stacks() -> usize {
    let Some(source) = source() else { return 0 };
    let mut freed = 0;
    loop {
        let stack = take_idle(&mut POOL.lock());
        match stack {
            Some(stack) => {
                (source.free)(stack);
                freed += 1;
            }
            None => return freed,
        }
    }
}
