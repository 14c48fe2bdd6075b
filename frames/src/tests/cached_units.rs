//! Unit tests of the cached allocator: errors, draining, and conservation.

use alloc::vec::Vec;

use super::support::{allocator, ThreadSlot, FIRST_FRAME};
use crate::{FrameError, FrameNumber, BATCH, CACHE_CAPACITY};

#[test]
fn a_double_free_of_a_cached_frame_is_refused() {
    ThreadSlot::set(0);
    let frames = allocator(100, 2);
    let frame = frames.allocate().expect("a free frame");
    assert_eq!(frames.free(frame), Ok(()));
    // The frame sits in CPU 0's cache now, not in the bitmap.
    assert_eq!(frames.free(frame), Err(FrameError::NotAllocated));
    ThreadSlot::set(1);
    assert_eq!(frames.free(frame), Err(FrameError::NotAllocated));
    assert_eq!(frames.free_count(), 100);
}

#[test]
fn frames_outside_the_allocator_are_refused() {
    let frames = allocator(64, 1);
    assert_eq!(frames.free(FrameNumber(FIRST_FRAME - 1)), Err(FrameError::OutOfRange));
    assert_eq!(frames.free(FrameNumber(FIRST_FRAME + 64)), Err(FrameError::OutOfRange));
    assert_eq!(frames.free(FrameNumber(u64::MAX)), Err(FrameError::OutOfRange));
}

#[test]
fn the_last_frames_are_found_in_other_cpus_caches() {
    let frames = allocator(CACHE_CAPACITY as u64, 2);
    ThreadSlot::set(0);
    let taken: Vec<FrameNumber> = (0..CACHE_CAPACITY).map(|_| frames.allocate().expect("free frames left")).collect();
    assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
    // Freed on CPU 1: they wait in its cache.
    ThreadSlot::set(1);
    taken.iter().for_each(|frame| frames.free(*frame).expect("out"));
    ThreadSlot::set(0);
    let again: Vec<FrameNumber> = (0..CACHE_CAPACITY).map(|_| frames.allocate().expect("drained from CPU 1")).collect();
    assert_eq!(again.len(), CACHE_CAPACITY);
    assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
}

#[test]
fn every_frame_comes_back() {
    let frames = allocator(1000, 4);
    let mut out = Vec::new();
    for round in 0..5 {
        for cpu in 0..4 {
            ThreadSlot::set(cpu);
            out.extend((0..(BATCH * 3 + round)).filter_map(|_| frames.allocate().ok()));
        }
        for (index, frame) in out.drain(..).enumerate() {
            ThreadSlot::set(index % 4);
            frames.free(frame).expect("every frame out is freed once");
        }
        assert_eq!(frames.free_count(), 1000);
        assert_eq!(frames.handed_out_count(), 0);
    }
    frames.drain_caches();
    assert_eq!(frames.free_count(), 1000);
}
