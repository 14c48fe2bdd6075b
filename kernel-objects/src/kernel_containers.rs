//! The kernel's quota containers (layer 2, crate `containers`): one tree
//! for the machine, built at boot with every free frame in the root, and
//! the ways the rest of the kernel charges it — threads (through the
//! threads layer's stack source), frames, and requests' reservations
//! ([`ContainerAccount`]).
//!
//! Must never hand out a frame without a charge to some container, except
//! the kernel caches documented in docs/memory.md.

use alloc::boxed::Box;

use containers::{ContainerId, Containers, QuotaError, Spinning};
use frames::FrameError;
use machine::frame_access::Frame;
use machine::set_once::SetOnce;
use spinlock::kernel::{IrqOff, PerCpuLevels};

/// The kernel's tree: the tree lock keeps interrupts off and its level is
/// checked per CPU.
pub type KernelContainers = Containers<Spinning<IrqOff, PerCpuLevels>>;

static CONTAINERS: SetOnce<KernelContainers> = SetOnce::new();

/// Builds the tree with `root_quota` pages in the root. Returns the root,
/// or the reason the table could not be built (then nothing is charged and
/// every spawn fails).
pub fn init(root_quota: u64) -> Result<ContainerId, QuotaError> {
    let tree = KernelContainers::new(root_quota)?;
    let root = tree.root();
    if CONTAINERS.set(Box::leak(Box::new(tree))).is_err() {
        machine::println!("lamina: warning: the container tree was built twice; keeping the first");
    }
    Ok(root)
}

/// The tree; `None` before [`init`].
pub fn containers() -> Option<&'static KernelContainers> {
    CONTAINERS.get()
}

/// Charges `pages` to `container` (the threads layer's `charge`).
pub fn charge(container: ContainerId, pages: u64) -> bool {
    containers().is_some_and(|tree| tree.charge(container, pages).is_ok())
}

/// Releases `pages` charged to `container` (the threads layer's `release`).
pub fn release(container: ContainerId, pages: u64) {
    if let Some(tree) = containers() {
        if let Err(error) = tree.release(container, pages) {
            // A caller released what it never charged: a kernel bug, but
            // the counts are unchanged, so the kernel keeps running.
            machine::println!("lamina: warning: release of {pages} pages from {container:?} refused: {error:?}");
        }
    }
}

/// Why a charged allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChargedFrameError {
    /// The container's quota is spent (ENOMEM at a system call).
    Quota(QuotaError),
    /// The machine is out of frames (ENOMEM too); nothing stays charged.
    Frames(FrameError),
}

/// One frame charged to `container`. When the container's quota or the
/// machine's frames run out, memory that can be given back (the page
/// cache's clean pages, [`set_reclaimer`]) is given back and the
/// allocation tried once more.
pub(crate) fn allocate_charged_frame(container: ContainerId) -> Result<Frame, ChargedFrameError> {
    keep_the_reserve();
    match try_allocate_charged_frame(container) {
        Err(error) if reclaim_for(container, error) > 0 => try_allocate_charged_frame(container),
        result => result,
    }
}

fn try_allocate_charged_frame(container: ContainerId) -> Result<Frame, ChargedFrameError> {
    let tree = containers().ok_or(ChargedFrameError::Quota(QuotaError::NoSuchContainer))?;
    tree.charge(container, 1).map_err(ChargedFrameError::Quota)?;
    crate::physical_memory::allocate_held_frame().map_err(|error| {
        release(container, 1);
        ChargedFrameError::Frames(error)
    })
}

/// What to give back when memory runs out, for whom: `Some(container)`
/// when that container's quota is spent (only its own charges help),
/// `None` when the machine is out of frames.
pub type Reclaimer = fn(Option<ContainerId>) -> usize;

static RECLAIMER: SetOnce<Reclaimer> = SetOnce::new();

/// Names the function that gives memory back when an allocation fails
/// (the Linux personality's page cache); set once at boot.
pub fn set_reclaimer(reclaimer: &'static Reclaimer) {
    if RECLAIMER.set(reclaimer).is_err() {
        machine::println!("lamina: warning: a second reclaimer was refused");
    }
}

/// Free frames kept for allocations that cannot wait for the reclaimer
/// (page tables, DMA buffers, kernel stacks, anything under a spinlock):
/// below this, charged allocations that can wait give memory back first
/// (8 MiB; the page cache stops filling at twice that).
const RESERVE_FRAMES: u64 = 2048;

/// Charged allocations between two looks at the free frames (counting
/// them takes the allocator's locks).
const ALLOCATIONS_PER_LOOK: u32 = 32;

static ALLOCATIONS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Every [`ALLOCATIONS_PER_LOOK`]th allocation where the reclaimer may
/// run: below [`RESERVE_FRAMES`] free, it gives a batch back (a batch per
/// look keeps pace with the allocations between looks).
fn keep_the_reserve() {
    let Some(reclaimer) = RECLAIMER.get() else { return };
    if ALLOCATIONS.fetch_add(1, core::sync::atomic::Ordering::Relaxed) % ALLOCATIONS_PER_LOOK != 0 || !machine::cpu::interrupts_enabled() {
        return;
    }
    if crate::physical_memory::free_frames_here() < RESERVE_FRAMES {
        reclaimer(None);
    }
}

/// Runs the reclaimer after `error` (pages given back), only where it
/// cannot deadlock: with interrupts on, this CPU holds no kernel spinlock
/// (every one turns them off), so the reclaimer takes its locks from a
/// clean state. Allocations under a lock or in an interrupt fail as
/// before.
fn reclaim_for(container: ContainerId, error: ChargedFrameError) -> usize {
    let Some(reclaimer) = RECLAIMER.get() else { return 0 };
    if !machine::cpu::interrupts_enabled() {
        return 0;
    }
    match error {
        ChargedFrameError::Quota(QuotaError::NoSuchContainer) => 0,
        ChargedFrameError::Quota(_) => reclaimer(Some(container)),
        ChargedFrameError::Frames(_) => reclaimer(None),
    }
}

/// Frees a frame from [`allocate_charged_frame`] and its charge.
pub(crate) fn free_charged_frame(container: ContainerId, frame: Frame) {
    crate::physical_memory::free_held_frame(frame);
    release(container, 1);
}

/// A container as the account a request reserves kernel memory from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerAccount(pub ContainerId);

impl reservations::Account for ContainerAccount {
    fn charge(&self, pages: u64) -> bool {
        charge(self.0, pages)
    }

    fn release(&self, pages: u64) {
        release(self.0, pages);
    }
}
