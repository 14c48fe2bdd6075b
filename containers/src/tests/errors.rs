//! Every refusal: the error it returns, and that it changed nothing.

use std::format;
use std::string::ToString;

use crate::{ContainerId, QuotaError, StdContainers, MAX_CAPACITY, MAX_PAGES};

/// A tree with root quota 10 and room for `capacity` containers.
fn tree(capacity: usize) -> StdContainers {
    StdContainers::with_capacity(10, capacity).expect("a valid tree")
}

/// The counts of `id` that a refusal must leave alone.
fn counts(containers: &StdContainers, id: ContainerId) -> (u64, u64, u64) {
    let usage = containers.usage(id).unwrap();
    (
        usage,
        containers.available(id).unwrap(),
        containers.charged(id).unwrap(),
    )
}

#[test]
fn a_root_quota_above_max_pages_is_refused() {
    let refused = StdContainers::new(MAX_PAGES + 1).map(drop);
    assert_eq!(
        refused,
        Err(QuotaError::QuotaTooLarge {
            asked: MAX_PAGES + 1
        })
    );
    let largest = StdContainers::with_capacity(MAX_PAGES, 1).expect("MAX_PAGES fits");
    assert_eq!(largest.available(largest.root()), Ok(MAX_PAGES));
}

#[test]
fn a_capacity_of_zero_or_above_the_maximum_is_refused() {
    for capacity in [0, MAX_CAPACITY + 1, usize::MAX] {
        let refused = StdContainers::with_capacity(1, capacity).map(drop);
        assert_eq!(
            refused,
            Err(QuotaError::CapacityOutOfRange { asked: capacity })
        );
    }
}

#[test]
fn a_charge_beyond_the_quota_is_refused_and_changes_nothing() {
    let containers = tree(4);
    let root = containers.root();
    containers.charge(root, 7).unwrap();
    for pages in [4, MAX_PAGES, u64::MAX] {
        assert_eq!(
            containers.charge(root, pages),
            Err(QuotaError::Exhausted {
                asked: pages,
                available: 3
            })
        );
        assert_eq!(counts(&containers, root), (7, 3, 7));
    }
    assert_eq!(containers.charge(root, 3), Ok(()), "exactly the rest fits");
    assert_eq!(containers.charge(root, 0), Ok(()), "nothing always fits");
}

#[test]
fn releasing_more_than_charged_is_refused_and_changes_nothing() {
    let containers = tree(4);
    let root = containers.root();
    containers.charge(root, 2).unwrap();
    for pages in [3, u64::MAX] {
        assert_eq!(
            containers.release(root, pages),
            Err(QuotaError::OverRelease {
                asked: pages,
                charged: 2
            })
        );
        assert_eq!(counts(&containers, root), (2, 8, 2));
    }
}

#[test]
fn pages_held_for_a_child_cannot_be_released_through_the_parent() {
    let containers = tree(4);
    let root = containers.root();
    containers.create_child(root, 6).unwrap();
    containers.charge(root, 1).unwrap();
    assert_eq!(
        containers.release(root, 2),
        Err(QuotaError::OverRelease {
            asked: 2,
            charged: 1
        })
    );
    assert_eq!(counts(&containers, root), (7, 3, 1));
}

#[test]
fn a_dead_container_releases_no_more_than_it_still_has_charged() {
    let containers = tree(4);
    let child = containers.create_child(containers.root(), 5).unwrap();
    containers.charge(child, 2).unwrap();
    containers.destroy(child).unwrap();
    assert_eq!(
        containers.release(child, 3),
        Err(QuotaError::OverRelease {
            asked: 3,
            charged: 2
        })
    );
    assert_eq!(counts(&containers, containers.root()), (2, 8, 0));
    containers.release(child, 2).unwrap();
    // Its tombstone is gone now: anything more is an over-release, nothing is fine.
    assert_eq!(
        containers.release(child, 1),
        Err(QuotaError::OverRelease {
            asked: 1,
            charged: 0
        })
    );
    assert_eq!(containers.release(child, 0), Ok(()));
}

#[test]
fn a_child_the_parent_cannot_cover_is_refused_and_changes_nothing() {
    let containers = tree(4);
    let root = containers.root();
    containers.charge(root, 4).unwrap();
    for quota in [7, MAX_PAGES + 1, u64::MAX] {
        assert_eq!(
            containers.create_child(root, quota),
            Err(QuotaError::Exhausted {
                asked: quota,
                available: 6
            })
        );
        assert_eq!(counts(&containers, root), (4, 6, 4));
        assert_eq!(containers.children_count(root), Ok(0));
    }
    let child = containers.create_child(root, 6).unwrap();
    assert_eq!(child.index(), 1, "the refusals took no slot");
}

#[test]
fn a_full_table_refuses_a_new_container_and_changes_nothing() {
    let containers = tree(2);
    let root = containers.root();
    let child = containers.create_child(root, 1).unwrap();
    assert_eq!(
        containers.create_child(root, 1),
        Err(QuotaError::TooManyContainers)
    );
    assert_eq!(counts(&containers, root), (1, 9, 0));
    // A dead container with pages charged still takes its slot.
    containers.charge(child, 1).unwrap();
    containers.destroy(child).unwrap();
    assert_eq!(
        containers.create_child(root, 1),
        Err(QuotaError::TooManyContainers)
    );
    containers.release(child, 1).unwrap();
    assert!(
        containers.create_child(root, 1).is_ok(),
        "the slot is free once nothing is charged"
    );
}

#[test]
fn the_table_is_checked_before_the_quota() {
    let containers = tree(1);
    let refused = containers.create_child(containers.root(), u64::MAX);
    assert_eq!(refused, Err(QuotaError::TooManyContainers));
}

#[test]
fn the_root_cannot_be_destroyed() {
    let containers = tree(2);
    assert_eq!(
        containers.destroy(containers.root()),
        Err(QuotaError::CannotDestroyRoot)
    );
    assert_eq!(containers.quota(containers.root()), Ok(10));
}

#[test]
fn a_container_with_live_children_cannot_be_destroyed() {
    let containers = tree(4);
    let child = containers.create_child(containers.root(), 5).unwrap();
    let grandchild = containers.create_child(child, 2).unwrap();
    assert_eq!(containers.destroy(child), Err(QuotaError::HasChildren));
    assert_eq!(counts(&containers, child), (2, 3, 0));
    containers.destroy(grandchild).unwrap();
    assert!(
        containers.destroy(child).is_ok(),
        "a dead child does not count"
    );
}

/// Ids that name nothing: out of the table, a generation not handed out
/// yet, and a destroyed container.
fn unknown_ids(containers: &StdContainers) -> [ContainerId; 4] {
    let destroyed = containers.create_child(containers.root(), 1).unwrap();
    containers.destroy(destroyed).unwrap();
    [
        ContainerId::from_parts(4, 0),
        ContainerId::from_parts(u32::MAX, u32::MAX),
        ContainerId::from_parts(0, 1),
        destroyed,
    ]
}

#[test]
fn every_operation_on_an_id_naming_nothing_is_refused() {
    let containers = tree(4);
    for id in unknown_ids(&containers) {
        let no = Err(QuotaError::NoSuchContainer);
        assert_eq!(containers.charge(id, 1), no, "charge on {id}");
        assert_eq!(
            containers.create_child(id, 1).map(drop),
            no,
            "create_child under {id}"
        );
        assert_eq!(containers.destroy(id).map(drop), no, "destroy {id}");
        assert_eq!(containers.usage(id).map(drop), no, "usage of {id}");
        assert_eq!(containers.quota(id).map(drop), no, "quota of {id}");
        assert_eq!(containers.available(id).map(drop), no, "available of {id}");
        assert_eq!(containers.charged(id).map(drop), no, "charged of {id}");
        assert_eq!(containers.parent(id).map(drop), no, "parent of {id}");
        assert_eq!(
            containers.children_count(id).map(drop),
            no,
            "children of {id}"
        );
    }
    assert_eq!(counts(&containers, containers.root()), (0, 10, 0));
}

#[test]
fn a_release_on_an_id_never_handed_out_is_refused() {
    let containers = tree(4);
    for id in [
        ContainerId::from_parts(4, 0),
        ContainerId::from_parts(0, 1),
        ContainerId::from_parts(1, 0),
    ] {
        assert_eq!(
            containers.release(id, 1),
            Err(QuotaError::NoSuchContainer),
            "release on {id}"
        );
    }
}

#[test]
fn every_error_says_what_went_wrong() {
    let cases = [
        (
            QuotaError::Exhausted {
                asked: 5,
                available: 3,
            },
            "5 pages, 3 available",
        ),
        (QuotaError::NoSuchContainer, "no such container"),
        (QuotaError::HasChildren, "live children"),
        (QuotaError::CannotDestroyRoot, "root"),
        (
            QuotaError::OverRelease {
                asked: 4,
                charged: 1,
            },
            "released 4 pages but only 1",
        ),
        (QuotaError::TooManyContainers, "table full"),
        (
            QuotaError::QuotaTooLarge { asked: 1 << 41 },
            "2199023255552 pages",
        ),
        (QuotaError::CapacityOutOfRange { asked: 0 }, "0 containers"),
        (QuotaError::OutOfKernelMemory, "kernel memory"),
    ];
    for (error, expected) in cases {
        let shown = error.to_string();
        assert!(
            shown.contains(expected),
            "{error:?} shows {shown:?}, expected it to say {expected:?}"
        );
    }
    assert_eq!(
        format!("{}", ContainerId::from_parts(3, 1)),
        "container 3.1"
    );
}
