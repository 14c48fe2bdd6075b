//! Refinement: `BoundedQueue` against `BoundedQueueSpec`, on random steps
//! (capacities 1 to 3, six threads): single operations, batches of up to
//! three overlapping ones (checked for linearizability), and spurious
//! wake-ups.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::vec::Vec;

use super::linearize::Candidates;
use super::prng::Rng;
use super::stepped::{Driver, SteppedBlocking};
use crate::spec::{BoundedQueueSpec, QueueCompletion};
use crate::BoundedQueue;

type Completion = QueueCompletion<u32>;
type Spec = BoundedQueueSpec<u32>;

const CLIENTS: usize = 6;

#[derive(Clone, Copy, Debug)]
enum Operation {
    Insert { client: usize, item: u32 },
    Remove { client: usize },
}

fn apply(spec: &mut Spec, operation: &Operation) -> Vec<Completion> {
    match *operation {
        Operation::Insert { client, item } => spec.insert(client, item),
        Operation::Remove { client } => spec.remove(client),
    }
}

struct Checker<const CAPACITY: usize> {
    queue: Arc<BoundedQueue<u32, SteppedBlocking, CAPACITY>>,
    candidates: Candidates<Spec>,
    driver: Driver<Completion>,
    next_item: u32,
    seed: u64,
}

impl<const CAPACITY: usize> Checker<CAPACITY> {
    fn new(seed: u64) -> Self {
        Self {
            queue: Arc::new(BoundedQueue::new()),
            candidates: Candidates::new(Spec::new(CAPACITY)),
            driver: Driver::new(CLIENTS),
            next_item: 0,
            seed,
        }
    }

    fn operation(&mut self, client: usize, insert: bool) -> Operation {
        if !insert {
            return Operation::Remove { client };
        }
        self.next_item += 1;
        Operation::Insert { client, item: self.next_item }
    }

    fn issue(&self, operation: Operation) {
        let queue = self.queue.clone();
        match operation {
            Operation::Insert { client, item } => self.driver.run(client, move || {
                queue.insert(item);
                QueueCompletion::Inserted { thread: client }
            }),
            Operation::Remove { client } => self.driver.run(client, move || QueueCompletion::Removed {
                thread: client,
                item: queue.remove(),
            }),
        }
    }

    /// Issues `batch` at once, waits for quiet, and checks that some order
    /// of it explains what completed and the queue's shape.
    fn step(&mut self, step: usize, batch: &[Operation]) {
        batch.iter().for_each(|operation| self.issue(*operation));
        self.driver.settle();
        let mut seen: Vec<Completion> = self.driver.take_outcomes().into_iter().map(|(_, outcome)| outcome).collect();
        let (inserters, removers) = self.queue.waiting();
        let length = self.queue.len();
        let explained = self.candidates.step(batch, apply, &mut seen, |spec| {
            spec.waiting_inserters().count() == inserters
                && spec.waiting_removers().count() == removers
                && spec.items().count() == length
        });
        let seed = self.seed;
        assert!(
            explained,
            "seed {seed} step {step}: no order of {batch:?} explains completions {seen:?} \
             with {inserters} inserters and {removers} removers waiting and {length} items"
        );
    }

    /// Whether an insert (or else a remove) issued now would wait.
    fn would_wait(&self, insert: bool) -> bool {
        let (inserters, removers) = self.queue.waiting();
        match insert {
            true => inserters > 0 || self.queue.len() == CAPACITY,
            false => removers > 0 || self.queue.is_empty(),
        }
    }

    /// A random step. At least one client stays idle: batches leave one
    /// out, and with a single idle client the step is an operation that
    /// completes at once.
    fn random_step(&mut self, rng: &mut Rng, step: usize) {
        if rng.below(6) == 0 {
            self.driver.unpark(rng.below(CLIENTS));
            return self.step(step, &[]);
        }
        let mut idle = self.driver.idle_clients();
        let size = (1 + rng.below(3)).min(idle.len().saturating_sub(1)).max(1);
        let mut batch = Vec::new();
        for _ in 0..size {
            let client = idle.swap_remove(rng.below(idle.len()));
            let mut insert = rng.below(2) == 0;
            if size == 1 && idle.is_empty() && self.would_wait(insert) {
                insert = !insert;
            }
            batch.push(self.operation(client, insert));
        }
        self.step(step, &batch);
    }

    /// Serves every waiting thread and empties the queue (which tells apart
    /// any orders still open), then ends the clients.
    fn drain(mut self, first_step: usize) {
        for step in first_step.. {
            let client = self.driver.idle_clients()[0];
            let operation = match self.queue.waiting() {
                (_, removers) if removers > 0 => self.operation(client, true),
                (inserters, _) if inserters > 0 => self.operation(client, false),
                _ if !self.queue.is_empty() => self.operation(client, false),
                _ => break,
            };
            self.step(step, &[operation]);
        }
        assert_eq!(self.candidates.count(), 1, "seed {}: with nothing left, the spec state is known", self.seed);
        self.driver.finish();
    }
}

fn run_one<const CAPACITY: usize>(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let mut checker = Checker::<CAPACITY>::new(seed);
    for step in 0..steps {
        checker.random_step(&mut rng, step);
    }
    checker.drain(steps);
}

#[test]
fn bounded_queue_of_one_refines_spec_on_random_steps() {
    let _turn = one_at_a_time();
    (0..30).for_each(|seed| run_one::<1>(seed, 150));
}

#[test]
fn bounded_queue_of_two_refines_spec_on_random_steps() {
    let _turn = one_at_a_time();
    (100..130).for_each(|seed| run_one::<2>(seed, 150));
}

#[test]
fn bounded_queue_of_three_refines_spec_on_random_steps() {
    let _turn = one_at_a_time();
    (200..230).for_each(|seed| run_one::<3>(seed, 150));
}
