//! One behaviour per test: rights, reach, exchange, drop, revoke scopes,
//! placement, space destruction.

use super::fixture::{revoke_to_the_end, World, PROCESS_SLOTS};
use crate::{
    CapError, LastReference, Narrowing, ObjectKind, Placement, RemovedBatch, RevokeScope,
    RevokeStart, Rights, SweepStatus,
};

const ANY: Placement = Placement::LowestFrom(PROCESS_SLOTS);

fn revoke_all(world: &mut World, space: usize, slot: u32, scope: RevokeScope) -> std::vec::Vec<crate::Removed> {
    let removed = revoke_to_the_end(&mut world.database, world.spaces[space], slot, scope).expect("revoke");
    world.database.audit().expect("consistent after revoke");
    removed
}

#[test]
fn a_copy_never_has_more_rights_than_its_parent() {
    let mut world = World::new(2, 64);
    let memory = world.memory(0, 4096, Rights::READ.union(Rights::GRANT));
    let copy = world.database.derive(world.spaces[0], memory, Rights::ALL, Narrowing::Whole, ANY).unwrap();
    let delegated = world.database.delegate(world.spaces[0], memory, 1, Rights::ALL, ANY).unwrap();
    for (space, slot) in [(0, copy), (1, delegated)] {
        let rights = world.database.capability(world.spaces[space], slot).unwrap().rights;
        assert_eq!(rights, Rights::READ.union(Rights::GRANT), "space {space} slot {slot}");
    }
    world.database.audit().unwrap();
}

#[test]
fn object_of_names_what_capability_names() {
    let mut world = World::new(2, 64);
    let memory = world.memory(0, 4096, Rights::READ);
    let (space, other) = (world.spaces[0], world.spaces[1]);
    let full = world.database.capability(space, memory).unwrap();
    assert_eq!(world.database.object_of(space, memory), Ok((full.object.kind(), full.object.handle)));
    assert_eq!(world.database.object_of(other, memory), Err(CapError::EmptySlot));
    assert_eq!(world.database.object_of(space, 63), Err(CapError::EmptySlot));
}

#[test]
fn objects_in_a_space_agree_with_object_of_slot_by_slot() {
    let mut world = World::new(2, 64);
    let first = world.memory(0, 4096, Rights::READ);
    let space = world.spaces[0];
    let second = world.database.create_object(space, ObjectKind::Memory, 0x2000, 8192, Rights::ALL, Placement::LowestFrom(1)).unwrap();
    let objects = world.database.objects_in(space).unwrap();
    for slot in [first, second, 63, 64, u32::MAX] {
        assert_eq!(objects.object_of(slot), world.database.object_of(space, slot), "slot {slot}");
    }
    assert_eq!(objects.object_of(second), Ok((ObjectKind::Memory, 0x2000)));
}

#[test]
fn a_process_reaches_only_its_own_slots() {
    let mut world = World::new(2, 64);
    let memory = world.memory(0, 4096, Rights::ALL);
    let other = world.spaces[1];
    assert_eq!(world.database.capability(other, memory), Err(CapError::EmptySlot));
    assert_eq!(world.database.access(other, memory, ObjectKind::Memory, Rights::READ), Err(CapError::EmptySlot));
}

#[test]
fn each_right_guards_its_operation() {
    let mut world = World::new(2, 64);
    let (space, other) = (world.spaces[0], world.spaces[1]);
    let read_only = world.memory(0, 4096, Rights::READ);
    assert_eq!(
        world.database.access(space, read_only, ObjectKind::Memory, Rights::WRITE),
        Err(CapError::MissingRights(Rights::WRITE))
    );
    assert_eq!(world.database.delegate(space, read_only, 1, Rights::READ, ANY), Err(CapError::MissingRights(Rights::GRANT)));
    assert_eq!(world.database.offer(space, read_only, 1), Err(CapError::MissingRights(Rights::GRANT)));
    assert_eq!(
        world.database.begin_revoke(space, read_only, RevokeScope::Descendants),
        Err(CapError::MissingRights(Rights::REVOKE))
    );
    // A process capability without write cannot be delegated into.
    let weak_process = world.database.derive(space, 1, Rights::READ, Narrowing::Whole, ANY).unwrap();
    let grantable = world.memory(0, 4096, Rights::ALL);
    assert_eq!(
        world.database.delegate(space, grantable, weak_process, Rights::READ, ANY),
        Err(CapError::MissingRights(Rights::WRITE))
    );
    assert_eq!(
        world.database.access(space, grantable, ObjectKind::Endpoint, Rights::NONE),
        Err(CapError::WrongKind { expected: ObjectKind::Endpoint, found: ObjectKind::Memory })
    );
    assert_eq!(world.database.capability_count(), 7, "no refusal created anything");
    let _ = other;
}

#[test]
fn obtain_needs_the_owners_offer_and_it_is_one_shot() {
    let mut world = World::new(2, 64);
    let (owner, taker) = (world.spaces[0], world.spaces[1]);
    let memory = world.memory(0, 8192, Rights::ALL);
    assert_eq!(world.database.obtain(taker, 0, memory, Rights::READ, ANY), Err(CapError::NotOffered));
    world.database.offer(owner, memory, 1).unwrap();
    let got = world.database.obtain(taker, 0, memory, Rights::READ, ANY).unwrap();
    assert_eq!(world.database.capability(taker, got).unwrap().rights, Rights::READ);
    assert_eq!(world.database.obtain(taker, 0, memory, Rights::READ, ANY), Err(CapError::NotOffered));
}

#[test]
fn memory_views_narrow_byte_by_byte_and_never_widen() {
    let mut world = World::new(1, 64);
    let space = world.spaces[0];
    let memory = world.memory(0, 8192, Rights::ALL);
    let narrow = world.database.derive(space, memory, Rights::ALL, Narrowing::Bytes { offset: 100, length: 50 }, ANY).unwrap();
    assert_eq!(world.database.capability(space, narrow).unwrap().view, crate::View { offset: 100, length: 50 });
    let narrower = world.database.derive(space, narrow, Rights::ALL, Narrowing::Bytes { offset: 10, length: 40 }, ANY).unwrap();
    assert_eq!(world.database.capability(space, narrower).unwrap().view, crate::View { offset: 110, length: 40 });
    assert_eq!(
        world.database.derive(space, narrow, Rights::ALL, Narrowing::Bytes { offset: 10, length: 41 }, ANY),
        Err(CapError::BadRange)
    );
    assert_eq!(
        world.database.derive(space, narrow, Rights::ALL, Narrowing::Bytes { offset: u64::MAX, length: 2 }, ANY),
        Err(CapError::BadRange)
    );
    assert_eq!(
        world.database.derive(space, 0, Rights::ALL, Narrowing::Bytes { offset: 0, length: 0 }, ANY),
        Err(CapError::BadRange),
        "only memory has byte views"
    );
}

#[test]
fn dropping_a_capability_keeps_what_was_derived_from_it_under_its_parent() {
    let mut world = World::new(3, 64);
    let root = world.memory(0, 4096, Rights::ALL);
    let middle = world.database.delegate(world.spaces[0], root, 1, Rights::ALL, ANY).unwrap();
    let leaf = world.database.delegate(world.spaces[1], middle, 2, Rights::ALL, ANY).unwrap();
    let removed = world.database.drop_capability(world.spaces[1], middle).unwrap();
    assert_eq!(removed.last_reference, LastReference::No);
    assert!(world.database.capability(world.spaces[2], leaf).is_ok(), "the leaf survives its parent's drop");
    let removed = revoke_all(&mut world, 0, root, RevokeScope::Descendants);
    assert_eq!(removed.len(), 1);
    assert_eq!((removed[0].owner, removed[0].slot), (world.spaces[2], leaf), "the root's revoke still reaches it");
}

#[test]
fn revoking_descendants_keeps_the_capability_and_revoking_with_self_removes_it() {
    let mut world = World::new(2, 64);
    let root = world.memory(0, 4096, Rights::ALL);
    world.database.delegate(world.spaces[0], root, 1, Rights::ALL, ANY).unwrap();
    assert_eq!(revoke_all(&mut world, 0, root, RevokeScope::Descendants).len(), 1);
    assert!(world.database.capability(world.spaces[0], root).is_ok());
    let removed = revoke_all(&mut world, 0, root, RevokeScope::WithSelf);
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].last_reference, LastReference::Yes, "the object is gone with its last capability");
    assert_eq!(world.database.object_count(), 4, "only the process objects remain");
}

#[test]
fn nothing_can_be_derived_from_a_capability_whose_revocation_is_under_way() {
    let mut world = World::new(2, 64);
    let space = world.spaces[0];
    let root = world.memory(0, 4096, Rights::ALL);
    let child = world.database.derive(space, root, Rights::ALL, Narrowing::Whole, ANY).unwrap();
    let RevokeStart::Started(revoke) = world.database.begin_revoke(space, root, RevokeScope::Descendants).unwrap() else {
        panic!("first revoke starts")
    };
    assert_eq!(world.database.capability(space, child), Err(CapError::Revoked), "a doomed copy works for nobody");
    assert_eq!(world.database.object_of(space, child), Err(CapError::Revoked), "nor through the lean look-up");
    assert_eq!(world.database.delegate(space, child, 1, Rights::ALL, ANY), Err(CapError::Revoked));
    assert_eq!(world.database.derive(space, root, Rights::ALL, Narrowing::Whole, ANY), Err(CapError::InRevocation));
    assert!(world.database.capability(space, root).is_ok(), "the root itself still works");
    assert_eq!(world.database.begin_revoke(space, child, RevokeScope::WithSelf), Ok(RevokeStart::WaitFor(revoke)));
    let mut batch = RemovedBatch::new();
    assert_eq!(world.database.sweep(revoke, &mut batch), SweepStatus::Swept);
    assert!(!world.database.revoke_complete(revoke), "not complete before the effects are undone");
    world.database.effects_done(revoke, batch.len());
    assert!(world.database.revoke_complete(revoke));
}

#[test]
fn a_revoke_that_meets_an_earlier_one_absorbs_it_and_both_finish_together() {
    let mut world = World::new(2, 256);
    let space = world.spaces[0];
    let root = world.memory(0, 4096, Rights::ALL);
    let middle = world.database.derive(space, root, Rights::ALL, Narrowing::Whole, ANY).unwrap();
    for _ in 0..40 {
        world.database.derive(space, middle, Rights::ALL, Narrowing::Whole, ANY).unwrap();
    }
    let RevokeStart::Started(inner) = world.database.begin_revoke(space, middle, RevokeScope::Descendants).unwrap() else {
        panic!()
    };
    let mut inner_batch = RemovedBatch::new();
    assert_eq!(world.database.sweep(inner, &mut inner_batch), SweepStatus::More);
    // The inner revoke has removed a batch and is undoing it when the outer one starts.
    let RevokeStart::Started(outer) = world.database.begin_revoke(space, root, RevokeScope::WithSelf).unwrap() else {
        panic!()
    };
    assert_eq!(world.database.sweep(inner, &mut RemovedBatch::new()), SweepStatus::Absorbed);
    let mut removed = 0;
    loop {
        let mut batch = RemovedBatch::new();
        let status = world.database.sweep(outer, &mut batch);
        removed += batch.len();
        world.database.effects_done(outer, batch.len());
        if status == SweepStatus::Swept {
            break;
        }
    }
    assert_eq!(removed + inner_batch.len(), 42);
    assert!(!world.database.revoke_complete(outer), "the absorbed batch is still being undone");
    assert!(!world.database.revoke_complete(inner));
    world.database.effects_done(inner, inner_batch.len());
    assert!(world.database.revoke_complete(outer) && world.database.revoke_complete(inner));
    assert!(world.database.end_revoke(outer).is_none());
    assert!(world.database.end_revoke(inner).is_none());
    world.database.audit().unwrap();
    assert_eq!(world.database.capability_count(), 4);
}

#[test]
fn placement_takes_the_lowest_free_slot_or_exactly_the_one_asked() {
    let mut world = World::new(1, 8);
    let space = world.spaces[0];
    let a = world.memory(0, 1, Rights::ALL);
    let b = world.memory(0, 1, Rights::ALL);
    assert_eq!((a, b), (4, 5));
    world.database.drop_capability(space, a).unwrap();
    assert_eq!(world.memory(0, 1, Rights::ALL), 4, "the lowest free slot again");
    let at = |slot| Placement::At(slot);
    let make = |world: &mut World, placement| {
        world.database.create_object(space, ObjectKind::File, 0, 0, Rights::ALL, placement)
    };
    assert_eq!(make(&mut world, at(7)), Ok(7));
    assert_eq!(make(&mut world, at(7)), Err(CapError::SlotInUse));
    assert_eq!(make(&mut world, at(8)), Err(CapError::SlotOutOfRange));
    assert_eq!(make(&mut world, Placement::LowestFrom(6)), Ok(6));
    assert_eq!(make(&mut world, Placement::LowestFrom(6)), Err(CapError::SpaceFull));
}

#[test]
fn a_dead_process_cannot_be_delegated_to_but_what_it_passed_on_lives() {
    let mut world = World::new(2, 64);
    let (parent, child) = (world.spaces[0], world.spaces[1]);
    let pipe = world.database.create_object(parent, ObjectKind::Pipe, 7, 0, Rights::ALL, ANY).unwrap();
    let passed = world.database.delegate(parent, pipe, 1, Rights::ALL, ANY).unwrap();
    let mut batch = RemovedBatch::new();
    assert_eq!(world.database.destroy_space_step(parent, &mut batch), Ok(crate::TeardownStatus::Done));
    assert_eq!(batch.len(), 3, "two process capabilities and the pipe");
    assert!(world.database.capability(child, passed).is_ok(), "the child keeps the pipe");
    assert_eq!(world.database.delegate(child, passed, 0, Rights::ALL, ANY), Err(CapError::TargetGone));
    assert_eq!(world.database.capability(parent, pipe), Err(CapError::NoSuchSpace));
    world.database.audit().unwrap();
}

#[test]
fn a_descendants_revoke_holds_its_root_until_it_ends_and_removes_it_if_the_owner_died() {
    let mut world = World::new(2, 64);
    let (a, b) = (world.spaces[0], world.spaces[1]);
    let root = world.memory(0, 4096, Rights::ALL);
    world.database.delegate(a, root, 1, Rights::ALL, ANY).unwrap();
    let RevokeStart::Started(revoke) = world.database.begin_revoke(a, root, RevokeScope::Descendants).unwrap() else {
        panic!("nothing else revokes here");
    };
    let mut batch = RemovedBatch::new();
    assert_eq!(world.database.sweep(revoke, &mut batch), SweepStatus::Swept);
    assert_eq!(batch.len(), 1, "only the copy in b");
    // Swept but not ended: the root is still held, so nothing derives from it.
    assert_eq!(world.database.delegate(a, root, 1, Rights::ALL, ANY), Err(CapError::InRevocation));
    // The owner dies meanwhile; teardown leaves the held root to the revocation.
    let mut teardown = RemovedBatch::new();
    assert_eq!(world.database.destroy_space_step(a, &mut teardown), Ok(crate::TeardownStatus::Done));
    assert_eq!(teardown.len(), 2, "the two process capabilities, not the held root");
    world.database.effects_done(revoke, batch.len());
    assert!(world.database.revoke_complete(revoke));
    let root_removed = world.database.end_revoke(revoke).expect("the dead owner's root goes with the revocation");
    assert_eq!((root_removed.owner, root_removed.slot), (a, root));
    assert!(world.database.contents(b).all(|(slot, _)| slot < PROCESS_SLOTS));
    world.database.audit().unwrap();
}

#[test]
fn a_space_whose_last_capabilities_fill_the_batch_exactly_is_destroyed_without_error() {
    let mut world = World::new(2, 64);
    let a = world.spaces[0];
    let held = |world: &World| (0..64).filter(|&slot| world.database.capability(a, slot).is_ok()).count();
    while held(&world) < crate::removed::BATCH {
        world.memory(0, 4096, Rights::ALL);
    }
    assert_eq!(held(&world), crate::removed::BATCH);
    let mut batch = RemovedBatch::new();
    let mut steps = 0;
    loop {
        steps += 1;
        match world.database.destroy_space_step(a, &mut batch) {
            Ok(crate::TeardownStatus::Done) => break,
            Ok(crate::TeardownStatus::More) => batch = RemovedBatch::new(),
            Err(error) => panic!("step {steps}: {error:?} (the space's last capability filled the batch)"),
        }
    }
    world.database.audit().unwrap();
}
