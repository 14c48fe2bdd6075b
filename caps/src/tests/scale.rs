//! Scale: revoking a chain of 100,000 delegations (alternating between two
//! processes) and a tree of 100,000 children, on a thread with a 64 KiB
//! stack (the walks must not recurse), with the work counted and checked
//! to be linear.

use super::fixture::{World, PROCESS_SLOTS};
use crate::{Placement, RevokeScope, Rights, SharedCaps};
use sync::StdBlocking;

const COUNT: u32 = 100_000;
const ANY: Placement = Placement::LowestFrom(PROCESS_SLOTS);

fn on_a_small_stack(body: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(64 * 1024).spawn(body).unwrap().join().unwrap();
}

fn shared(world: World) -> SharedCaps<StdBlocking> {
    let shared = SharedCaps::new(0);
    shared.with(|database| *database = world.database);
    shared
}

#[test]
fn a_chain_of_100000_delegations_revokes_in_linear_work_on_a_small_stack() {
    let mut world = World::new(2, COUNT + 16);
    let root = world.memory(0, 4096, Rights::ALL);
    let mut holder = (0, root);
    for _ in 0..COUNT {
        let (space, slot) = holder;
        let other = 1 - space;
        let next = world.database.delegate(world.spaces[space], slot, other as u32, Rights::ALL, ANY).unwrap();
        holder = (other, next);
    }
    let space = world.spaces[0];
    let before = world.database.work();
    let caps = shared(world);
    on_a_small_stack(move || {
        let mut undone = 0u64;
        let report = caps.revoke(space, root, RevokeScope::WithSelf, |_| undone += 1).unwrap();
        assert_eq!(report.removed, u64::from(COUNT) + 1);
        assert_eq!(undone, report.removed);
        caps.with(|database| {
            let work = database.work() - before;
            assert!(work <= 4 * u64::from(COUNT + 1), "work {work} is not linear in {COUNT}");
            assert_eq!(database.capability_count(), 4, "only the process capabilities (2 × 2) are left");
            database.audit().unwrap();
        });
    });
}

#[test]
fn a_tree_of_100000_children_revokes_in_linear_work_on_a_small_stack() {
    let mut world = World::new(4, COUNT + 16);
    let root = world.memory(0, 4096, Rights::ALL);
    for child in 0..COUNT {
        world.database.delegate(world.spaces[0], root, child % 4, Rights::READ, ANY).unwrap();
    }
    let space = world.spaces[0];
    let before = world.database.work();
    let caps = shared(world);
    on_a_small_stack(move || {
        let report = caps.revoke(space, root, RevokeScope::Descendants, |_| {}).unwrap();
        assert_eq!(report.removed, u64::from(COUNT));
        caps.with(|database| {
            let work = database.work() - before;
            assert!(work <= 4 * u64::from(COUNT + 1), "work {work} is not linear in {COUNT}");
            assert_eq!(database.family(space, root), Ok((0, false)));
            database.audit().unwrap();
        });
    });
}

/// The withdrawal count a descriptor cache keys on: published by every
/// release of the lock, moved by a drop and by each capability a revoke
/// claims, and by nothing that only adds or reads.
#[test]
fn the_published_withdrawals_move_with_every_capability_taken_out_of_use_and_only_then() {
    let mut world = World::new(2, 64);
    let root = world.memory(0, 4096, Rights::ALL);
    let spaces = world.spaces.clone();
    let space = spaces[0];
    let caps = shared(world);
    let published = || caps.withdrawals().current();
    let start = published();
    assert_eq!(start, caps.with(|database| database.withdrawals()), "published at the release");
    let copies: std::vec::Vec<u32> = (0..3)
        .map(|_| caps.with(|database| database.delegate(space, root, 1, Rights::READ, ANY).unwrap()))
        .collect();
    caps.with(|database| database.capability(space, root).map(|_| ()).unwrap());
    assert_eq!(published(), start, "adding and looking withdraw nothing");
    caps.with(|database| database.drop_capability(spaces[1], copies[0]).unwrap());
    assert_eq!(published(), start + 1, "a drop");
    caps.revoke(space, root, RevokeScope::Descendants, |_| {}).unwrap();
    assert_eq!(published(), start + 1 + 2 * 2, "the two copies left: each counted when claimed and again when removed");
}
