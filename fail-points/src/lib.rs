//! Allocation-failure injection's shared state (issue 23; Biscuit, OSDI'18
//! §8.5): every allocation site of the kernel asks [`FailPoints::should_fail`]
//! with the return addresses of its call chain, which name its **path**.
//!
//! **Provides** [`FailPoints`], in one of three modes:
//! - off: every question is answered "no" after one atomic load;
//! - recording: each distinct path (site and callers, hashed) gets a slot
//!   in a fixed table with its hit count, so a driver can list the paths a
//!   workload took ([`FailPoints::paths`]);
//! - armed: the `skip`-th allocation (from 0) on one path fails, exactly
//!   once however many CPUs race for it, and the points turn off.
//!
//! **Relies on** atomics only: no lock, no allocation, so that the frame
//! allocator and the heap can ask from any context.
//!
//! **Must never** fail an allocation that is not on the armed path, fail
//! more than one, or lose a path while the table has room (a full table
//! counts what it could not keep).
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(test, loom))]
extern crate std;

mod sync;
#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, loom))]
mod loom_tests;

use sync::{AtomicU64, Ordering};

/// Return addresses kept per path.
pub const DEPTH: usize = 12;

const OFF: u64 = 0;
const RECORDING: u64 = 1;
const ARMED: u64 = 2;

/// Where an allocation is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A physical frame (user pages, page tables, kernel stacks, buffers
    /// of whole pages).
    Frame = 1,
    /// The kernel heap, at a fallible allocation.
    Heap = 2,
}

impl Site {
    /// The site's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Site::Frame => "frame",
            Site::Heap => "heap",
        }
    }

    fn from_number(number: u64) -> Option<Site> {
        match number {
            1 => Some(Site::Frame),
            2 => Some(Site::Heap),
            _ => None,
        }
    }
}

/// The hash naming a path: its site and callers (never 0, the empty slot).
pub fn path_hash(site: Site, callers: &[u64]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ site as u64;
    for caller in callers {
        hash = (hash ^ caller).wrapping_mul(0x0000_0100_0000_01b3);
        hash ^= hash >> 29;
    }
    hash.max(1)
}

/// One recorded path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    /// Its hash ([`path_hash`]): what [`FailPoints::arm`] takes.
    pub hash: u64,
    /// Where the allocation was made.
    pub site: Site,
    /// How many allocations took it while recording.
    pub hits: u64,
    /// Its return addresses, innermost first (0: past the chain's end).
    pub callers: [u64; DEPTH],
}

struct Slot {
    hash: AtomicU64,
    site: AtomicU64,
    hits: AtomicU64,
    callers: [AtomicU64; DEPTH],
}

impl Slot {
    #[cfg(not(loom))]
    const fn new() -> Slot {
        Slot { hash: AtomicU64::new(0), site: AtomicU64::new(0), hits: AtomicU64::new(0), callers: [const { AtomicU64::new(0) }; DEPTH] }
    }

    #[cfg(loom)]
    fn new() -> Slot {
        Slot { hash: AtomicU64::new(0), site: AtomicU64::new(0), hits: AtomicU64::new(0), callers: core::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

/// The kernel's fail points: a mode, the armed path and a table of `N`
/// recorded paths.
pub struct FailPoints<const N: usize> {
    mode: AtomicU64,
    armed_hash: AtomicU64,
    /// Allocations on the armed path still to pass, plus one: the one that
    /// takes it from 1 to 0 fails.
    countdown: AtomicU64,
    fired: AtomicU64,
    /// Allocations seen while recording that found the table full.
    overflow: AtomicU64,
    slots: [Slot; N],
}

impl<const N: usize> FailPoints<N> {
    /// Fail points that are off, with an empty table.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        FailPoints {
            mode: AtomicU64::new(OFF),
            armed_hash: AtomicU64::new(0),
            countdown: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            slots: [const { Slot::new() }; N],
        }
    }

    /// Fail points that are off, with an empty table (loom's atomics have
    /// no `const` constructor).
    #[cfg(loom)]
    pub fn new() -> Self {
        FailPoints {
            mode: AtomicU64::new(OFF),
            armed_hash: AtomicU64::new(0),
            countdown: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            overflow: AtomicU64::new(0),
            slots: core::array::from_fn(|_| Slot::new()),
        }
    }

    /// Whether the points are off: the one question an allocation asks
    /// before it looks at its call chain.
    #[inline]
    pub fn is_off(&self) -> bool {
        self.mode.load(Ordering::Relaxed) == OFF
    }

    /// Turns the points off (a recording is kept for [`Self::paths`]).
    pub fn turn_off(&self) {
        self.mode.store(OFF, Ordering::SeqCst);
    }

    /// Empties the table and starts recording paths.
    pub fn record(&self) {
        self.mode.store(OFF, Ordering::SeqCst);
        for slot in &self.slots {
            slot.hash.store(0, Ordering::Relaxed);
            slot.hits.store(0, Ordering::Relaxed);
        }
        self.overflow.store(0, Ordering::Relaxed);
        self.mode.store(RECORDING, Ordering::SeqCst);
    }

    /// Arms path `hash`: its allocation number `skip` (from 0) fails, once.
    pub fn arm(&self, hash: u64, skip: u64) {
        self.mode.store(OFF, Ordering::SeqCst);
        self.armed_hash.store(hash, Ordering::SeqCst);
        self.countdown.store(skip.saturating_add(1), Ordering::SeqCst);
        self.fired.store(0, Ordering::SeqCst);
        self.mode.store(ARMED, Ordering::SeqCst);
    }

    /// How many allocations were failed since the last [`Self::arm`] (0 or 1).
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// Allocations the last recording could not keep (the table was full).
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// Answers an allocation at `site` whose call chain is `callers`:
    /// whether it must fail. Records its path while recording.
    pub fn should_fail(&self, site: Site, callers: &[u64]) -> bool {
        match self.mode.load(Ordering::Acquire) {
            RECORDING => {
                self.remember(site, callers);
                false
            }
            ARMED => self.armed_hash.load(Ordering::Acquire) == path_hash(site, callers) && self.count_down(),
            _ => false,
        }
    }

    /// One allocation on the armed path: true for the one that must fail.
    fn count_down(&self) -> bool {
        let before = self.countdown.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1));
        if before == Ok(1) {
            self.fired.fetch_add(1, Ordering::SeqCst);
            self.mode.store(OFF, Ordering::Release);
            return true;
        }
        false
    }

    /// Counts a hit on the path's slot, claiming a free one (open
    /// addressing from the hash) for a new path.
    fn remember(&self, site: Site, callers: &[u64]) {
        let hash = path_hash(site, callers);
        if N == 0 {
            return;
        }
        let start = (hash % N as u64) as usize;
        for probe in 0..N {
            let slot = &self.slots[(start + probe) % N];
            match slot.hash.compare_exchange(0, hash, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    slot.site.store(site as u64, Ordering::Relaxed);
                    for (kept, caller) in slot.callers.iter().zip(callers.iter().chain(core::iter::repeat(&0))) {
                        kept.store(*caller, Ordering::Relaxed);
                    }
                    slot.hits.fetch_add(1, Ordering::AcqRel);
                    return;
                }
                Err(found) if found == hash => {
                    slot.hits.fetch_add(1, Ordering::AcqRel);
                    return;
                }
                Err(_) => {}
            }
        }
        self.overflow.fetch_add(1, Ordering::Relaxed);
    }

    /// The recorded paths (read once the workload has ended).
    pub fn paths(&self) -> impl Iterator<Item = Path> + '_ {
        self.slots.iter().filter_map(|slot| {
            let hash = slot.hash.load(Ordering::Acquire);
            let site = Site::from_number(slot.site.load(Ordering::Relaxed))?;
            (hash != 0).then(|| Path {
                hash,
                site,
                hits: slot.hits.load(Ordering::Acquire),
                callers: core::array::from_fn(|index| slot.callers[index].load(Ordering::Relaxed)),
            })
        })
    }
}

#[cfg(not(loom))]
impl<const N: usize> Default for FailPoints<N> {
    fn default() -> Self {
        Self::new()
    }
}
