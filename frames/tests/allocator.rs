//! Behaviour of `BitmapFrameAllocator` through its public interface.

use std::collections::BTreeSet;

use frames::{
    BitmapFrameAllocator, FrameError, FrameNumber, FrameRange, PhysicalAddress, FRAME_SIZE,
};

fn range(start: u64, end: u64) -> FrameRange {
    FrameRange::new(FrameNumber(start), FrameNumber(end))
}

/// Allocates until the allocator says `OutOfMemory`; fails on any other error.
fn allocate_all(frames: &mut BitmapFrameAllocator<'_>) -> Vec<FrameNumber> {
    let mut taken = Vec::new();
    loop {
        match frames.allocate() {
            Ok(frame) => taken.push(frame),
            Err(FrameError::OutOfMemory) => return taken,
            Err(other) => panic!("expected a frame or OutOfMemory, saw {other:?}"),
        }
    }
}

#[test]
fn a_new_allocator_has_every_frame_in_use() {
    let mut storage = [0u64; 3];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    assert_eq!(frames.total_count(), 192);
    assert_eq!(frames.free_count(), 0);
    assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
    assert_eq!(
        frames.allocate_contiguous(1, 1),
        Err(FrameError::OutOfMemory)
    );
    assert!(
        storage.iter().all(|&word| word == u64::MAX),
        "storage {storage:x?}"
    );
}

#[test]
fn previous_storage_contents_do_not_leak_into_the_allocator() {
    let mut storage = [0x5555_5555_5555_5555u64; 2];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    assert_eq!(frames.free_count(), 0);
    assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
}

#[test]
fn never_hands_out_a_frame_twice() {
    let mut storage = [0u64; 5];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(7));
    frames.add_free(range(7, 100)).unwrap();
    frames.add_free(range(130, 300)).unwrap();
    let free_before = frames.free_count();
    let mut taken = allocate_all(&mut frames);
    let run = frames.allocate_contiguous(1, 1);
    assert_eq!(run, Err(FrameError::OutOfMemory));
    let distinct: BTreeSet<_> = taken.iter().copied().collect();
    assert_eq!(distinct.len(), taken.len(), "some frame came out twice");
    assert_eq!(taken.len() as u64, free_before);
    taken.sort();
    let expected: Vec<_> = range(7, 100)
        .frames()
        .chain(range(130, 300).frames())
        .collect();
    assert_eq!(
        taken, expected,
        "the frames handed out are exactly the ones added"
    );
}

#[test]
fn every_frame_comes_back_after_freeing_everything() {
    let mut storage = [0u64; 4];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(3, 250)).unwrap();
    let free_before = frames.free_count();
    let run = frames.allocate_contiguous(40, 16).unwrap();
    let singles = allocate_all(&mut frames);
    assert_eq!(frames.free_count(), 0);
    frames.free_contiguous(run, 40).unwrap();
    for frame in singles {
        frames.free(frame).unwrap();
    }
    assert_eq!(frames.free_count(), free_before);
    assert_eq!(
        allocate_all(&mut frames).len() as u64,
        free_before,
        "all of them can be allocated again"
    );
}

#[test]
fn a_double_free_is_refused_and_changes_nothing() {
    let mut storage = [0u64; 1];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(0, 64)).unwrap();
    let frame = frames.allocate().unwrap();
    frames.free(frame).unwrap();
    let free_before = frames.free_count();
    assert_eq!(frames.free(frame), Err(FrameError::NotAllocated));
    assert_eq!(frames.free_count(), free_before);
    assert_eq!(
        allocate_all(&mut frames).len(),
        64,
        "the refused free did not create a frame"
    );
}

#[test]
fn freeing_outside_the_covered_frames_is_out_of_range() {
    let mut storage = [0u64; 1];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(100));
    frames.add_free(range(100, 164)).unwrap();
    for frame in [0, 99, 164, u64::MAX] {
        assert_eq!(
            frames.free(FrameNumber(frame)),
            Err(FrameError::OutOfRange),
            "freeing frame {frame}"
        );
    }
    assert_eq!(
        frames.free_contiguous(FrameNumber(160), 5),
        Err(FrameError::OutOfRange)
    );
    assert_eq!(
        frames.free_contiguous(FrameNumber(u64::MAX - 1), 3),
        Err(FrameError::OutOfRange)
    );
    assert_eq!(frames.free_count(), 64);
}

#[test]
fn free_contiguous_checks_the_whole_run_before_changing_anything() {
    let mut storage = [0u64; 2];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(0, 128)).unwrap();
    let start = frames.allocate_contiguous(100, 1).unwrap();
    frames.free(FrameNumber(start.0 + 70)).unwrap();
    let free_before = frames.free_count();
    assert_eq!(
        frames.free_contiguous(start, 100),
        Err(FrameError::NotAllocated)
    );
    assert_eq!(frames.free_count(), free_before);
    assert!(
        !frames.is_free(start),
        "the first frame of the refused run is still in use"
    );
    assert_eq!(frames.free_contiguous(start, 0), Err(FrameError::ZeroCount));
    frames.free_contiguous(start, 70).unwrap();
    frames
        .free_contiguous(FrameNumber(start.0 + 71), 29)
        .unwrap();
    assert_eq!(frames.free_count(), 128);
}

#[test]
fn contiguous_runs_are_aligned_in_physical_frame_numbers() {
    let mut storage = [0u64; 8];
    let first_frame = FrameNumber(1000 + 5);
    let mut frames = BitmapFrameAllocator::new(&mut storage, first_frame);
    frames.add_free(range(0, 2000)).unwrap();
    frames.allocate().unwrap();
    for align in [1, 2, 8, 64, 128] {
        let start = frames.allocate_contiguous(3, align).unwrap();
        assert_eq!(
            start.0 % align,
            0,
            "run at {start} is not aligned to {align} frames"
        );
        let address = start.start_address();
        assert_eq!(
            address.0 % (align * FRAME_SIZE),
            0,
            "address {address} for alignment {align}"
        );
        assert!((0..3).all(|offset| !frames.is_free(FrameNumber(start.0 + offset))));
    }
}

#[test]
fn contiguous_allocation_skips_runs_that_are_too_short() {
    let mut storage = [0u64; 4];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(0, 10)).unwrap();
    frames.add_free(range(20, 50)).unwrap();
    frames.add_free(range(60, 200)).unwrap();
    assert_eq!(frames.allocate_contiguous(25, 1), Ok(FrameNumber(20)));
    assert_eq!(
        frames.allocate_contiguous(100, 1),
        Ok(FrameNumber(60)),
        "a run across word boundaries"
    );
    assert_eq!(
        frames.allocate_contiguous(41, 1),
        Err(FrameError::OutOfMemory)
    );
    assert_eq!(frames.allocate_contiguous(40, 1), Ok(FrameNumber(160)));
}

#[test]
fn contiguous_allocation_fails_when_memory_is_fragmented() {
    let mut storage = [0u64; 2];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    for start in (0..128).step_by(2) {
        frames.add_free(range(start, start + 1)).unwrap();
    }
    assert_eq!(frames.free_count(), 64);
    assert_eq!(
        frames.allocate_contiguous(2, 1),
        Err(FrameError::OutOfMemory)
    );
    assert_eq!(frames.allocate_contiguous(1, 2), Ok(FrameNumber(0)));
    assert_eq!(frames.allocate_contiguous(1, 4), Ok(FrameNumber(4)));
    assert_eq!(frames.free_count(), 62);
}

#[test]
fn contiguous_allocation_refuses_zero_counts_and_bad_alignments() {
    let mut storage = [0u64; 1];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(0, 64)).unwrap();
    assert_eq!(frames.allocate_contiguous(0, 1), Err(FrameError::ZeroCount));
    assert_eq!(
        frames.allocate_contiguous(0, 3),
        Err(FrameError::ZeroCount),
        "count is checked first"
    );
    for align in [0, 3, 6, 48, u64::MAX] {
        assert_eq!(
            frames.allocate_contiguous(1, align),
            Err(FrameError::InvalidAlignment),
            "align {align}"
        );
    }
    assert_eq!(
        frames.allocate_contiguous(65, 1),
        Err(FrameError::OutOfMemory)
    );
    assert_eq!(
        frames.allocate_contiguous(u64::MAX, 1),
        Err(FrameError::OutOfMemory)
    );
    assert_eq!(
        frames.allocate_contiguous(1, 1 << 63),
        Ok(FrameNumber(0)),
        "frame 0 has every alignment"
    );
    assert_eq!(
        frames.allocate_contiguous(1, 1 << 63),
        Err(FrameError::OutOfMemory)
    );
    assert_eq!(frames.free_count(), 63);
}

#[test]
fn add_free_clips_ranges_to_the_covered_frames() {
    let mut storage = [0u64; 2];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(64));
    assert_eq!(frames.covered_range(), range(64, 192));
    assert_eq!(frames.add_free(range(0, 70)), Ok(6));
    assert_eq!(frames.add_free(range(180, 1000)), Ok(12));
    assert_eq!(frames.add_free(range(500, 600)), Ok(0), "wholly outside");
    assert_eq!(
        frames.add_free(range(0, u64::MAX)),
        Err(FrameError::AlreadyFree)
    );
    assert_eq!(frames.free_count(), 18);
    let taken = allocate_all(&mut frames);
    let expected: Vec<_> = range(64, 70)
        .frames()
        .chain(range(180, 192).frames())
        .collect();
    assert_eq!(taken, expected);
}

#[test]
fn add_free_overlapping_a_free_frame_is_refused_and_changes_nothing() {
    let mut storage = [0u64; 2];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    frames.add_free(range(50, 60)).unwrap();
    assert_eq!(frames.add_free(range(40, 51)), Err(FrameError::AlreadyFree));
    assert_eq!(frames.add_free(range(59, 80)), Err(FrameError::AlreadyFree));
    assert_eq!(frames.free_count(), 10);
    assert!(!frames.is_free(FrameNumber(40)) && !frames.is_free(FrameNumber(79)));
    assert_eq!(
        frames.add_free(range(40, 50)),
        Ok(10),
        "adjacent ranges are fine"
    );
}

#[test]
fn add_free_of_an_empty_or_reversed_range_adds_nothing() {
    let mut storage = [0u64; 1];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    assert_eq!(frames.add_free(range(5, 5)), Ok(0));
    assert_eq!(frames.add_free(range(30, 10)), Ok(0));
    assert_eq!(frames.free_count(), 0);
}

#[test]
fn memory_that_ends_inside_a_bitmap_word_is_handled_exactly() {
    // 150 usable frames in a 3-word (192-frame) bitmap: the last word is
    // partly memory and partly a hole, and the memory map's end address is
    // not frame aligned.
    let mut storage = [0u64; 3];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0));
    let usable =
        FrameRange::within_addresses(PhysicalAddress(0), PhysicalAddress(150 * FRAME_SIZE + 100));
    assert_eq!(frames.add_free(usable), Ok(150));
    let taken = allocate_all(&mut frames);
    assert_eq!(taken, range(0, 150).frames().collect::<Vec<_>>());
    assert_eq!(frames.free(FrameNumber(149)), Ok(()));
    assert_eq!(
        frames.allocate_contiguous(2, 1),
        Err(FrameError::OutOfMemory),
        "frame 150 was never memory"
    );
}

#[test]
fn a_first_frame_that_is_not_word_aligned_offsets_every_frame() {
    let mut storage = [0u64; 2];
    let first_frame = FrameNumber(1000);
    let mut frames = BitmapFrameAllocator::new(&mut storage, first_frame);
    assert_eq!(frames.covered_range(), range(1000, 1128));
    frames.add_free(range(0, 5000)).unwrap();
    let taken = allocate_all(&mut frames);
    assert_eq!(taken, range(1000, 1128).frames().collect::<Vec<_>>());
    assert_eq!(frames.free(FrameNumber(999)), Err(FrameError::OutOfRange));
    assert_eq!(frames.free(FrameNumber(1127)), Ok(()));
}

#[test]
fn coverage_stops_at_the_highest_addressable_frame() {
    let mut storage = [0u64; 2];
    let first_frame = FrameNumber(FrameNumber::MAX.0 - 99);
    let mut frames = BitmapFrameAllocator::new(&mut storage, first_frame);
    assert_eq!(frames.total_count(), 100);
    assert_eq!(
        frames.add_free(FrameRange::new(FrameNumber(0), FrameNumber(u64::MAX))),
        Ok(100)
    );
    let taken = allocate_all(&mut frames);
    assert_eq!(taken.last(), Some(&FrameNumber::MAX));
    assert!(taken
        .iter()
        .all(|frame| frame.checked_start_address().is_some()));
    assert_eq!(
        frames.free(FrameNumber(FrameNumber::MAX.0 + 1)),
        Err(FrameError::OutOfRange)
    );
}

#[test]
fn an_empty_bitmap_covers_nothing() {
    let mut storage: [u64; 0] = [];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(42));
    assert_eq!(frames.total_count(), 0);
    assert_eq!(frames.add_free(range(0, 100)), Ok(0));
    assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
    assert_eq!(frames.free(FrameNumber(42)), Err(FrameError::OutOfRange));
}

#[test]
fn a_large_bitmap_hands_out_every_frame_in_ascending_order() {
    // 1 GiB of frames: with the search hint this is linear, not quadratic.
    let mut storage = vec![0u64; 4096];
    let mut frames = BitmapFrameAllocator::new(&mut storage, FrameNumber(0x100));
    frames.add_free(range(0, u64::MAX)).unwrap();
    let taken = allocate_all(&mut frames);
    assert_eq!(taken.len(), 4096 * 64);
    assert!(
        taken.windows(2).all(|pair| pair[0] < pair[1]),
        "not ascending"
    );
}

#[test]
fn every_error_has_a_message() {
    let errors = [
        FrameError::OutOfMemory,
        FrameError::OutOfRange,
        FrameError::NotAllocated,
        FrameError::AlreadyFree,
        FrameError::ZeroCount,
        FrameError::InvalidAlignment,
    ];
    let messages: BTreeSet<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages.len(),
        errors.len(),
        "messages must differ: {messages:?}"
    );
    assert!(messages.iter().all(|message| !message.is_empty()));
}
