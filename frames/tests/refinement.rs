//! Refinement tests: long random operation sequences applied to the bitmap
//! allocator and to the abstract spec side by side.
//!
//! For the nondeterministic allocations the implementation's answer is passed
//! to the spec as its `choice` (see `frames::spec`): the results must be equal,
//! which holds exactly when the implementation handed out frames the spec
//! holds free and failed exactly when the spec has nothing that fits. Every
//! deterministic operation must return the same result, and the free and
//! total counts and the free sets must stay equal.

use frames::spec::AbstractFrameAllocator;
use frames::{BitmapFrameAllocator, FrameError, FrameNumber, FrameRange};

/// xorshift64*: small, deterministic, good enough to pick operations.
struct Random(u64);

impl Random {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..bound` (`bound > 0`).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.below(100) < chance
    }
}

#[derive(Clone, Copy, Debug)]
enum Operation {
    AddFree(FrameRange),
    Allocate,
    AllocateContiguous { count: u64, align_frames: u64 },
    Free(FrameNumber),
    FreeContiguous { start: FrameNumber, count: u64 },
}

/// Which way the operation mix pushes memory use.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Filling,
    Draining,
}

/// The implementation and the spec, stepped together.
struct Pair<'a> {
    implementation: BitmapFrameAllocator<'a>,
    spec: AbstractFrameAllocator,
    /// Runs handed out and not yet given back: the likely arguments of frees.
    handed_out: Vec<(FrameNumber, u64)>,
    random: Random,
}

impl Pair<'_> {
    /// A frame in or a little around the covered range.
    fn frame_near_covered(&mut self) -> FrameNumber {
        let covered = self.spec.covered_range();
        let low = covered.start.0.saturating_sub(8);
        let span = covered.len().saturating_add(16);
        FrameNumber(low.saturating_add(self.random.below(span)))
    }

    /// A random operation; `phase` tilts the mix towards allocations or frees
    /// so that memory swings between nearly full and nearly empty.
    fn choose_operation(&mut self, phase: Phase) -> Operation {
        let roll = self.random.below(100);
        let allocation_share = match phase {
            Phase::Filling => 65,
            Phase::Draining => 25,
        };
        if roll < 5 {
            self.choose_add_free()
        } else if roll < 5 + allocation_share {
            if self.random.percent(60) {
                Operation::Allocate
            } else {
                self.choose_allocate_contiguous()
            }
        } else if self.random.percent(55) {
            self.choose_free()
        } else {
            self.choose_free_contiguous()
        }
    }

    fn choose_add_free(&mut self) -> Operation {
        let start = self.frame_near_covered();
        let end = if self.random.percent(3) {
            FrameNumber(u64::MAX)
        } else if self.random.percent(5) {
            FrameNumber(start.0.saturating_sub(3))
        } else {
            FrameNumber(start.0.saturating_add(self.random.below(150)))
        };
        Operation::AddFree(FrameRange::new(start, end))
    }

    fn choose_allocate_contiguous(&mut self) -> Operation {
        let count = match self.random.below(100) {
            0..=2 => 0,
            3..=72 => 1 + self.random.below(8),
            _ => 1 + self.random.below(80),
        };
        let align_frames = match self.random.below(40) {
            0 => 0,
            1 => 3,
            2 => 1 << 63,
            3..=9 => 1 << self.random.below(8),
            _ => 1 << self.random.below(4),
        };
        Operation::AllocateContiguous {
            count,
            align_frames,
        }
    }

    fn choose_free(&mut self) -> Operation {
        if self.handed_out.is_empty() || self.random.percent(20) {
            return Operation::Free(self.frame_near_covered());
        }
        let index = self.random.below(self.handed_out.len() as u64) as usize;
        let (start, count) = self.handed_out[index];
        if count == 1 {
            self.handed_out.swap_remove(index);
        } else {
            self.handed_out[index] = (FrameNumber(start.0 + 1), count - 1);
        }
        Operation::Free(start)
    }

    fn choose_free_contiguous(&mut self) -> Operation {
        if self.handed_out.is_empty() || self.random.percent(20) {
            let start = self.frame_near_covered();
            return Operation::FreeContiguous {
                start,
                count: self.random.below(100),
            };
        }
        let index = self.random.below(self.handed_out.len() as u64) as usize;
        let (start, count) = self.handed_out.swap_remove(index);
        Operation::FreeContiguous { start, count }
    }

    /// Applies `operation` to both sides; panics with `context` on a divergence.
    fn step(&mut self, operation: Operation, context: &str) {
        match operation {
            Operation::AddFree(range) => {
                let observed = self.implementation.add_free(range);
                assert_eq!(
                    observed,
                    self.spec.add_free(range),
                    "{context}: results differ (left: implementation)"
                );
            }
            Operation::Allocate => {
                let observed = self.implementation.allocate();
                let permitted = self.spec.allocate(observed.ok());
                assert_eq!(
                    observed, permitted,
                    "{context}: the spec permits another result (right)"
                );
                self.record(observed, 1);
            }
            Operation::AllocateContiguous {
                count,
                align_frames,
            } => {
                let observed = self.implementation.allocate_contiguous(count, align_frames);
                let permitted = self
                    .spec
                    .allocate_contiguous(count, align_frames, observed.ok());
                assert_eq!(
                    observed, permitted,
                    "{context}: the spec permits another result (right)"
                );
                self.record(observed, count);
            }
            Operation::Free(frame) => {
                let observed = self.implementation.free(frame);
                assert_eq!(
                    observed,
                    self.spec.free(frame),
                    "{context}: results differ (left: implementation)"
                );
            }
            Operation::FreeContiguous { start, count } => {
                let observed = self.implementation.free_contiguous(start, count);
                let expected = self.spec.free_contiguous(start, count);
                assert_eq!(
                    observed, expected,
                    "{context}: results differ (left: implementation)"
                );
            }
        }
        self.check_counts(context);
    }

    fn record(&mut self, result: Result<FrameNumber, FrameError>, count: u64) {
        if let Ok(start) = result {
            self.handed_out.push((start, count));
        }
    }

    fn check_counts(&self, context: &str) {
        let (implementation, spec) = (&self.implementation, &self.spec);
        assert_eq!(
            implementation.free_count(),
            spec.free_count(),
            "{context}: free counts differ"
        );
        assert_eq!(
            implementation.total_count(),
            spec.total_count(),
            "{context}: total counts differ"
        );
    }

    /// The abstraction function: the implementation's free set is the spec's.
    fn check_free_sets(&self, context: &str) {
        let covered = self.spec.covered_range();
        assert_eq!(
            self.implementation.covered_range(),
            covered,
            "{context}: covered ranges differ"
        );
        let low = covered.start.0.saturating_sub(70);
        let high = covered.end.0.saturating_add(70);
        for frame in (low..high).map(FrameNumber) {
            let (observed, expected) =
                (self.implementation.is_free(frame), self.spec.is_free(frame));
            assert_eq!(
                observed, expected,
                "{context}: is {frame} free? implementation vs spec"
            );
        }
    }
}

const STEPS: usize = 10_000;
/// Steps between switches from filling to draining and back.
const PHASE_LENGTH: usize = 300;
const SEEDS: [u64; 6] = [1, 2, 3, 42, 0xdead_beef, 0x1234_5678_9abc_def0];

/// Runs `STEPS` random operations for every seed on a `word_count`-word
/// bitmap starting at `first_frame`.
fn check_refinement(word_count: usize, first_frame: FrameNumber) {
    for seed in SEEDS {
        let mut storage = vec![0u64; word_count];
        let mut pair = Pair {
            implementation: BitmapFrameAllocator::new(&mut storage, first_frame),
            spec: AbstractFrameAllocator::new(word_count, first_frame),
            handed_out: Vec::new(),
            random: Random::new(seed),
        };
        let setting = format!("{word_count} words from {first_frame}, seed {seed:#x}");
        pair.check_free_sets(&format!("{setting}, at start"));
        for step in 0..STEPS {
            let phase = if (step / PHASE_LENGTH).is_multiple_of(2) {
                Phase::Filling
            } else {
                Phase::Draining
            };
            let operation = if step < 3 {
                pair.choose_add_free()
            } else {
                pair.choose_operation(phase)
            };
            let context = format!("{setting}, step {step}, {operation:?}");
            pair.step(operation, &context);
            if step % 64 == 0 {
                pair.check_free_sets(&context);
            }
        }
        pair.check_free_sets(&format!("{setting}, at the end"));
    }
}

#[test]
fn one_word_from_frame_zero_refines_the_spec() {
    check_refinement(1, FrameNumber(0));
}

#[test]
fn three_words_from_frame_zero_refine_the_spec() {
    check_refinement(3, FrameNumber(0));
}

#[test]
fn odd_word_counts_with_unaligned_first_frames_refine_the_spec() {
    check_refinement(5, FrameNumber(1));
    check_refinement(7, FrameNumber(63));
    check_refinement(2, FrameNumber(64 + 5));
}

#[test]
fn a_forty_word_bitmap_refines_the_spec() {
    check_refinement(40, FrameNumber(1000));
}

#[test]
fn a_bitmap_cut_short_by_the_address_space_refines_the_spec() {
    check_refinement(3, FrameNumber(FrameNumber::MAX.0 - 100));
    check_refinement(2, FrameNumber(FrameNumber::MAX.0 + 1 - 64));
}

#[test]
fn bitmaps_that_cover_nothing_refine_the_spec() {
    check_refinement(0, FrameNumber(10));
    check_refinement(4, FrameNumber(u64::MAX - 10));
}

#[test]
fn the_refinement_check_catches_a_frame_handed_out_twice() {
    // A wrong implementation answer is not a permitted spec result, so the
    // equality the tests assert fails: the check has teeth.
    let mut spec = AbstractFrameAllocator::new(1, FrameNumber(0));
    spec.add_free(FrameRange::new(FrameNumber(3), FrameNumber(6)))
        .unwrap();
    assert_eq!(spec.allocate(Some(FrameNumber(3))), Ok(FrameNumber(3)));
    assert_ne!(
        spec.allocate(Some(FrameNumber(3))),
        Ok(FrameNumber(3)),
        "a second 3 must not be permitted"
    );
    assert_ne!(
        spec.allocate(None),
        Err(FrameError::OutOfMemory),
        "nor must a false out of memory"
    );
}

#[test]
fn the_refinement_check_catches_a_misaligned_or_overlapping_run() {
    let mut spec = AbstractFrameAllocator::new(1, FrameNumber(0));
    spec.add_free(FrameRange::new(FrameNumber(0), FrameNumber(16)))
        .unwrap();
    assert_ne!(
        spec.allocate_contiguous(4, 4, Some(FrameNumber(2))),
        Ok(FrameNumber(2)),
        "misaligned"
    );
    assert_ne!(
        spec.allocate_contiguous(4, 1, Some(FrameNumber(2))),
        Ok(FrameNumber(2)),
        "overlaps the run at 0"
    );
    assert_ne!(
        spec.allocate_contiguous(8, 1, Some(FrameNumber(13))),
        Ok(FrameNumber(13)),
        "passes the end"
    );
}
