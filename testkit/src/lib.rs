//! Helpers shared by the host tests of several Lamina crates and by the
//! in-kernel test image (`kernel-tests`); never a dependency of the kernel
//! itself.
//!
//! [`Rng`]: SplitMix64, a small deterministic generator for choosing the
//! steps of refinement and stress tests, so a failing seed replays exactly.
#![no_std]
#![forbid(unsafe_code)]

/// SplitMix64: small, deterministic, good enough to pick test steps.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator that starts from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % (bound.max(1) as u64)) as usize
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_replays_and_bounds_hold() {
        let (mut first, mut second) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(first.next_u64(), second.next_u64());
            assert!(first.below(10) < 10);
            second.below(10);
        }
        assert_eq!(Rng::new(1).below(0), 0);
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
