//! Linearizability against a spec, for steps that issue several operations
//! at once.
//!
//! When a step starts a batch of operations on different threads without
//! waiting in between, they really overlap; the implementation is right if
//! the batch, applied to the spec in *some* order, completes exactly what
//! the implementation completed. Orders that cannot be told apart yet
//! (e.g. two removers that both wait) stay as candidate spec states until
//! later steps rule them out.

use std::vec::Vec;

/// The spec states the implementation may be in, given all it has shown.
pub(crate) struct Candidates<S> {
    states: Vec<S>,
}

impl<S: Clone + PartialEq> Candidates<S> {
    pub(crate) fn new(initial: S) -> Self {
        Self {
            states: std::vec![initial],
        }
    }

    /// Applies `batch` in every order to every candidate and keeps the
    /// states whose completions equal `seen` (any order) and that pass
    /// `consistent`; false when none is left.
    pub(crate) fn step<Operation, Completion: Ord>(
        &mut self,
        batch: &[Operation],
        apply: impl Fn(&mut S, &Operation) -> Vec<Completion>,
        seen: &mut Vec<Completion>,
        consistent: impl Fn(&S) -> bool,
    ) -> bool {
        seen.sort();
        let mut next: Vec<S> = Vec::new();
        for state in &self.states {
            for order in orders(batch.len()) {
                let mut state = state.clone();
                let mut completed: Vec<Completion> = order
                    .iter()
                    .flat_map(|index| apply(&mut state, &batch[*index]))
                    .collect();
                completed.sort();
                if completed == *seen && consistent(&state) && !next.contains(&state) {
                    next.push(state);
                }
            }
        }
        assert!(next.len() <= 5_000, "too many candidate states: make batches smaller");
        self.states = next;
        !self.states.is_empty()
    }

    /// How many states are still possible.
    pub(crate) fn count(&self) -> usize {
        self.states.len()
    }
}

/// Every order of `0..count`.
fn orders(count: usize) -> Vec<Vec<usize>> {
    if count == 0 {
        return std::vec![Vec::new()];
    }
    let mut all = Vec::new();
    for shorter in orders(count - 1) {
        for place in 0..=shorter.len() {
            let mut order = shorter.clone();
            order.insert(place, count - 1);
            all.push(order);
        }
    }
    all
}

#[test]
fn orders_of_three_are_the_six_permutations() {
    let mut all = orders(3);
    all.sort();
    assert_eq!(all, [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]);
}
