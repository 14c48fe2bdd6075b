//! The consistency audit of every kernel's part of the tree, once every
//! message is delivered: nothing open, nothing marked or half-delegated,
//! and every parent and child link agreeing with its partner on whichever
//! kernel holds it. The model checker and the concurrent host test use it.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

use alloc::vec::Vec;

use super::{CapKey, CapView, Kernel, KernelId};

/// What the audit needs of one kernel: its id, its open operations and
/// its capabilities. A kernel thread that owns its `Kernel` answers with
/// this ([`KernelView::of`]) so that the audit can run elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelView {
    /// The kernel.
    pub id: KernelId,
    /// Its system calls and revocations still in progress.
    pub open_operations: usize,
    /// Its capabilities.
    pub capabilities: Vec<CapView>,
}

impl KernelView {
    /// `kernel` as the audit sees it.
    pub fn of(kernel: &Kernel) -> Self {
        Self { id: kernel.id(), open_operations: kernel.open_operations(), capabilities: kernel.capabilities() }
    }
}

/// `Ok` when the kernels' capabilities are consistent at quiescence, else
/// the first disagreement found.
pub fn audit<'a>(kernels: impl IntoIterator<Item = &'a Kernel> + Clone) -> Result<(), String> {
    let views: Vec<KernelView> = kernels.into_iter().map(KernelView::of).collect();
    audit_views(&views)
}

/// [`audit`] over views taken of every kernel.
pub fn audit_views(kernels: &[KernelView]) -> Result<(), String> {
    let all: BTreeMap<CapKey, &CapView> = kernels.iter().flat_map(|kernel| kernel.capabilities.iter()).map(|cap| (cap.key, cap)).collect();
    if let Some(busy) = kernels.iter().find(|kernel| kernel.open_operations != 0) {
        return Err(format!("kernel {:?} still has {} open operations", busy.id, busy.open_operations));
    }
    for cap in all.values() {
        if !cap.live {
            return Err(format!("{:?} is still marked or not committed", cap.key));
        }
        if let Some(parent) = cap.parent {
            if !all.get(&parent).is_some_and(|found| found.children.contains(&cap.key)) {
                return Err(format!("{:?} names parent {parent:?}, which does not list it", cap.key));
            }
        }
        if let Some(child) = cap.children.iter().find(|child| !all.get(child).is_some_and(|found| found.parent == Some(cap.key))) {
            return Err(format!("{:?} lists child {child:?}, which does not name it", cap.key));
        }
    }
    Ok(())
}
