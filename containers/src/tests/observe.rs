//! What a caller can observe of one container, gathered the same way from
//! the implementation and from the spec, so a refinement test compares
//! them in one `assert_eq!`.

use crate::spec::ContainersSpec;
use crate::{ContainerId, QuotaError, StdContainers};

/// Every query's answer for one id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Observed {
    usage: Result<u64, QuotaError>,
    quota: Result<u64, QuotaError>,
    available: Result<u64, QuotaError>,
    charged: Result<u64, QuotaError>,
    parent: Result<Option<ContainerId>, QuotaError>,
    children: Result<usize, QuotaError>,
}

/// What the implementation answers about `id`.
pub(crate) fn observe(containers: &StdContainers, id: ContainerId) -> Observed {
    Observed {
        usage: containers.usage(id),
        quota: containers.quota(id),
        available: containers.available(id),
        charged: containers.charged(id),
        parent: containers.parent(id),
        children: containers.children_count(id),
    }
}

/// What the spec answers about `id`.
pub(crate) fn observe_spec(spec: &ContainersSpec, id: ContainerId) -> Observed {
    Observed {
        usage: spec.usage(id),
        quota: spec.quota(id),
        available: spec.available(id),
        charged: spec.charged(id),
        parent: spec.parent(id),
        children: spec.children_count(id),
    }
}

/// Checks the spec's own bookkeeping: every live container's usage is what
/// it charged plus its live children's quotas plus what its dead children
/// still carry, and never above its quota; so the root's quota is exactly
/// covered by the pages charged anywhere in the tree plus the unused rest.
pub(crate) fn assert_conserved(spec: &ContainersSpec) {
    for (id, record) in spec.records() {
        let held: u64 = spec
            .records()
            .filter(|(_, child)| child.parent == Some(id))
            .map(|(_, child)| match child.alive {
                true => child.quota,
                false => child.usage,
            })
            .sum();
        assert_eq!(
            record.usage,
            record.charged + held,
            "{id}: {record:?} holds {held} for its children"
        );
        assert!(
            record.usage <= record.quota,
            "{id}: usage above quota: {record:?}"
        );
    }
}
