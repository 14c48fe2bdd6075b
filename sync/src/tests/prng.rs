//! A deterministic PRNG for choosing test steps: the shared one.

pub(crate) use testkit::Rng;
