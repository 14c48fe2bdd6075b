//! Targeted tests of the address-space operations.

use super::harness::{user_access, World, KERNEL_HALF};
use crate::{Access, Fault, FaultOutcome, Rights, VmError, PAGE_SIZE, USER_END};

const BASE: u64 = 0x40_0000;

#[test]
fn a_new_space_carries_the_kernel_half_and_frees_its_root() {
    let world = World::new();
    let space = world.space();
    assert_eq!(world.memory.read_word(space.root(), 511), KERNEL_HALF[255]);
    assert_eq!(space.table_frames(), 1);
    let flush = space.destroy();
    assert!(flush.everything);
    assert!(world.all_free());
}

#[test]
fn write_and_execute_together_are_refused() {
    assert_eq!(Rights::new(true, true, true), Err(VmError::WriteAndExecute));
    assert_eq!(Rights::new(false, true, false), Err(VmError::UnsupportedRights));
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    assert_eq!(space.protect(BASE, PAGE_SIZE, Rights::NONE).map(|_| ()), Ok(()));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn bad_addresses_and_lengths_are_errors() {
    let world = World::new();
    let mut space = world.space();
    let frame = world.frame_holding(1);
    assert_eq!(space.map(BASE + 1, frame, Rights::READ), Err(VmError::Misaligned));
    assert_eq!(space.map(USER_END, frame, Rights::READ), Err(VmError::OutOfRange));
    assert_eq!(space.map(BASE, frame, Rights::NONE), Err(VmError::UnsupportedRights));
    assert_eq!(space.map(BASE, 0x1000, Rights::READ), Err(VmError::UnknownFrame));
    assert_eq!(space.add_demand_zero(BASE, 0, Rights::READ), Err(VmError::OutOfRange));
    assert_eq!(space.add_demand_zero(USER_END - PAGE_SIZE, 2 * PAGE_SIZE, Rights::READ), Err(VmError::OutOfRange));
    assert_eq!(space.unmap(u64::MAX - 4095, PAGE_SIZE).map(|_| ()), Err(VmError::OutOfRange));
    assert_eq!(space.handle_fault(USER_END + 5, Access::Read), Err(Fault::Segmentation));
    space.map(BASE, frame, Rights::READ).unwrap();
    assert_eq!(space.map(BASE, frame, Rights::READ), Err(VmError::AlreadyMapped));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn demand_zero_pages_appear_on_first_touch_with_the_region_rights() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, 4 * PAGE_SIZE, Rights::READ).unwrap();
    assert!(space.translate(BASE).is_none());
    assert_eq!(user_access(&mut space, BASE, Access::Read, None), Ok(0));
    assert_eq!(space.translate(BASE).unwrap().rights, Rights::READ);
    assert_eq!(user_access(&mut space, BASE + PAGE_SIZE, Access::Write, Some(3)), Err(Fault::Segmentation));
    assert_eq!(user_access(&mut space, BASE + 4 * PAGE_SIZE, Access::Read, None), Err(Fault::Segmentation));
    assert_eq!(user_access(&mut space, BASE, Access::Execute, None), Err(Fault::Segmentation));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn copy_on_write_parent_and_child_see_only_their_own_writes() {
    let world = World::new();
    let mut parent = world.space();
    parent.add_demand_zero(BASE, 2 * PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut parent, BASE, Access::Write, Some(10)).unwrap();
    user_access(&mut parent, BASE + PAGE_SIZE, Access::Write, Some(20)).unwrap();
    parent.activate_on(3);
    let (mut child, flush) = parent.fork(world.frames.clone()).unwrap();
    assert!(flush.everything && flush.cpus.contains(3) && !flush.cpus.contains(0));
    // Until the kernel carries the fork's flush out, the parent copies nothing.
    assert!(parent.flush_owed());
    assert_eq!(parent.handle_fault(BASE, Access::Write), Err(Fault::Busy));
    drop(flush);
    assert!(!parent.flush_owed());
    let shared = parent.translate(BASE).unwrap().frame;
    assert_eq!(child.translate(BASE).unwrap().frame, shared);
    assert_eq!(world.owners.owners(shared), 2);

    user_access(&mut child, BASE, Access::Write, Some(11)).unwrap();
    user_access(&mut parent, BASE + PAGE_SIZE, Access::Write, Some(21)).unwrap();
    assert_eq!(user_access(&mut parent, BASE, Access::Read, None), Ok(10));
    assert_eq!(user_access(&mut child, BASE, Access::Read, None), Ok(11));
    assert_eq!(user_access(&mut parent, BASE + PAGE_SIZE, Access::Read, None), Ok(21));
    assert_eq!(user_access(&mut child, BASE + PAGE_SIZE, Access::Read, None), Ok(20));
    // The parent is the sole owner of the first frame now: it takes it over.
    assert_eq!(world.owners.owners(shared), 1);
    assert_eq!(parent.handle_fault(BASE, Access::Write), Ok(FaultOutcome::TookOver));
    assert_eq!(parent.translate(BASE).unwrap().frame, shared);
    let _ = child.destroy();
    let _ = parent.destroy();
    assert!(world.all_free());
}

#[test]
fn a_shared_page_is_freed_exactly_when_its_last_owner_goes() {
    let world = World::new();
    let frame = world.shared_frame_holding(42);
    let mut first = world.space();
    let mut second = world.space();
    let mut third = world.space();
    for space in [&mut first, &mut second, &mut third] {
        space.map_shared(BASE, &frame, Rights::READ_WRITE).unwrap();
    }
    assert_eq!(world.owners.owners(frame), 3);
    user_access(&mut second, BASE, Access::Write, Some(43)).unwrap();
    assert_eq!(user_access(&mut first, BASE, Access::Read, None), Ok(43), "shared memory is shared");
    let out = world.frames.out();
    let _ = first.unmap(BASE, PAGE_SIZE).unwrap();
    let _ = second.destroy();
    assert_eq!(world.owners.owners(frame), 1);
    assert_eq!(world.frames.out(), out - 4, "only second's root and three tables went; the page stays");
    assert_eq!(user_access(&mut third, BASE, Access::Read, None), Ok(43));
    let flush = third.unmap(BASE, PAGE_SIZE).unwrap();
    assert_eq!((flush.start, flush.pages), (BASE, 1));
    assert_eq!(world.owners.owners(frame), 0);
    let _ = first.destroy();
    let _ = third.destroy();
    assert!(world.all_free());
}

#[test]
fn a_private_mapping_of_a_shared_frame_copies_on_write_and_never_writes_through() {
    let world = World::new();
    let frame = world.shared_frame_holding(42);
    let mut first = world.space();
    let mut second = world.space();
    first.map_private(BASE, &frame, Rights::READ).unwrap();
    second.map_private(BASE, &frame, Rights::READ).unwrap();
    assert_eq!(world.owners.owners(frame), 2);
    assert_eq!(user_access(&mut first, BASE, Access::Write, Some(7)), Err(Fault::Segmentation), "mapped without write");
    let _ = first.protect(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    assert_eq!(user_access(&mut first, BASE, Access::Write, Some(7)), Ok(7));
    assert_ne!(first.translate(BASE).unwrap().frame, frame, "the write went to a copy");
    assert_eq!(user_access(&mut second, BASE, Access::Read, None), Ok(42), "the shared frame is unchanged");
    assert_eq!(world.owners.owners(frame), 1);
    let mut third = world.space();
    third.map_private(BASE, &frame, Rights::READ_WRITE).unwrap();
    assert_eq!(user_access(&mut third, BASE, Access::Write, Some(9)), Ok(9), "writable from the start: copied on write");
    assert_ne!(third.translate(BASE).unwrap().frame, frame);
    assert_eq!(user_access(&mut second, BASE, Access::Read, None), Ok(42));
    let _ = first.destroy();
    let _ = second.destroy();
    let _ = third.destroy();
    assert!(world.all_free());
}

#[test]
fn an_anonymous_shared_page_stays_shared_across_fork_and_private_pages_do_not() {
    let world = World::new();
    let mut parent = world.space();
    parent.map_shared_fresh(BASE, world.frame_holding(1), Rights::READ_WRITE).unwrap();
    parent.map(BASE + PAGE_SIZE, world.frame_holding(2), Rights::READ_WRITE).unwrap();
    let (mut child, _) = parent.fork(world.frames.clone()).unwrap();
    user_access(&mut child, BASE, Access::Write, Some(10)).unwrap();
    user_access(&mut child, BASE + PAGE_SIZE, Access::Write, Some(20)).unwrap();
    assert_eq!(user_access(&mut parent, BASE, Access::Read, None), Ok(10), "the child's write to the shared page shows");
    assert_eq!(user_access(&mut parent, BASE + PAGE_SIZE, Access::Read, None), Ok(2), "the private page was copied");
    let _ = child.destroy();
    assert_eq!(user_access(&mut parent, BASE, Access::Read, None), Ok(10));
    let _ = parent.destroy();
    assert!(world.all_free());
}

#[test]
fn mapped_and_resident_tell_regions_from_frames() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, 2 * PAGE_SIZE, Rights::READ_WRITE).unwrap();
    assert!(space.is_mapped(BASE) && !space.is_resident(BASE), "an untouched demand-zero page");
    user_access(&mut space, BASE, Access::Write, Some(5)).unwrap();
    assert!(space.is_mapped(BASE) && space.is_resident(BASE));
    assert!(!space.is_mapped(BASE + 2 * PAGE_SIZE) && !space.is_resident(BASE + 2 * PAGE_SIZE));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn fork_running_out_of_memory_at_any_point_changes_nothing() {
    for allowed in 0..8 {
        let world = World::new();
        let mut parent = world.space();
        parent.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
        parent.add_demand_zero(0x7000_0000_0000, PAGE_SIZE, Rights::READ_WRITE).unwrap();
        user_access(&mut parent, BASE, Access::Write, Some(5)).unwrap();
        user_access(&mut parent, 0x7000_0000_0000, Access::Write, Some(6)).unwrap();
        let out_before = world.frames.out();
        let entry_before = parent.translate(BASE);
        world.frames.fail_after(allowed);
        match parent.fork(world.frames.clone()) {
            Ok((child, _)) => {
                assert!(allowed >= 7, "fork needs 7 table frames yet succeeded with {allowed}");
                world.frames.fail_after(u64::MAX);
                let _ = child.destroy();
            }
            Err(error) => {
                assert_eq!(error, VmError::OutOfMemory);
                assert_eq!(world.frames.out(), out_before, "frames leaked by a failed fork ({allowed})");
                assert_eq!(parent.translate(BASE), entry_before, "a failed fork changed the parent");
                assert_eq!(world.owners.owners(entry_before.unwrap().frame), 1);
            }
        }
        world.frames.fail_after(u64::MAX);
        assert_eq!(user_access(&mut parent, BASE, Access::Read, None), Ok(5));
        let _ = parent.destroy();
        assert!(world.all_free());
    }
}

#[test]
fn protect_to_none_keeps_the_contents_and_flushes_only_lost_rights() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, 2 * PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut space, BASE, Access::Write, Some(9)).unwrap();
    space.activate_on(1);
    let flush = space.protect(BASE, 2 * PAGE_SIZE, Rights::NONE).unwrap();
    assert_eq!((flush.start, flush.pages), (BASE, 1), "only the mapped page is flushed");
    assert!(flush.cpus.contains(1));
    assert_eq!(user_access(&mut space, BASE, Access::Read, None), Err(Fault::Segmentation));
    assert_eq!(user_access(&mut space, BASE + PAGE_SIZE, Access::Read, None), Err(Fault::Segmentation));
    let flush = space.protect(BASE, PAGE_SIZE, Rights::READ).unwrap();
    assert!(flush.is_empty(), "giving rights needs no flush");
    assert_eq!(user_access(&mut space, BASE, Access::Read, None), Ok(9));
    assert_eq!(space.protect(BASE, PAGE_SIZE, Rights::NONE).map(|flush| flush.pages), Ok(1));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn a_fault_that_needs_a_frame_fails_cleanly_when_none_is_left() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    world.frames.fail_after(0);
    assert_eq!(space.handle_fault(BASE, Access::Write), Err(Fault::OutOfMemory));
    world.frames.fail_after(u64::MAX);
    assert_eq!(user_access(&mut space, BASE, Access::Write, Some(1)), Ok(1));
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn the_table_walk_visits_every_page_once_in_address_order_and_destroy_frees_every_table() {
    let world = World::new();
    let mut space = world.space();
    // Pages under different root, upper, middle and leaf entries.
    let addresses = [BASE, BASE + PAGE_SIZE, 0x4000_0000, 0x80_0000_0000, USER_END - PAGE_SIZE];
    for (order, address) in addresses.iter().enumerate() {
        space.map(*address, world.frame_holding(order as u64), Rights::READ).unwrap();
    }
    let mut seen = std::vec::Vec::new();
    space.for_each_leaf(|address, _, _, _| {
        seen.push(address);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, addresses);
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn a_copy_seen_by_other_cpus_is_read_only_until_its_flush_is_carried_out() {
    let world = World::new();
    let mut parent = world.space();
    parent.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut parent, BASE, Access::Write, Some(5)).unwrap();
    parent.activate_on(0);
    parent.activate_on(1);
    let (mut child, flush) = parent.fork(world.frames.clone()).unwrap();
    drop(flush);
    let old = parent.translate(BASE).unwrap().frame;
    let Ok(FaultOutcome::Copied { flush }) = parent.handle_fault_on(BASE, Access::Write, Some(0)) else { panic!("not copied") };
    let copy = parent.translate(BASE).unwrap();
    assert_ne!(copy.frame, old);
    assert!(copy.copy_on_write, "CPU 1 may still read the old frame: the copy must not be writable yet");
    assert_eq!(world.memory.read_word(copy.frame, 0), 5);
    // The old frame stays owned by the parent (in limbo) until the flush is
    // carried out: the child must copy too, not take it over.
    assert_eq!(world.owners.owners(old), 2);
    assert_eq!(parent.handle_fault_on(BASE, Access::Write, Some(1)), Err(Fault::Busy));
    drop(flush);
    assert_eq!(parent.handle_fault_on(BASE, Access::Write, Some(1)), Ok(FaultOutcome::TookOver));
    assert_eq!(world.owners.owners(old), 1, "settled: the parent let go of the old frame");
    assert_eq!(user_access(&mut child, BASE, Access::Write, Some(6)), Ok(6));
    assert_eq!(child.translate(BASE).unwrap().frame, old, "the child took its sole frame over");
    assert_eq!(user_access(&mut parent, BASE, Access::Read, None), Ok(5));
    let _ = child.destroy();
    let _ = parent.destroy();
    assert!(world.all_free());
}

#[test]
fn a_copy_on_the_only_cpu_that_ran_the_space_is_writable_at_once() {
    let world = World::new();
    let mut parent = world.space();
    parent.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut parent, BASE, Access::Write, Some(5)).unwrap();
    parent.activate_on(2);
    let (child, flush) = parent.fork(world.frames.clone()).unwrap();
    drop(flush);
    let Ok(FaultOutcome::Copied { flush }) = parent.handle_fault_on(BASE, Access::Write, Some(2)) else { panic!("not copied") };
    assert!(!parent.translate(BASE).unwrap().copy_on_write);
    drop(flush);
    let _ = child.destroy();
    let _ = parent.destroy();
    assert!(world.all_free());
}

#[test]
fn unmapped_frames_are_freed_only_after_the_flush_is_carried_out() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, 2 * PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut space, BASE, Access::Write, Some(9)).unwrap();
    space.activate_on(1);
    let frame = space.translate(BASE).unwrap().frame;
    let flush = space.unmap(BASE, 2 * PAGE_SIZE).unwrap();
    assert_eq!((flush.start, flush.pages), (BASE, 1));
    assert_eq!(world.owners.owners(frame), 1, "another CPU may still write it: not freed yet");
    space.settle();
    assert_eq!(world.owners.owners(frame), 1, "settling waits for the flush");
    drop(flush);
    space.settle();
    assert_eq!(world.owners.owners(frame), 0);
    let _ = space.destroy();
    assert!(world.all_free());
}

#[test]
fn a_space_destroyed_with_frames_in_limbo_frees_them() {
    let world = World::new();
    let mut space = world.space();
    space.add_demand_zero(BASE, PAGE_SIZE, Rights::READ_WRITE).unwrap();
    user_access(&mut space, BASE, Access::Write, Some(9)).unwrap();
    space.activate_on(1);
    let flush = space.unmap(BASE, PAGE_SIZE).unwrap();
    let _ = space.destroy();
    drop(flush);
    assert!(world.all_free());
}
