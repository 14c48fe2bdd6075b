//! The consistency audit of every kernel's part of the tree, once every
//! message is delivered: nothing open, nothing marked or half-delegated,
//! and every parent and child link agreeing with its partner on whichever
//! kernel holds it. The model checker and the concurrent host test use it.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

use super::{CapKey, CapView, Kernel};

/// `Ok` when the kernels' capabilities are consistent at quiescence, else
/// the first disagreement found.
pub fn audit<'a>(kernels: impl IntoIterator<Item = &'a Kernel> + Clone) -> Result<(), String> {
    let all: BTreeMap<CapKey, CapView> = kernels.clone().into_iter().flat_map(Kernel::capabilities).map(|cap| (cap.key, cap)).collect();
    if let Some(busy) = kernels.into_iter().find(|kernel| kernel.open_operations() != 0) {
        return Err(format!("kernel {:?} still has {} open operations", busy.id(), busy.open_operations()));
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
