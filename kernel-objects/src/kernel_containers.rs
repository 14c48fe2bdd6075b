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

/// One frame charged to `container`.
pub(crate) fn allocate_charged_frame(container: ContainerId) -> Result<Frame, ChargedFrameError> {
    let tree = containers().ok_or(ChargedFrameError::Quota(QuotaError::NoSuchContainer))?;
    tree.charge(container, 1).map_err(ChargedFrameError::Quota)?;
    crate::physical_memory::allocate_held_frame().map_err(|error| {
        release(container, 1);
        ChargedFrameError::Frames(error)
    })
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
