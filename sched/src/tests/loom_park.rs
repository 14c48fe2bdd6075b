//! Loom: park and unpark across CPUs, composed as the kernel composes them
//! — `ParkPermit` for the handshake, `schedule`'s pick, the idle loop and
//! `make_ready`'s PendQ push and wake IPI — with loom threads as CPUs:
//!
//! - a waker on another CPU races the sleeper's switch-out (it may leave
//!   the permit before, during or after the sleeper's `begin_park`, and
//!   push the thread while its CPU is still choosing what to run);
//! - a ring of three threads on three CPUs passes a token, each waking the
//!   next (the shape of the condvar ring test that stalled).
//!
//! A lost wake-up leaves a CPU halted with nobody to wake it: loom reports
//! the deadlock.

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::loom_idle::{make_ready, FlagCheck, ModelCpu};
use super::loom_support::{check, finds_a_failure, Preemptions};
use crate::park_permit::ParkPermit;

/// The kernel's `park` for thread `me` running on `cpu`: take a permit, or
/// set PARKED and let `schedule` pick — the thread itself if it was made
/// ready meanwhile, else the idle loop, which runs until the thread is
/// queued again.
pub(crate) fn park_on(cpu: &ModelCpu, me: usize, permit: &ParkPermit) {
    if permit.take_permit() || !permit.begin_park() {
        return;
    }
    let resumed = match cpu.next() {
        Some(thread) => thread,
        None => cpu.idle_until_work(),
    };
    assert_eq!(resumed, me, "a CPU resumed a thread nobody made ready");
    permit.finish_park();
}

/// The kernel's `unpark` of `thread` (homed on CPU `home`) from CPU `from`.
pub(crate) fn unpark_from(cpus: &[ModelCpu], from: usize, home: usize, thread: usize, permit: &ParkPermit, order: FlagCheck) {
    if permit.give_permit() {
        make_ready(cpus, from, home, thread, order);
    }
}

pub(crate) fn cpus(count: usize) -> Arc<Vec<ModelCpu>> {
    Arc::new((0..count).map(|_| ModelCpu::new()).collect::<Vec<_>>())
}

/// Thread 0 on CPU 0 waits for a flag; CPU 1 sets it and unparks.
fn waker_races_the_switch_out() {
    let cpus = cpus(2);
    let (flag, permit) = (Arc::new(AtomicBool::new(false)), Arc::new(ParkPermit::new()));
    let waker = {
        let (cpus, flag, permit) = (cpus.clone(), flag.clone(), permit.clone());
        thread::spawn(move || {
            flag.store(true, Ordering::Release);
            unpark_from(&cpus, 1, 0, 0, &permit, FlagCheck::AfterPush);
        })
    };
    while !flag.load(Ordering::Acquire) {
        park_on(&cpus[0], 0, &permit);
    }
    waker.join().unwrap();
}

#[test]
fn a_wakeup_racing_the_sleepers_switch_out_is_never_lost() {
    check("park vs unpark from another CPU", Preemptions::AtMost(3), waker_races_the_switch_out);
}

/// Threads 0, 1, 2 on CPUs 0, 1, 2 pass a token round once; each wakes
/// the next when it has moved it.
fn ring_of_three(order: FlagCheck) {
    const MEMBERS: usize = 3;
    let cpus = cpus(MEMBERS);
    let token = Arc::new(AtomicUsize::new(0));
    let permits: Arc<Vec<ParkPermit>> = Arc::new((0..MEMBERS).map(|_| ParkPermit::new()).collect::<Vec<_>>());
    let member = move |me: usize, cpus: Arc<Vec<ModelCpu>>, token: Arc<AtomicUsize>, permits: Arc<Vec<ParkPermit>>| {
        while token.load(Ordering::Acquire) != me {
            park_on(&cpus[me], me, &permits[me]);
        }
        token.fetch_add(1, Ordering::AcqRel);
        let next = (me + 1) % MEMBERS;
        unpark_from(&cpus, me, next, next, &permits[next], order);
    };
    let others: Vec<_> = (1..MEMBERS)
        .map(|me| {
            let (cpus, token, permits) = (cpus.clone(), token.clone(), permits.clone());
            thread::spawn(move || member(me, cpus, token, permits))
        })
        .collect();
    member(0, cpus, token.clone(), permits);
    others.into_iter().for_each(|other| other.join().unwrap());
    assert_eq!(token.load(Ordering::Acquire), MEMBERS);
}

#[test]
fn a_ring_of_three_on_three_cpus_never_stalls() {
    check("ring of three", Preemptions::AtMost(1), || ring_of_three(FlagCheck::AfterPush));
}

#[test]
fn the_ring_model_catches_a_lost_wake_ipi() {
    assert!(finds_a_failure(Preemptions::AtMost(1), || ring_of_three(FlagCheck::BeforePush)));
}
