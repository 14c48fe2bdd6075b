//! `SpinLock<T>`: data inside its lock, with a guard policy and a level.

use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::cell::{Held, LockCell};
use crate::guard::{GuardPolicy, NoGuard, PolicyMark};
use crate::order::{HeldLevels, Level, LevelMark, Untracked};
use crate::raw::RawLock;
use crate::ticket::TicketLock;

/// A `T` that only the holder of the lock can reach.
///
/// - `L`: the algorithm, [`TicketLock`] (default) or [`McsLock`];
/// - `G`: what is switched off while held ([`NoGuard`] by default; the
///   kernel's interrupt-disabling policy comes from the machine layer);
/// - `H`: where the debug-build lock-order check keeps the levels this CPU
///   holds ([`Untracked`] by default, which checks nothing).
///
/// The kernel names its choices once, e.g.
/// `type IrqLock<T, L = TicketLock> = SpinLock<T, L, IrqOff, PerCpuLevels>;`.
///
/// [`McsLock`]: crate::McsLock
pub struct SpinLock<T, L: RawLock = TicketLock, G: GuardPolicy = NoGuard, H: HeldLevels = Untracked>
{
    cell: LockCell<T, L>,
    #[cfg(debug_assertions)]
    level: Level,
    policy: PhantomData<fn() -> (G, H)>,
}

impl<T, L: RawLock, G: GuardPolicy, H: HeldLevels> SpinLock<T, L, G, H> {
    /// An unlocked lock of `level` around `value`; `const`, for statics.
    #[cfg(not(loom))]
    pub const fn new(level: Level, value: T) -> Self {
        Self::with_raw(L::UNLOCKED, level, value)
    }

    /// An unlocked lock of `level` around `value`.
    #[cfg(loom)]
    pub fn new(level: Level, value: T) -> Self {
        Self::with_raw(L::unlocked(), level, value)
    }

    loom_const_fn! {
        /// A lock built from a given raw lock, e.g.
        /// `TicketLock::starting_at(u32::MAX - 1)` to test wrap-around.
        pub fn with_raw(raw: L, level: Level, value: T) -> Self {
            #[cfg(not(debug_assertions))]
            let _ = level;
            Self {
                cell: LockCell::new(raw, value),
                #[cfg(debug_assertions)]
                level,
                policy: PhantomData,
            }
        }
    }

    /// Enters the guard policy, then spins until this CPU holds the lock.
    ///
    /// Debug builds panic with "lock order violation" if this CPU holds a
    /// lock of this level or lower.
    #[inline(always)]
    #[cfg_attr(debug_assertions, track_caller)]
    pub fn lock(&self) -> SpinLockGuard<'_, T, L, G, H> {
        let policy = PolicyMark::enter();
        let level = LevelMark::take(self.level());
        let held = self.cell.lock();
        SpinLockGuard {
            held,
            _level: level,
            _policy: policy,
        }
    }

    /// Takes the lock if nobody holds or waits for it; never spins. Checks
    /// the lock order like [`lock`](Self::lock).
    #[inline(always)]
    #[cfg_attr(debug_assertions, track_caller)]
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T, L, G, H>> {
        let policy = PolicyMark::enter();
        let level = LevelMark::take(self.level());
        let held = self.cell.try_lock()?;
        Some(SpinLockGuard {
            held,
            _level: level,
            _policy: policy,
        })
    }

    /// Runs `f` on the data under the lock.
    #[inline(always)]
    #[cfg_attr(debug_assertions, track_caller)]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }

    /// Whether some CPU holds or waits for the lock: a snapshot, for
    /// assertions and statistics.
    pub fn is_locked(&self) -> bool {
        self.cell.is_locked()
    }

    /// The data, without locking: `&mut self` proves nobody else can lock.
    pub fn get_mut(&mut self) -> &mut T {
        self.cell.get_mut()
    }

    /// The data, consuming the lock.
    pub fn into_inner(self) -> T {
        self.cell.into_inner()
    }

    #[inline(always)]
    fn level(&self) -> Level {
        #[cfg(debug_assertions)]
        return self.level;
        #[cfg(not(debug_assertions))]
        return Level::MAX; // unused: release builds check nothing
    }
}

impl<T, L: RawLock, G: GuardPolicy, H: HeldLevels> fmt::Debug for SpinLock<T, L, G, H> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SpinLock")
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

/// The lock held: derefs to the data; releases the lock, gives back the
/// level and exits the guard policy, in that order, when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct SpinLockGuard<'a, T, L: RawLock, G: GuardPolicy, H: HeldLevels> {
    // Fields drop in declaration order, the reverse of how `lock` took them
    // (the marks are only ever dropped, hence the underscores):
    // release the lock, then the level, then the policy (e.g. interrupts
    // come back on only after the lock is free).
    held: Held<'a, T, L>,
    _level: LevelMark<H>,
    _policy: PolicyMark<G>,
}

impl<T, L: RawLock, G: GuardPolicy, H: HeldLevels> Deref for SpinLockGuard<'_, T, L, G, H> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.held
    }
}

impl<T, L: RawLock, G: GuardPolicy, H: HeldLevels> DerefMut for SpinLockGuard<'_, T, L, G, H> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.held
    }
}

impl<T: fmt::Debug, L: RawLock, G: GuardPolicy, H: HeldLevels> fmt::Debug
    for SpinLockGuard<'_, T, L, G, H>
{
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, formatter)
    }
}
