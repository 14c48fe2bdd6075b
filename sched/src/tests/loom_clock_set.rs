//! Loom: a change of the wall clock racing a sleeper until a wall-clock
//! time, composed as the kernel composes them. The sleeper
//! (`linux_objects::clock::sleep_until` over `sleep_until`) reads the
//! count of clock changes, joins its CPU's `CpuSleepers`, then parks
//! while the count is unchanged; the setter (`clock::set_epoch` and
//! `wake_every_sleeper`) bumps the count, copies every sleeper and unparks
//! each:
//!
//! - whatever the interleaving, the sleeper sees the change — it never
//!   sleeps through it to its old deadline (loom reports the deadlock);
//! - a negative control copies the sleepers before bumping the count, and
//!   loom finds the sleeper that joined in between and sleeps on.

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

use spinlock::{Level, NoGuard, Untracked};

use super::loom_idle::FlagCheck;
use super::loom_park::{cpus, park_on, unpark_from};
use super::loom_support::{check, finds_a_failure, Preemptions};
use crate::park_permit::ParkPermit;
use crate::sleep_list::CpuSleepers;

/// The order of the setter's two steps.
#[derive(Clone, Copy)]
enum Setter {
    /// The kernel's: count the change, then copy the sleepers.
    CountThenCopy,
    /// Copy first: a sleeper joining in between is missed.
    CopyThenCount,
}

/// The epoch before and after the change.
const OLD_EPOCH: u64 = 1;
const NEW_EPOCH: u64 = 2;

/// Thread 0 on CPU 0 sleeps until a deadline worked out from the epoch it
/// reads; CPU 1 sets a new epoch. A sleeper that read the old epoch must
/// be woken to work its deadline out again; one that read the new one may
/// sleep to its deadline (the model ends it there).
fn clock_set_races_a_sleeper(order: Setter) {
    let cpus = cpus(2);
    let sleepers = Arc::new(CpuSleepers::<usize, NoGuard, Untracked>::new(Level::new(4)));
    let (epoch, sets) = (Arc::new(AtomicU64::new(OLD_EPOCH)), Arc::new(AtomicU64::new(0)));
    let permit = Arc::new(ParkPermit::new());
    let setter = {
        let (cpus, sleepers, epoch, sets, permit) = (cpus.clone(), sleepers.clone(), epoch.clone(), sets.clone(), permit.clone());
        thread::spawn(move || {
            epoch.store(NEW_EPOCH, Ordering::Relaxed);
            let count_the_change = || sets.fetch_add(1, Ordering::Release);
            if let Setter::CountThenCopy = order {
                count_the_change();
            }
            let mut copied = Vec::with_capacity(1);
            assert!(sleepers.copy_sleepers(&mut copied), "room was reserved for the one sleeper");
            if let Setter::CopyThenCount = order {
                count_the_change();
            }
            for thread in copied {
                unpark_from(&cpus, 1, 0, thread, &permit, FlagCheck::AfterPush);
            }
        })
    };
    let seen = sets.load(Ordering::Acquire);
    let epoch_used = epoch.load(Ordering::Relaxed);
    assert!(seen == 0 || epoch_used == NEW_EPOCH, "saw the change counted, yet read the old epoch");
    sleepers.change(|list| list.add(u64::MAX, 0)).unwrap();
    while epoch_used == OLD_EPOCH && sets.load(Ordering::Acquire) == seen {
        park_on(&cpus[0], 0, &permit);
    }
    sleepers.change(|list| list.remove(|thread| *thread == 0));
    setter.join().unwrap();
}

#[test]
fn a_sleeper_never_sleeps_through_a_change_of_the_clock() {
    check("clock set vs sleeper", Preemptions::AtMost(3), || clock_set_races_a_sleeper(Setter::CountThenCopy));
}

#[test]
fn the_model_finds_a_setter_that_copies_before_it_counts() {
    assert!(finds_a_failure(Preemptions::AtMost(3), || clock_set_races_a_sleeper(Setter::CopyThenCount)));
}
