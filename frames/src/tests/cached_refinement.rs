//! Refinement: random operation sequences, switching between CPU slots,
//! applied to the cached allocator and to the spec (a set of free frames);
//! every result and the free count must agree after every step.

use alloc::vec::Vec;

use super::support::{allocator, Rng, ThreadSlot, FIRST_FRAME};
use crate::spec::AbstractFrameAllocator;
use crate::{FrameError, FrameNumber, FrameRange};

const CPUS: usize = 3;

fn run(seed: u64, frames: u64, steps: usize) {
    let cached = allocator(frames, CPUS);
    let mut spec = AbstractFrameAllocator::new(frames.div_ceil(64) as usize, FrameNumber(FIRST_FRAME));
    spec.add_free(FrameRange { start: FrameNumber(FIRST_FRAME), end: FrameNumber(FIRST_FRAME + frames) })
        .expect("fresh spec");
    let mut rng = Rng::new(seed);
    let mut held: Vec<FrameNumber> = Vec::new();
    for step in 0..steps {
        ThreadSlot::set(rng.below(CPUS + 1));
        match rng.below(10) {
            0..=4 => match cached.allocate() {
                // The spec must have had this very frame free.
                Ok(frame) => {
                    assert_eq!(spec.allocate(Some(frame)), Ok(frame), "seed {seed} step {step}: handed out {frame:?}");
                    held.push(frame);
                }
                Err(error) => assert_eq!(spec.allocate(None), Err(error), "seed {seed} step {step}"),
            },
            5..=7 if !held.is_empty() => {
                let frame = held.swap_remove(rng.below(held.len()));
                assert_eq!(cached.free(frame), spec.free(frame), "seed {seed} step {step}: free {frame:?}");
            }
            // A frame that may be free, cached, out, or not covered at all.
            _ => {
                let frame = FrameNumber(FIRST_FRAME - 2 + rng.below((frames.div_ceil(64) * 64 + 4) as usize) as u64);
                // Stricter than the bitmap (and its spec), which take back
                // covered frames they never had: only a frame handed out
                // can come back.
                let never_added = (FIRST_FRAME + frames..FIRST_FRAME + frames.div_ceil(64) * 64).contains(&frame.0);
                let expected = if never_added { Err(FrameError::NotAllocated) } else { spec.free(frame) };
                if expected.is_ok() {
                    held.retain(|out| *out != frame);
                }
                assert_eq!(cached.free(frame), expected, "seed {seed} step {step}: stray free {frame:?}");
            }
        }
        assert_eq!(cached.free_count(), spec.free_count(), "seed {seed} step {step}: free count");
    }
}

#[test]
fn cached_allocator_refines_the_set_of_free_frames() {
    for seed in 0..40 {
        run(seed, 10 + seed * 7, 3_000);
    }
}

#[test]
fn cached_allocator_refines_the_spec_across_cache_boundaries() {
    // More frames than every cache together, so batches go both ways.
    for seed in 100..110 {
        run(seed, 500, 20_000);
    }
}
