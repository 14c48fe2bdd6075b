//! `Containers`: the quota tree — its table, construction and queries. The
//! operations live next door: charge and release in `charging.rs`, create
//! and destroy in `tree_changes.rs`. Nothing here may change a count.

use alloc::boxed::Box;
use alloc::vec::Vec;

use spinlock::{NoGuard, SpinLock, Untracked};

use crate::counters::{Counters, Settled};
use crate::shape::Shape;
use crate::tree_lock::{Spinning, TreeGuard, TreeLock};
use crate::usage_word::UsageWord;
use crate::{ContainerId, QuotaError, TreeLocking, CONTAINERS_LEVEL, MAX_PAGES};

/// How many containers [`Containers::new`] makes room for.
pub const DEFAULT_CAPACITY: usize = 1024;

/// The largest container table: 16 Mi containers (32 bytes of counters
/// each, plus the shape).
pub const MAX_CAPACITY: usize = 1 << 24;

/// A tree of page quotas (see the crate documentation), callable from every
/// CPU at once, whose tree lock behaves as `L` says: in the kernel
/// `Spinning<IrqOff, PerCpuLevels>` (`spinlock::kernel`'s policy and
/// per-CPU levels), on the host `StdContainers`' `StdLocking` (feature
/// `std`). The default, `Spinning<NoGuard, Untracked>`, switches nothing
/// off and checks no lock order.
///
/// Every operation refines the same operation of
/// [`ContainersSpec`](crate::spec::ContainersSpec).
pub struct Containers<L: TreeLocking = Spinning<NoGuard, Untracked>> {
    /// One slot per possible container, indexed by [`ContainerId::index`]:
    /// the counters charges and releases change without the lock.
    pub(crate) counters: Box<[Counters]>,
    /// The tree's shape, under the tree lock.
    pub(crate) shape: TreeLock<Shape, L>,
    root: ContainerId,
}

/// The tree as host programs and tests use it: nothing switched off, the
/// lock order checked per host thread, waiters yield.
#[cfg(any(test, feature = "std"))]
pub type StdContainers = Containers<crate::StdLocking>;

impl<L: TreeLocking> Containers<L> {
    /// A tree whose root holds `root_quota` pages, with room for
    /// [`DEFAULT_CAPACITY`] containers.
    ///
    /// Errors: as [`with_capacity`](Self::with_capacity).
    pub fn new(root_quota: u64) -> Result<Self, QuotaError> {
        Self::with_capacity(root_quota, DEFAULT_CAPACITY)
    }

    /// A tree whose root holds `root_quota` pages, with room for `capacity`
    /// containers at once (the root, live ones, and destroyed ones that
    /// still have pages charged). The only allocation the tree ever makes.
    ///
    /// Errors: [`QuotaError::QuotaTooLarge`] above [`MAX_PAGES`],
    /// [`QuotaError::CapacityOutOfRange`] for 0 or above [`MAX_CAPACITY`],
    /// [`QuotaError::OutOfKernelMemory`] when the heap cannot hold the table.
    pub fn with_capacity(root_quota: u64, capacity: usize) -> Result<Self, QuotaError> {
        if root_quota > MAX_PAGES {
            return Err(QuotaError::QuotaTooLarge { asked: root_quota });
        }
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(QuotaError::CapacityOutOfRange { asked: capacity });
        }
        let mut counters = Vec::new();
        counters
            .try_reserve_exact(capacity)
            .map_err(|_| QuotaError::OutOfKernelMemory)?;
        counters.extend((0..capacity).map(|_| Counters::new()));
        let (shape, root) = Shape::with_root(capacity)?;
        counters[root.slot()].begin_life(root.generation(), root_quota);
        Ok(Self {
            counters: counters.into_boxed_slice(),
            shape: SpinLock::new(CONTAINERS_LEVEL, shape),
            root,
        })
    }

    /// The root container, which holds every page and is never destroyed.
    pub fn root(&self) -> ContainerId {
        self.root
    }

    /// How many containers fit at once.
    pub fn capacity(&self) -> usize {
        self.counters.len()
    }

    /// Pages `id` uses: pages it charged plus pages held for its children
    /// (the quotas of live ones, what destroyed ones still have charged).
    /// Takes no lock.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn usage(&self, id: ContainerId) -> Result<u64, QuotaError> {
        Ok(self.live_word(id)?.pages)
    }

    /// `id`'s quota in pages.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn quota(&self, id: ContainerId) -> Result<u64, QuotaError> {
        self.read_live(id, |quota, _, _| quota)
    }

    /// Pages `id` can still charge or carve out: quota minus usage.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn available(&self, id: ContainerId) -> Result<u64, QuotaError> {
        self.read_live(id, |quota, _, word| quota.saturating_sub(word.pages))
    }

    /// Pages `id` charged itself and has not released: usage minus the
    /// pages held for children. At most this much can be released.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn charged(&self, id: ContainerId) -> Result<u64, QuotaError> {
        self.read_live(id, |_, held, word| word.pages.saturating_sub(held))
    }

    /// `id`'s parent; `None` for the root.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn parent(&self, id: ContainerId) -> Result<Option<ContainerId>, QuotaError> {
        Ok(self.lock_tree().live(id)?.parent)
    }

    /// How many live children `id` has.
    ///
    /// Errors: [`QuotaError::NoSuchContainer`] unless `id` is alive.
    pub fn children_count(&self, id: ContainerId) -> Result<usize, QuotaError> {
        Ok(self.lock_tree().live(id)?.children)
    }

    /// Takes the tree lock.
    pub(crate) fn lock_tree(&self) -> TreeGuard<'_, Shape, L> {
        L::lock(&self.shape)
    }

    /// `id`'s counters, if the id's slot exists.
    pub(crate) fn counters_of(&self, id: ContainerId) -> Result<&Counters, QuotaError> {
        self.counters
            .get(id.slot())
            .ok_or(QuotaError::NoSuchContainer)
    }

    /// The usage word of the live container `id`, read without the lock.
    fn live_word(&self, id: ContainerId) -> Result<UsageWord, QuotaError> {
        self.counters_of(id)?
            .live_word(id.generation())
            .ok_or(QuotaError::NoSuchContainer)
    }

    /// `read` of the quota, held pages and usage word of the live
    /// container `id`, taken together: without the lock in the common case,
    /// under it when a phase change got in the way.
    fn read_live<T>(
        &self,
        id: ContainerId,
        read: impl Fn(u64, u64, UsageWord) -> T,
    ) -> Result<T, QuotaError> {
        let counters = self.counters_of(id)?;
        match counters.settled_read(id.generation(), &read) {
            Settled::Read(value) => return Ok(value),
            Settled::NotAlive => return Err(QuotaError::NoSuchContainer),
            Settled::Unsettled => {}
        }
        // Under the lock no life begins or ends and no held pages change.
        let mut shape = self.lock_tree();
        shape.live(id)?;
        let word = counters
            .live_word(id.generation())
            .ok_or(QuotaError::NoSuchContainer)?;
        let value = read(counters.quota(), counters.held(), word);
        drop(shape);
        Ok(value)
    }
}

impl<L: TreeLocking> core::fmt::Debug for Containers<L> {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        formatter
            .debug_struct("Containers")
            .field("capacity", &self.capacity())
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}
