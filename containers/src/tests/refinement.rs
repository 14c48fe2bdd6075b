//! Refinement: `Containers` against `ContainersSpec` on random operation
//! sequences (seeded: a failing seed replays). After every operation the
//! results must be equal, and so must every observable of every id ever
//! handed out and of a few that never were.

use std::vec::Vec;

use testkit::Rng;

use super::observe::{assert_conserved, observe, observe_spec};
use crate::spec::ContainersSpec;
use crate::{ContainerId, StdContainers, MAX_PAGES};

/// One step of a sequence.
#[derive(Clone, Copy, Debug)]
enum Operation {
    Create { parent: ContainerId, quota: u64 },
    Charge { id: ContainerId, pages: u64 },
    Release { id: ContainerId, pages: u64 },
    Destroy { id: ContainerId },
}

/// The implementation and the spec, driven in step.
struct Pair {
    containers: StdContainers,
    spec: ContainersSpec,
    seed: u64,
}

impl Pair {
    fn new(seed: u64, root_quota: u64, capacity: usize) -> Self {
        Self {
            containers: StdContainers::with_capacity(root_quota, capacity).expect("a valid tree"),
            spec: ContainersSpec::new(root_quota, capacity).expect("a valid spec"),
            seed,
        }
    }

    /// Applies `operation` to both and compares the results.
    fn apply(&mut self, step: usize, operation: Operation) {
        let (seen, expected) = match operation {
            Operation::Create { parent, quota } => (
                self.containers.create_child(parent, quota).map(Some),
                self.spec.create_child(parent, quota).map(Some),
            ),
            Operation::Charge { id, pages } => (
                self.containers.charge(id, pages).map(|()| None),
                self.spec.charge(id, pages).map(|()| None),
            ),
            Operation::Release { id, pages } => (
                self.containers.release(id, pages).map(|()| None),
                self.spec.release(id, pages).map(|()| None),
            ),
            Operation::Destroy { id } => {
                let (seen, expected) = (self.containers.destroy(id), self.spec.destroy(id));
                assert_eq!(
                    seen, expected,
                    "seed {} step {step}: {operation:?}",
                    self.seed
                );
                return;
            }
        };
        assert_eq!(
            seen, expected,
            "seed {} step {step}: {operation:?}",
            self.seed
        );
    }

    /// Compares every observable of every id the spec knows, and of ids
    /// just past them.
    fn compare_observables(&self, step: usize) {
        let known = self.spec.records().map(|(id, _)| id);
        let forged = [
            ContainerId::from_parts(0, 1),
            ContainerId::from_parts(self.containers.capacity() as u32, 0),
        ];
        for id in known.chain(forged) {
            let (seen, expected) = (observe(&self.containers, id), observe_spec(&self.spec, id));
            assert_eq!(
                seen, expected,
                "seed {} step {step}: observables of {id}",
                self.seed
            );
        }
    }
}

/// A random operation: mostly on ids the spec knows, alive or dead, with
/// page counts around the interesting boundaries.
fn random_operation(rng: &mut Rng, spec: &ContainersSpec, capacity: usize) -> Operation {
    let ids: Vec<ContainerId> = spec.records().map(|(id, _)| id).collect();
    let id = match rng.below(20) {
        0 => ContainerId::from_parts(rng.below(capacity + 1) as u32, rng.below(3) as u32),
        _ => ids[rng.below(ids.len())],
    };
    let record = spec.record(id);
    let pages = match rng.below(12) {
        0 => u64::MAX,
        1 => MAX_PAGES,
        2 => record.map_or(0, |record| record.quota.saturating_sub(record.usage)),
        3 => record.map_or(0, |record| record.charged),
        4 => record.map_or(1, |record| record.charged + 1),
        _ => rng.below(6) as u64,
    };
    match rng.below(10) {
        0..=2 => Operation::Create {
            parent: id,
            quota: pages,
        },
        3..=5 => Operation::Charge { id, pages },
        6..=8 => Operation::Release { id, pages },
        _ => Operation::Destroy { id },
    }
}

fn run_sequence(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let capacity = 1 + rng.below(8);
    let root_quota = match rng.below(10) {
        0 => MAX_PAGES,
        _ => rng.below(40) as u64,
    };
    let mut pair = Pair::new(seed, root_quota, capacity);
    for step in 0..steps {
        let operation = random_operation(&mut rng, &pair.spec, capacity);
        pair.apply(step, operation);
        pair.compare_observables(step);
        assert_conserved(&pair.spec);
    }
}

#[test]
fn containers_refine_the_spec_on_random_sequences() {
    (0..2000).for_each(|seed| run_sequence(seed, 150));
}

#[test]
fn containers_refine_the_spec_on_long_sequences() {
    (10_000..10_020).for_each(|seed| run_sequence(seed, 3000));
}
