//! The debug-build lock-order check.

use crate::{HeldLevels, Level, LevelSet, SpinLock, ThreadLevels, TicketLock};

type Checked<T> = SpinLock<T, TicketLock, crate::NoGuard, ThreadLevels>;

#[test]
fn level_set_tracks_the_lowest_level() {
    let held = LevelSet::EMPTY
        .with(Level::new(5))
        .with(Level::new(2))
        .with(Level::new(63));
    assert_eq!(held.lowest(), Some(Level::new(2)));
    assert!(held.contains(Level::new(63)) && !held.contains(Level::new(3)));
    assert_eq!(held.without(Level::new(2)).lowest(), Some(Level::new(5)));
    assert_eq!(LevelSet::EMPTY.lowest(), None);
}

#[test]
fn nesting_downward_is_allowed_and_released_levels_are_forgotten() {
    let (high, low) = (
        Checked::new(Level::new(4), 0),
        Checked::new(Level::new(2), 0),
    );
    let outer = high.lock();
    let inner = low.lock();
    // Released out of order: the set is exact, not a stack.
    drop(outer);
    drop(inner);
    let lowest = Checked::new(Level::new(1), 0);
    let _again = low.lock();
    let _then = lowest.lock();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "lock order violation: taking level 3 while holding level 2")]
fn taking_a_higher_level_while_holding_a_lower_one_panics() {
    let (low, high) = (
        Checked::new(Level::new(2), 0),
        Checked::new(Level::new(3), 0),
    );
    let _low = low.lock();
    let _high = high.lock();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "lock order violation: taking level 2 while holding level 2")]
fn taking_two_locks_of_one_level_panics() {
    let (first, second) = (
        Checked::new(Level::new(2), 0),
        Checked::new(Level::new(2), 0),
    );
    let _first = first.lock();
    let _second = second.try_lock();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "lock order violation: taking level 7 while holding level 7")]
fn taking_a_lock_twice_panics_instead_of_deadlocking() {
    let lock = Checked::new(Level::new(7), 0);
    let _first = lock.lock();
    let _second = lock.lock();
}

#[test]
fn failed_try_lock_gives_its_level_back() {
    let lock = Checked::new(Level::new(3), 0);
    let held = lock.lock();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            assert!(lock.try_lock().is_none(), "try_lock entered a held lock");
            let held = <ThreadLevels as HeldLevels>::held();
            assert_eq!(
                held,
                LevelSet::EMPTY,
                "a failed try_lock left levels {held:?} held"
            );
            let other = Checked::new(Level::new(5), 0);
            let _other = other.lock();
        });
    });
    drop(held);
}
