//! The fuzzing loop for one target: samples first, then inputs that are
//! fresh (a tenth) or mutated corpus entries, each run through the parser.
//! An input with a new outcome label joins the corpus. The input being run
//! is published in [`CURRENT`] so that the panic hook and the hang watchdog
//! (both in `main`) can save it.
//!
//! Must be deterministic for a seed (the corpus evolves from outcomes alone,
//! never from time), so `--seed S` replays the same inputs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mutate::mutate;
use crate::{Rng, Target};

/// The most corpus entries kept per target (beyond it a random entry that
/// is not a sample is replaced).
const CORPUS_LIMIT: usize = 512;

/// What a worker is running: its target, seed, input number and input.
#[derive(Clone)]
pub struct Current {
    /// The target's name.
    pub target: &'static str,
    /// The seed of the run.
    pub seed: u64,
    /// The input's number in the run (0 = the first sample).
    pub index: u64,
    /// The input itself.
    pub input: Arc<Vec<u8>>,
}

/// One slot per worker thread: the input it is running now.
pub static CURRENT: Mutex<Vec<Option<Current>>> = Mutex::new(Vec::new());

thread_local! {
    /// The worker slot of this thread, while it runs [`fuzz`].
    pub static WORKER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Inputs run so far by all workers (the watchdog's sign of progress).
pub static PROGRESS: AtomicU64 = AtomicU64::new(0);

/// What one run of a target did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target's name.
    pub target: &'static str,
    /// The seed.
    pub seed: u64,
    /// Inputs run.
    pub inputs: u64,
    /// Distinct outcome labels seen.
    pub outcomes: usize,
    /// Corpus entries at the end (samples included).
    pub corpus: usize,
    /// The slowest input's time and number.
    pub slowest: (Duration, u64),
}

fn publish(worker: usize, current: Option<Current>) {
    let mut slots = CURRENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if slots.len() <= worker {
        slots.resize(worker + 1, None);
    }
    slots[worker] = current;
}

/// Runs `inputs` inputs into `target` from `seed`, as worker `worker`.
pub fn fuzz(target: &dyn Target, seed: u64, inputs: u64, worker: usize) -> Report {
    WORKER.with(|slot| slot.set(Some(worker)));
    let mut random = Rng::new(seed ^ 0x5eed_0f_f022);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    let samples = target.samples();
    let sample_count = samples.len();
    let mut seen: HashSet<String> = HashSet::new();
    let mut slowest = (Duration::ZERO, 0);
    let mut index = 0u64;
    let mut pending_samples = samples.into_iter();
    while index < inputs {
        let mut fresh = false;
        let input = match pending_samples.next() {
            Some(sample) => sample,
            None if corpus.is_empty() || random.below(10) == 0 => {
                fresh = true;
                target.generate(&mut random)
            }
            None => {
                let mut input = corpus[random.below(corpus.len())].clone();
                let other = &corpus[random.below(corpus.len())];
                let hot = target.hot_ranges(&input);
                mutate(&mut input, other, &hot, target.max_len(), &mut random);
                if random.coin() {
                    target.repair(&mut input);
                }
                input
            }
        };
        let input = Arc::new(input);
        publish(worker, Some(Current { target: target.name(), seed, index, input: input.clone() }));
        let started = Instant::now();
        let label = target.run(&input);
        let took = started.elapsed();
        PROGRESS.fetch_add(1, Ordering::Relaxed);
        if took > slowest.0 {
            slowest = (took, index);
        }
        let is_sample = index < sample_count as u64;
        if seen.insert(label) || is_sample || (fresh && corpus.is_empty()) {
            let input = Arc::try_unwrap(input).unwrap_or_else(|shared| (*shared).clone());
            if corpus.len() < CORPUS_LIMIT {
                corpus.push(input);
            } else {
                let victim = sample_count + random.below(CORPUS_LIMIT - sample_count.min(CORPUS_LIMIT - 1));
                corpus[victim.min(CORPUS_LIMIT - 1)] = input;
            }
        }
        index += 1;
    }
    publish(worker, None);
    WORKER.with(|slot| slot.set(None));
    Report { target: target.name(), seed, inputs: index, outcomes: seen.len(), corpus: corpus.len(), slowest }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parser with a planted bug three fields deep: a magic, a version
    /// byte of 7 and a length field that claims more than there is.
    struct Planted;

    impl Target for Planted {
        fn name(&self) -> &'static str {
            "planted"
        }
        fn samples(&self) -> Vec<Vec<u8>> {
            vec![b"LAMN\x01\x04\x00abcd".to_vec()]
        }
        fn generate(&self, random: &mut Rng) -> Vec<u8> {
            (0..random.below(16)).map(|_| random.next_u64() as u8).collect()
        }
        fn max_len(&self) -> usize {
            64
        }
        fn run(&self, input: &[u8]) -> String {
            if input.len() < 7 || &input[..4] != b"LAMN" {
                return "no magic".into();
            }
            if input[4] != 7 {
                return format!("version {}", input[4] % 4);
            }
            let length = u16::from_le_bytes([input[5], input[6]]) as usize;
            if 7 + length > input.len() {
                return "BUG".into();
            }
            "ok".into()
        }
    }

    #[test]
    fn the_loop_reaches_a_bug_three_checks_deep_and_a_seed_replays() {
        let report = fuzz(&Planted, 11, 20_000, 0);
        assert!(report.outcomes >= 3, "{report:?}");
        // The corpus is what let the loop get past each check in turn.
        struct Finder;
        impl Target for Finder {
            fn name(&self) -> &'static str {
                "finder"
            }
            fn samples(&self) -> Vec<Vec<u8>> {
                Planted.samples()
            }
            fn generate(&self, random: &mut Rng) -> Vec<u8> {
                Planted.generate(random)
            }
            fn max_len(&self) -> usize {
                64
            }
            fn run(&self, input: &[u8]) -> String {
                let label = Planted.run(input);
                if label == "BUG" {
                    FOUND.fetch_add(1, Ordering::Relaxed);
                }
                label
            }
        }
        static FOUND: AtomicU64 = AtomicU64::new(0);
        fuzz(&Finder, 11, 20_000, 0);
        let found = FOUND.swap(0, Ordering::Relaxed);
        assert!(found > 0, "20,000 inputs never reached the planted bug");
        fuzz(&Finder, 11, 20_000, 0);
        assert_eq!(FOUND.load(Ordering::Relaxed), found, "the same seed ran different inputs");
    }
}
