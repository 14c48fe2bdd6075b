//! Refinement: random step sequences, applied to a lock's step functions
//! and to `spec::FifoLock`, give the same observable results.

use super::support::{Rng, ThreadSlot};
use crate::spec::{FifoLock, SpecArrival};
use crate::{Arrival, McsLock, RawLock, Ticket, TicketLock};

const CPUS: usize = 4;
const STEPS: usize = 20_000;

/// What an arrival lets the caller observe: the ticket lock tells its
/// number, the MCS lock whom it queued behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Observed {
    Number(u32),
    Behind(Option<usize>),
}

/// A lock driven one step at a time, as the spec is.
trait StepLock {
    /// What a CPU keeps while it waits or holds (ticket, or nothing).
    type Place: Copy;
    fn arrive(&self, cpu: usize) -> (Self::Place, Observed);
    fn is_my_turn(&self, cpu: usize, place: Self::Place) -> bool;
    fn release(&self, cpu: usize, place: Self::Place);
    fn try_lock(&self, cpu: usize) -> Option<(Self::Place, Observed)>;
    fn is_locked(&self) -> bool;
    /// What the spec's arrival should look like through this lock.
    fn expected(arrival: SpecArrival) -> Observed;
}

impl StepLock for TicketLock {
    type Place = Ticket;

    fn arrive(&self, _cpu: usize) -> (Ticket, Observed) {
        let ticket = self.take_ticket();
        (ticket, Observed::Number(ticket.0))
    }

    fn is_my_turn(&self, _cpu: usize, ticket: Ticket) -> bool {
        TicketLock::is_my_turn(self, ticket)
    }

    fn release(&self, _cpu: usize, ticket: Ticket) {
        TicketLock::release(self, ticket);
    }

    fn try_lock(&self, _cpu: usize) -> Option<(Ticket, Observed)> {
        RawLock::try_lock(self).map(|ticket| (ticket, Observed::Number(ticket.0)))
    }

    fn is_locked(&self) -> bool {
        RawLock::is_locked(self)
    }

    fn expected(arrival: SpecArrival) -> Observed {
        Observed::Number(arrival.number)
    }
}

impl StepLock for McsLock<ThreadSlot, CPUS> {
    type Place = ();

    fn arrive(&self, cpu: usize) -> ((), Observed) {
        let behind = match McsLock::arrive(self, cpu) {
            Arrival::Acquired => None,
            Arrival::Queued { behind } => Some(behind),
        };
        ((), Observed::Behind(behind))
    }

    fn is_my_turn(&self, cpu: usize, (): ()) -> bool {
        McsLock::is_my_turn(self, cpu)
    }

    fn release(&self, cpu: usize, (): ()) {
        McsLock::release(self, cpu);
    }

    fn try_lock(&self, cpu: usize) -> Option<((), Observed)> {
        ThreadSlot::set(cpu);
        RawLock::try_lock(self).map(|slot| {
            assert_eq!(slot, cpu, "try_lock used another slot than the caller's");
            ((), Observed::Behind(None))
        })
    }

    fn is_locked(&self) -> bool {
        RawLock::is_locked(self)
    }

    fn expected(arrival: SpecArrival) -> Observed {
        Observed::Behind(arrival.behind)
    }
}

#[derive(Clone, Copy)]
enum CpuState<P> {
    Idle,
    Waiting(P),
    Holding(P),
}

/// Runs `STEPS` random steps on `lock` and on the spec, comparing every
/// observable result and, after each step, every waiter's `is_my_turn`.
fn drive<L: StepLock>(lock: &L, first_number: u32, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut spec = FifoLock::<CPUS>::new(first_number);
    let mut states = [CpuState::<L::Place>::Idle; CPUS];
    for step in 0..STEPS {
        let cpu = rng.below(CPUS);
        states[cpu] = apply_step(lock, &mut spec, &mut rng, cpu, states[cpu], (seed, step));
        compare_state(lock, &spec, &states, (seed, step));
    }
}

/// One random step for `cpu`, on both; returns `cpu`'s new state.
fn apply_step<L: StepLock>(
    lock: &L,
    spec: &mut FifoLock<CPUS>,
    rng: &mut Rng,
    cpu: usize,
    state: CpuState<L::Place>,
    (seed, step): (u64, usize),
) -> CpuState<L::Place> {
    match state {
        CpuState::Idle if rng.coin() => {
            let (place, seen) = lock.arrive(cpu);
            let wanted = L::expected(spec.arrive(cpu));
            assert_eq!(
                seen, wanted,
                "seed {seed} step {step}: CPU {cpu} arrive: spec {wanted:?}, lock {seen:?}"
            );
            CpuState::Waiting(place)
        }
        CpuState::Idle => {
            let seen = lock.try_lock(cpu);
            let wanted = spec.try_lock(cpu);
            let seen_number = seen.map(|(_, observed)| observed);
            let wanted_number = wanted.map(|number| {
                L::expected(SpecArrival {
                    number,
                    behind: None,
                })
            });
            assert_eq!(
                seen_number, wanted_number,
                "seed {seed} step {step}: CPU {cpu} try_lock"
            );
            seen.map_or(CpuState::Idle, |(place, _)| CpuState::Holding(place))
        }
        CpuState::Waiting(place) if lock.is_my_turn(cpu, place) => CpuState::Holding(place),
        CpuState::Waiting(place) => CpuState::Waiting(place),
        CpuState::Holding(place) => {
            lock.release(cpu, place);
            spec.release(cpu);
            CpuState::Idle
        }
    }
}

/// Every CPU that waits or holds sees the same `is_my_turn` as in the spec.
fn compare_state<L: StepLock>(
    lock: &L,
    spec: &FifoLock<CPUS>,
    states: &[CpuState<L::Place>; CPUS],
    (seed, step): (u64, usize),
) {
    let (seen, wanted) = (lock.is_locked(), spec.is_locked());
    assert_eq!(
        seen, wanted,
        "seed {seed} step {step}: is_locked: spec {wanted}, lock {seen}"
    );
    for (cpu, state) in states.iter().enumerate() {
        let (CpuState::Waiting(place) | CpuState::Holding(place)) = *state else {
            continue;
        };
        let (seen, wanted) = (lock.is_my_turn(cpu, place), spec.is_my_turn(cpu));
        assert_eq!(
            seen, wanted,
            "seed {seed} step {step}: CPU {cpu} is_my_turn: spec {wanted}, lock {seen}"
        );
    }
}

#[test]
fn ticket_lock_refines_fifo_spec() {
    for seed in 0..20 {
        drive(&TicketLock::new(), 0, seed);
    }
}

#[test]
fn ticket_lock_refines_fifo_spec_across_wrap_around() {
    for seed in 0..20 {
        let first = u32::MAX - (seed as u32 * 37) % 200;
        drive(&TicketLock::starting_at(first), first, seed);
    }
}

#[test]
fn mcs_lock_refines_fifo_spec() {
    for seed in 0..20 {
        drive(&McsLock::<ThreadSlot, CPUS>::new(), 0, seed);
    }
}

/// mC2's bug: a waiter that spins `while now < t` and took ticket 0 at the
/// wrap (`now = 2³² - 1`) enters at once, ahead of the holder's release.
#[test]
fn ticket_taken_at_wrap_around_waits_for_its_turn() {
    let lock = TicketLock::starting_at(u32::MAX);
    let holder = lock.take_ticket();
    assert!(
        lock.is_my_turn(holder),
        "the first ticket at u32::MAX should enter"
    );
    let wrapped = lock.take_ticket();
    assert_eq!(wrapped, Ticket(0), "the ticket after u32::MAX");
    assert!(
        !lock.is_my_turn(wrapped),
        "ticket 0 entered while ticket u32::MAX holds the lock"
    );
    lock.release(holder);
    assert!(
        lock.is_my_turn(wrapped),
        "ticket 0 did not enter after u32::MAX released"
    );
    lock.release(wrapped);
    assert!(
        !RawLock::is_locked(&lock),
        "the lock should be free after both released"
    );
}

#[test]
fn mcs_release_hands_over_in_arrival_order() {
    let lock = McsLock::<ThreadSlot, CPUS>::new();
    assert_eq!(lock.arrive(2), Arrival::Acquired);
    assert_eq!(lock.arrive(0), Arrival::Queued { behind: 2 });
    assert_eq!(lock.arrive(3), Arrival::Queued { behind: 0 });
    for (holder, next) in [(2, 0), (0, 3)] {
        assert!(
            !lock.is_my_turn(next),
            "slot {next} entered before slot {holder} released"
        );
        lock.release(holder);
        assert!(
            lock.is_my_turn(next),
            "slot {next} did not enter after slot {holder} released"
        );
    }
    lock.release(3);
    assert!(
        !RawLock::is_locked(&lock),
        "the lock should be free after all released"
    );
}

#[test]
#[should_panic(expected = "MCS slot 1 is already queued on this lock")]
fn mcs_slot_used_twice_panics() {
    let lock = McsLock::<ThreadSlot, CPUS>::new();
    assert_eq!(lock.arrive(0), Arrival::Acquired);
    let _ = lock.arrive(1);
    let _ = lock.arrive(1);
}
