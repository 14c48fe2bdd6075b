//! Refinement: `Condvar` (and so `WaitQueue`) against `CondvarSpec`, on
//! random steps: waits, signals and broadcasts run by client threads, alone
//! or in overlapping batches (checked for linearizability), signals with
//! the user's lock held or not, and spurious wake-ups and stale permits.

use super::serial::one_at_a_time;
use std::sync::Arc;
use std::vec::Vec;

use spinlock::{Level, NoGuard, SpinLock, ThreadLevels, TicketLock};

use super::linearize::Candidates;
use super::prng::Rng;
use super::stepped::{Driver, SteppedBlocking};
use crate::spec::CondvarSpec;
use crate::Condvar;

/// The user's lock: above the condvar's own (`SYNC_LEVEL`).
type UserLock = SpinLock<(), TicketLock, NoGuard, ThreadLevels>;
const USER_LEVEL: Level = Level::new(6);
const CLIENTS: usize = 5;

struct Shared {
    lock: UserLock,
    condvar: Condvar<SteppedBlocking>,
}

/// Whether a signalling thread holds the user's lock meanwhile.
#[derive(Clone, Copy, Debug)]
enum Holding {
    Lock,
    Nothing,
}

#[derive(Clone, Copy, Debug)]
enum Operation {
    Wait { client: usize },
    Signal { client: usize, holding: Holding },
    Broadcast { client: usize },
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Completion {
    Woken { client: usize },
    Signalled { client: usize, found: bool },
    Broadcasted { client: usize, count: usize },
}

fn apply(spec: &mut CondvarSpec, operation: &Operation) -> Vec<Completion> {
    match *operation {
        Operation::Wait { client } => {
            spec.wait(client);
            Vec::new()
        }
        Operation::Signal { client, .. } => {
            let woken = spec.signal();
            let found = woken.is_some();
            let woken = woken.map(|client| Completion::Woken { client });
            std::iter::once(Completion::Signalled { client, found }).chain(woken).collect()
        }
        Operation::Broadcast { client } => {
            let woken = spec.broadcast();
            let count = woken.len();
            let woken = woken.into_iter().map(|client| Completion::Woken { client });
            std::iter::once(Completion::Broadcasted { client, count }).chain(woken).collect()
        }
    }
}

fn issue(driver: &Driver<Completion>, shared: &Arc<Shared>, operation: Operation) {
    let shared = shared.clone();
    match operation {
        Operation::Wait { client } => driver.run(client, move || {
            let guard = shared.lock.lock();
            drop(shared.condvar.wait(guard, &shared.lock));
            Completion::Woken { client }
        }),
        Operation::Signal { client, holding } => driver.run(client, move || {
            let guard = matches!(holding, Holding::Lock).then(|| shared.lock.lock());
            let found = shared.condvar.signal();
            drop(guard);
            Completion::Signalled { client, found }
        }),
        Operation::Broadcast { client } => driver.run(client, move || Completion::Broadcasted {
            client,
            count: shared.condvar.broadcast(),
        }),
    }
}

fn random_operation(rng: &mut Rng, client: usize, may_wait: bool) -> Operation {
    match rng.below(if may_wait { 9 } else { 4 }) {
        0 => Operation::Broadcast { client },
        1 => Operation::Signal { client, holding: Holding::Lock },
        2 | 3 => Operation::Signal { client, holding: Holding::Nothing },
        _ => Operation::Wait { client },
    }
}

fn run_one(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let shared = Arc::new(Shared {
        lock: UserLock::new(USER_LEVEL, ()),
        condvar: Condvar::new(),
    });
    let driver = Driver::<Completion>::new(CLIENTS);
    let mut candidates = Candidates::new(CondvarSpec::new());
    let mut check = |step: usize, batch: &[Operation]| {
        batch.iter().for_each(|operation| issue(&driver, &shared, *operation));
        driver.settle();
        let mut seen: Vec<Completion> = driver.take_outcomes().into_iter().map(|(_, completion)| completion).collect();
        let waiters = shared.condvar.waiters();
        let explained = candidates.step(batch, apply, &mut seen, |spec| spec.waiters().count() == waiters);
        assert!(explained, "seed {seed} step {step}: no order of {batch:?} explains {seen:?} with {waiters} waiting");
    };
    for step in 0..steps {
        if rng.below(6) == 0 {
            driver.unpark(rng.below(CLIENTS));
            check(step, &[]);
            continue;
        }
        let mut idle = driver.idle_clients();
        // Up to two at once (waiters' orders multiply the candidates);
        // one client always stays free to signal.
        let size = (1 + rng.below(2)).min(idle.len() - 1).max(1);
        let batch: Vec<Operation> = (0..size)
            .map(|_| {
                let client = idle.swap_remove(rng.below(idle.len()));
                random_operation(&mut rng, client, !idle.is_empty())
            })
            .collect();
        check(step, &batch);
    }
    while shared.condvar.waiters() > 0 {
        let client = driver.idle_clients()[0];
        check(steps, &[Operation::Broadcast { client }]);
    }
    driver.finish();
}

#[test]
fn condvar_refines_fifo_spec_on_random_steps() {
    let _turn = one_at_a_time();
    (0..40).for_each(|seed| run_one(seed, 150));
}
