//! Lock order, checked in debug builds.
//!
//! DESIGN.md: a layer's locks are private to it and a layer only calls the
//! layers below, so a CPU holding a lock of layer `k` only ever takes locks
//! of layers below `k`, and no cycle — no deadlock — can form. A lock's
//! [`Level`] is the number of the layer (or sub-layer) that owns it; debug
//! builds keep the set of levels each CPU holds and panic when a CPU takes
//! a lock whose level is not strictly below every level it holds. Release
//! builds keep nothing and check nothing.

use core::marker::PhantomData;

/// A lock's place in the lock order: the layer (or sub-layer) that owns
/// it, 0 to 63. While holding a lock of level `Y`, a CPU may only take
/// locks of levels below `Y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Level(u8);

impl Level {
    /// The highest level.
    pub const MAX: Level = Level(63);

    /// Level `level`; panics (at compile time in a constant) above 63.
    pub const fn new(level: u8) -> Self {
        assert!(level <= Self::MAX.0, "a lock level is at most 63");
        Self(level)
    }

    /// The level's number.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// The levels of the locks one CPU holds: a bit per level. Exact, because a
/// CPU never holds two locks of one level (that is an order violation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelSet(u64);

impl LevelSet {
    /// No lock held.
    pub const EMPTY: LevelSet = LevelSet(0);

    /// The set whose bit `n` stands for level `n` (per-CPU storage keeps
    /// a set as this `u64`).
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }

    /// The set as a `u64`, bit `n` for level `n`.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether a lock of `level` is held.
    pub const fn contains(self, level: Level) -> bool {
        self.0 & (1 << level.0) != 0
    }

    /// This set plus `level`.
    pub const fn with(self, level: Level) -> Self {
        Self(self.0 | 1 << level.0)
    }

    /// This set minus `level`.
    pub const fn without(self, level: Level) -> Self {
        Self(self.0 & !(1 << level.0))
    }

    /// The lowest level held: the bound for the next lock taken.
    pub const fn lowest(self) -> Option<Level> {
        if self.0 == 0 {
            return None;
        }
        Some(Level(self.0.trailing_zeros() as u8))
    }
}

/// Per-CPU storage for the levels a CPU holds, provided by the kernel (a
/// field of its per-CPU block). Used by debug builds only.
///
/// `held` and `set_held` are called with the lock's [`GuardPolicy`] entered;
/// an interrupt between them that takes and releases locks leaves the set as
/// it found it, so no further protection is needed.
///
/// [`GuardPolicy`]: crate::GuardPolicy
pub trait HeldLevels {
    /// The levels the running CPU holds.
    fn held() -> LevelSet;

    /// Replaces the levels the running CPU holds.
    fn set_held(levels: LevelSet);
}

/// Keeps nothing, so checks nothing (the default): for code that has no
/// per-CPU storage to offer.
#[derive(Debug)]
pub struct Untracked;

impl HeldLevels for Untracked {
    #[inline(always)]
    fn held() -> LevelSet {
        LevelSet::EMPTY
    }

    #[inline(always)]
    fn set_held(_levels: LevelSet) {}
}

/// Keeps the levels per host thread, for host tests (feature `std`). Not
/// for loom, whose threads share one OS thread.
#[cfg(any(test, feature = "std"))]
#[derive(Debug)]
pub struct ThreadLevels;

#[cfg(any(test, feature = "std"))]
std::thread_local! {
    static THREAD_LEVELS: core::cell::Cell<LevelSet> = const { core::cell::Cell::new(LevelSet::EMPTY) };
}

#[cfg(any(test, feature = "std"))]
impl HeldLevels for ThreadLevels {
    fn held() -> LevelSet {
        THREAD_LEVELS.with(|levels| levels.get())
    }

    fn set_held(levels: LevelSet) {
        THREAD_LEVELS.with(|cell| cell.set(levels));
    }
}

/// A level taken by this CPU; given back when dropped. Empty in release
/// builds.
pub(crate) struct LevelMark<H: HeldLevels> {
    #[cfg(debug_assertions)]
    level: Level,
    store: PhantomData<fn() -> H>,
}

impl<H: HeldLevels> LevelMark<H> {
    /// Checks that `level` may be taken now and records it as held.
    #[inline(always)]
    #[cfg_attr(debug_assertions, track_caller)]
    pub(crate) fn take(level: Level) -> Self {
        #[cfg(debug_assertions)]
        {
            let held = H::held();
            check_order(level, held);
            H::set_held(held.with(level));
        }
        #[cfg(not(debug_assertions))]
        let _ = level;
        Self {
            #[cfg(debug_assertions)]
            level,
            store: PhantomData,
        }
    }
}

impl<H: HeldLevels> Drop for LevelMark<H> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        H::set_held(H::held().without(self.level));
    }
}

/// Panics unless `level` is below every level in `held`.
#[cfg(debug_assertions)]
#[track_caller]
fn check_order(level: Level, held: LevelSet) {
    match held.lowest() {
        Some(lowest) if level >= lowest => order_violation(level, lowest),
        _ => {}
    }
}

#[cfg(debug_assertions)]
#[cold]
#[track_caller]
fn order_violation(taking: Level, holding: Level) -> ! {
    panic!(
        "lock order violation: taking level {} while holding level {} \
         (a CPU holding a lock may only take locks of lower levels: a layer only calls the layers below it)",
        taking.0, holding.0
    )
}
