//! Loom models of the cached allocator: the real code, every interleaving
//! of two CPUs (bounded for three).

use loom::sync::Arc;
use loom::thread;

use super::support::{allocator, ThreadSlot};
use crate::FrameError;

fn model(preemptions: Option<usize>, body: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    builder.check(body);
}

/// Two CPUs allocate the last two frames at once: each gets one, never the
/// same one, and a third allocation fails.
#[test]
fn two_cpus_never_get_the_same_frame() {
    model(None, || {
        let frames = Arc::new(allocator(2, 2));
        let other = frames.clone();
        let second = thread::spawn(move || {
            ThreadSlot::set(1);
            other.allocate()
        });
        ThreadSlot::set(0);
        let first = frames.allocate();
        let second = second.join().unwrap();
        match (first, second) {
            (Ok(a), Ok(b)) => assert_ne!(a, b, "one frame handed out twice"),
            outcome => panic!("two free frames, two allocations, saw {outcome:?}"),
        }
        assert_eq!(frames.allocate(), Err(FrameError::OutOfMemory));
    });
}

/// Two CPUs free the same frame at once: exactly one free succeeds.
#[test]
fn a_racing_double_free_is_caught_once() {
    model(None, || {
        let frames = Arc::new(allocator(1, 2));
        ThreadSlot::set(0);
        let frame = frames.allocate().unwrap();
        let other = frames.clone();
        let racer = thread::spawn(move || {
            ThreadSlot::set(1);
            other.free(frame)
        });
        let mine = frames.free(frame);
        let theirs = racer.join().unwrap();
        assert!(mine.is_ok() != theirs.is_ok(), "frees: {mine:?} and {theirs:?}");
        assert_eq!(frames.free_count(), 1);
    });
}

/// One CPU frees a frame while the other, finding the bitmap empty, drains
/// the caches: the allocation either finds the frame or fails only if the
/// free had not happened; the frame is never lost.
#[test]
fn draining_races_a_free_without_losing_the_frame() {
    model(Some(2), || {
        let frames = Arc::new(allocator(1, 2));
        ThreadSlot::set(0);
        let frame = frames.allocate().unwrap();
        let other = frames.clone();
        let freer = thread::spawn(move || {
            ThreadSlot::set(1);
            other.free(frame).unwrap();
        });
        let got = frames.allocate();
        freer.join().unwrap();
        match got {
            Ok(again) => {
                assert_eq!(again, frame);
                assert_eq!(frames.free_count(), 0);
            }
            Err(error) => {
                assert_eq!(error, FrameError::OutOfMemory);
                assert_eq!(frames.free_count(), 1);
            }
        }
    });
}
