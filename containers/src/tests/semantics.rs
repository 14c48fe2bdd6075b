//! What the tree does when nothing is refused: carving, destroying,
//! forwarding releases of dead containers, reusing slots, lock order.

use crate::{ContainerId, Destroyed, QuotaError, StdContainers};

fn tree(root_quota: u64) -> StdContainers {
    StdContainers::with_capacity(root_quota, 8).expect("a valid tree")
}

#[test]
fn a_child_quota_is_carved_out_of_the_parent() {
    let containers = tree(100);
    let root = containers.root();
    let child = containers.create_child(root, 30).unwrap();
    assert_eq!(containers.usage(root), Ok(30));
    assert_eq!(containers.available(root), Ok(70));
    assert_eq!(
        containers.charged(root),
        Ok(0),
        "carved pages are held, not charged"
    );
    assert_eq!(
        (containers.quota(child), containers.usage(child)),
        (Ok(30), Ok(0))
    );
    assert_eq!(containers.parent(child), Ok(Some(root)));
    assert_eq!(containers.parent(root), Ok(None));
    assert_eq!(containers.children_count(root), Ok(1));
}

#[test]
fn destroy_gives_back_the_unused_part_and_keeps_charged_pages_charged() {
    let containers = tree(100);
    let root = containers.root();
    let child = containers.create_child(root, 30).unwrap();
    containers.charge(child, 12).unwrap();
    let destroyed = containers.destroy(child).unwrap();
    assert_eq!(
        destroyed,
        Destroyed {
            returned: 18,
            still_charged: 12
        }
    );
    assert_eq!(
        containers.usage(root),
        Ok(12),
        "the 12 pages now count at the parent"
    );
    assert_eq!(
        containers.charged(root),
        Ok(0),
        "... held for the dead child, not releasable through the parent"
    );
    assert_eq!(containers.children_count(root), Ok(0));
    assert_eq!(
        containers.charge(child, 1),
        Err(QuotaError::NoSuchContainer)
    );
    containers.release(child, 5).unwrap();
    assert_eq!(
        containers.usage(root),
        Ok(7),
        "a release on the dead id reaches the parent"
    );
    containers.release(child, 7).unwrap();
    assert_eq!(
        (containers.usage(root), containers.available(root)),
        (Ok(0), Ok(100))
    );
}

#[test]
fn a_release_on_a_dead_container_reaches_the_nearest_live_ancestor() {
    let containers = tree(100);
    let root = containers.root();
    let middle = containers.create_child(root, 50).unwrap();
    let leaf = containers.create_child(middle, 20).unwrap();
    containers.charge(leaf, 8).unwrap();
    containers.charge(middle, 3).unwrap();
    assert_eq!(
        containers.destroy(leaf),
        Ok(Destroyed {
            returned: 12,
            still_charged: 8
        })
    );
    assert_eq!(containers.usage(middle), Ok(11));
    assert_eq!(
        containers.destroy(middle),
        Ok(Destroyed {
            returned: 39,
            still_charged: 11
        })
    );
    assert_eq!(containers.usage(root), Ok(11));
    // The leaf's 8 pages are held, not charged, by the dead middle.
    assert_eq!(
        containers.release(middle, 4),
        Err(QuotaError::OverRelease {
            asked: 4,
            charged: 3
        })
    );
    containers.release(leaf, 8).unwrap();
    assert_eq!(containers.usage(root), Ok(3));
    containers.release(middle, 3).unwrap();
    assert_eq!(
        (containers.usage(root), containers.available(root)),
        (Ok(0), Ok(100))
    );
}

#[test]
fn a_slot_is_reused_in_a_new_generation_and_the_old_id_stays_dead() {
    let containers = tree(100);
    let root = containers.root();
    let first = containers.create_child(root, 10).unwrap();
    let second = containers.create_child(root, 10).unwrap();
    containers.destroy(first).unwrap();
    let third = containers.create_child(root, 20).unwrap();
    assert_eq!(
        third,
        ContainerId::from_parts(first.index(), first.generation() + 1)
    );
    assert_ne!(second.index(), third.index());
    assert_eq!(containers.quota(first), Err(QuotaError::NoSuchContainer));
    assert_eq!(
        containers.charge(first, 1),
        Err(QuotaError::NoSuchContainer)
    );
    assert_eq!(containers.quota(third), Ok(20));
}

#[test]
fn a_new_container_takes_the_lowest_free_slot() {
    let containers = tree(100);
    let root = containers.root();
    let children: std::vec::Vec<_> = (0..5)
        .map(|_| containers.create_child(root, 1).unwrap())
        .collect();
    containers.destroy(children[3]).unwrap();
    containers.destroy(children[1]).unwrap();
    assert_eq!(
        containers.create_child(root, 1).unwrap().index(),
        children[1].index()
    );
    assert_eq!(
        containers.create_child(root, 1).unwrap().index(),
        children[3].index()
    );
    assert_eq!(containers.create_child(root, 1).unwrap().index(), 6);
}

#[test]
fn charges_fill_the_quota_exactly() {
    let containers = tree(10);
    let child = containers.create_child(containers.root(), 10).unwrap();
    (0..10).for_each(|_| containers.charge(child, 1).unwrap());
    assert_eq!(
        containers.charge(child, 1),
        Err(QuotaError::Exhausted {
            asked: 1,
            available: 0
        })
    );
    assert_eq!(containers.available(containers.root()), Ok(0));
}

#[test]
fn the_tree_may_be_changed_while_holding_a_higher_level_lock() {
    type Outer =
        spinlock::SpinLock<u32, spinlock::TicketLock, spinlock::NoGuard, spinlock::ThreadLevels>;
    let outer = Outer::new(spinlock::Level::new(4), 0);
    let containers = tree(10);
    let _held = outer.lock();
    let child = containers.create_child(containers.root(), 1).unwrap();
    containers.destroy(child).unwrap();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "lock order violation: taking level 3 while holding level 2")]
fn changing_the_tree_while_holding_a_lower_level_lock_is_caught() {
    type Inner =
        spinlock::SpinLock<u32, spinlock::TicketLock, spinlock::NoGuard, spinlock::ThreadLevels>;
    let inner = Inner::new(spinlock::Level::new(2), 0);
    let containers = tree(10);
    let _held = inner.lock();
    let _ = containers.create_child(containers.root(), 1);
}
