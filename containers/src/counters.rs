//! `Counters`: one slot's atomics, and the lock-free charge and release on
//! them. Must never take the tree lock (the callers in `charging.rs` and
//! `tree_changes.rs` decide when it is held) and never let usage pass the
//! quota.
//!
//! **Memory orders.** The usage word is the only word written without the
//! tree lock. The other fields (generation, quota, held pages) are written
//! only under the tree lock, and only between two changes of the word's
//! phase: after the acquire-order swap that ends a life or starts a
//! reshape, before the release-order write that starts a life or ends a
//! reshape. Fields are stored with release order and loaded with acquire
//! order, always after an acquire-order load of the word. So:
//! - a reader that sees a word sees at least the fields written before it;
//! - a reader that sees a field value written after a later phase change
//!   is ordered after that change, so whatever it reads of the word next
//!   shows the change: a compare-and-swap then fails (and retries on fresh
//!   facts), a query's second look sees a new stamp (and asks again under
//!   the lock).
//!
//! A successful swap therefore acted on the fields of the very word it
//! replaced: the operation happened atomically at the swap, which is what
//! `spec` says.

use core::convert::Infallible;

use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::usage_word::{Phase, UsageWord};
use crate::QuotaError;

/// The atomics of one slot of the container table.
pub(crate) struct Counters {
    /// The packed [`UsageWord`]: usage, phase, stamp.
    usage: AtomicU64,
    /// The generation of the container living here (meaningless while the
    /// word is dead).
    generation: AtomicU32,
    /// The container's quota, fixed for its life.
    quota: AtomicU64,
    /// Pages of the usage held for children: quotas of live children plus
    /// pages still charged to destroyed ones. Changes only in the
    /// `Reshaping` phase, under the tree lock.
    held: AtomicU64,
}

/// What a lock-free release found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FastRelease {
    /// Released.
    Done,
    /// Refused: more than charged, nothing changed.
    Refused(QuotaError),
    /// Not decidable without the tree lock: the container is reshaping,
    /// or it is not alive (a destroyed container's release is forwarded).
    NeedsLock,
}

/// What a lock-free query found.
pub(crate) enum Settled<T> {
    /// The answer, for one moment of the container's life.
    Read(T),
    /// No such living container.
    NotAlive,
    /// Its held pages, or its life, changed meanwhile: ask under the lock.
    Unsettled,
}

/// A change of the pages a container holds for its children, made under
/// the tree lock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HeldChange {
    /// Carve a child's quota: usage and held pages grow, if the quota covers it.
    Grow(u64),
    /// Pages a child gave back (its unused quota at destroy, or a release
    /// forwarded from a dead child): usage and held pages shrink.
    Shrink(u64),
}

impl Counters {
    /// A slot with no container.
    pub(crate) fn new() -> Self {
        Self {
            usage: AtomicU64::new(UsageWord::UNUSED.pack()),
            generation: AtomicU32::new(0),
            quota: AtomicU64::new(0),
            held: AtomicU64::new(0),
        }
    }

    /// The usage word, if it belongs to the living container of
    /// `generation`.
    pub(crate) fn live_word(&self, generation: u32) -> Option<UsageWord> {
        let word = self.load_word();
        self.belongs_to(word, generation).then_some(word)
    }

    /// The quota of the living container. Under the tree lock, or after
    /// reading its word (and then only as good as that word: module comment).
    pub(crate) fn quota(&self) -> u64 {
        // Acquire: pairs with `begin_life`'s release store (module comment).
        self.quota.load(Ordering::Acquire)
    }

    /// The pages held for children. Under the tree lock, or after reading
    /// the word (and then only as good as that word: module comment).
    pub(crate) fn held(&self) -> u64 {
        // Acquire: pairs with the release stores of `begin_life` and
        // `change_held` (module comment).
        self.held.load(Ordering::Acquire)
    }

    /// `read` of the quota, held pages and usage word of the living
    /// container of `generation`, without the lock, if no phase change came
    /// while reading them; refines the spec's queries.
    pub(crate) fn settled_read<T>(
        &self,
        generation: u32,
        read: impl FnOnce(u64, u64, UsageWord) -> T,
    ) -> Settled<T> {
        let Some(before) = self.live_word(generation) else {
            return Settled::NotAlive;
        };
        if before.phase != Phase::Live {
            return Settled::Unsettled;
        }
        let (quota, held) = (self.quota(), self.held());
        let after = self.load_word();
        match (after.stamp, after.phase) == (before.stamp, before.phase) {
            true => Settled::Read(read(quota, held, after)),
            false => Settled::Unsettled,
        }
    }

    /// Adds `pages` to the usage of the container of `generation` unless
    /// that passes its quota. Refines `ContainersSpec::charge`.
    pub(crate) fn charge(&self, generation: u32, pages: u64) -> Result<(), QuotaError> {
        self.update(|word| {
            if !self.belongs_to(word, generation) {
                return Err(QuotaError::NoSuchContainer);
            }
            let available = self.quota().saturating_sub(word.pages);
            if pages > available {
                return Err(QuotaError::Exhausted {
                    asked: pages,
                    available,
                });
            }
            // No overflow: pages <= available = quota - usage.
            Ok(word.with_pages(word.pages + pages))
        })
        .map(drop)
    }

    /// Takes `pages` off the usage of the live container of `generation`
    /// unless that is more than it charged itself (usage minus held pages).
    /// Refines `ContainersSpec::release` for a live container.
    pub(crate) fn try_release(&self, generation: u32, pages: u64) -> FastRelease {
        let released = self.update(|word| {
            if word.phase != Phase::Live || !self.belongs_to(word, generation) {
                return Err(FastRelease::NeedsLock);
            }
            // The held pages that go with this word (module comment).
            let charged = word.pages.saturating_sub(self.held());
            if pages > charged {
                return Err(FastRelease::Refused(QuotaError::OverRelease {
                    asked: pages,
                    charged,
                }));
            }
            Ok(word.with_pages(word.pages - pages))
        });
        released.map_or_else(|outcome| outcome, |_| FastRelease::Done)
    }

    /// Whether `word`, just read, is that of the living container of
    /// `generation`.
    fn belongs_to(&self, word: UsageWord, generation: u32) -> bool {
        // Acquire: pairs with `begin_life`'s release store; a later life's
        // generation just means this one ended (module comment).
        word.phase.is_alive() && self.generation.load(Ordering::Acquire) == generation
    }

    /// The compare-and-swap loop: swaps in `step` of the current word until
    /// no one changed the word in between, or `step` refuses. Returns the
    /// word it replaced.
    ///
    /// A refusal swaps nothing, so no swap vouches for the fields `step`
    /// read along with the word: the word is read again, and the refusal
    /// stands only if no phase change came in between (the fields were then
    /// those of the first read's moment: module comment); otherwise `step`
    /// runs again on the new word.
    fn update<E>(
        &self,
        mut step: impl FnMut(UsageWord) -> Result<UsageWord, E>,
    ) -> Result<UsageWord, E> {
        let mut word = self.load_word();
        loop {
            let next = match step(word) {
                Ok(next) => next,
                Err(refusal) => {
                    let again = self.load_word();
                    if (again.stamp, again.phase) == (word.stamp, word.phase) {
                        return Err(refusal);
                    }
                    word = again;
                    continue;
                }
            };
            // AcqRel: tree changes need both (acquire before they write the
            // fields, release to publish them); charges and releases need
            // acquire only, on failure too (the retry reads the fields
            // again), and share the loop.
            match self.usage.compare_exchange(
                word.pack(),
                next.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(word),
                Err(seen) => word = UsageWord::unpack(seen),
            }
        }
    }

    /// The usage word as it is now.
    fn load_word(&self) -> UsageWord {
        // Acquire: pairs with the release-order writes of the word, so the
        // fields read after it are at least this word's, and keeps the
        // field loads before it where they were (module comment).
        UsageWord::unpack(self.usage.load(Ordering::Acquire))
    }
}

/// Tree changes: callers hold the tree lock, so the phase of a live word is
/// `Live` on entry, and nobody else writes the generation, quota or held
/// pages.
impl Counters {
    /// Starts the life of the container `generation` with `quota`, in a
    /// dead slot.
    pub(crate) fn begin_life(&self, generation: u32, quota: u64) {
        // Release: field stores (module comment); the word's store below
        // publishes them to readers of the new life.
        self.generation.store(generation, Ordering::Release);
        self.quota.store(quota, Ordering::Release);
        self.held.store(0, Ordering::Release);
        // Relaxed: a dead word is only written under the tree lock, which we hold.
        let dead = UsageWord::unpack(self.usage.load(Ordering::Relaxed));
        debug_assert_eq!(dead.phase, Phase::Dead, "a new container in a live slot");
        // Release: publishes the fields above with the live word. A plain
        // store is enough: no lock-free path swaps a dead word.
        self.usage.store(
            dead.entering(Phase::Live).with_pages(0).pack(),
            Ordering::Release,
        );
    }

    /// Ends the life of the living container: from this swap on, charges
    /// and lock-free releases on it fail. Returns its final usage and the
    /// part of it held for (dead) children.
    pub(crate) fn end_life(&self) -> (u64, u64) {
        let Ok(last) = self.update(|word| {
            debug_assert_eq!(word.phase, Phase::Live, "ending a life not live");
            Ok::<_, Infallible>(word.entering(Phase::Dead).with_pages(0))
        });
        (last.pages, self.held())
    }

    /// Changes the held pages by `change`, and usage with them, inside a
    /// `Reshaping` phase so that no lock-free release pairs the old held
    /// pages with the new usage. Growing fails, changing nothing, when the
    /// quota cannot cover it (refines the carving in
    /// `ContainersSpec::create_child`).
    pub(crate) fn change_held(&self, change: HeldChange) -> Result<(), QuotaError> {
        let quota = self.quota();
        self.update(|word| {
            debug_assert_eq!(word.phase, Phase::Live, "reshaping a container not live");
            let pages = match change {
                HeldChange::Grow(pages) => {
                    let available = quota.saturating_sub(word.pages);
                    if pages > available {
                        return Err(QuotaError::Exhausted {
                            asked: pages,
                            available,
                        });
                    }
                    word.pages + pages
                }
                HeldChange::Shrink(pages) => shrunk(word.pages, pages),
            };
            Ok(word.entering(Phase::Reshaping).with_pages(pages))
        })?;
        // Release: a field store (module comment); the swap back to `Live`
        // publishes it. No overflow: held <= usage and usage + pages <= quota.
        // (One read-modify-write rather than a load and a store, which also
        // keeps loom's partial-order reduction from losing the race with a
        // release's load: tokio-rs/loom#166.)
        match change {
            HeldChange::Grow(pages) => {
                self.held.fetch_add(pages, Ordering::Release);
            }
            HeldChange::Shrink(pages) => {
                let before = self.held.fetch_sub(pages, Ordering::Release);
                debug_assert!(
                    pages <= before,
                    "giving back {pages} pages of {before} held"
                );
            }
        }
        let Ok(_) = self.update(|word| Ok::<_, Infallible>(word.entering(Phase::Live)));
        Ok(())
    }
}

/// `count - pages`, for pages given back: usage is never below the held
/// pages and those never below what a child gives back, so less is a broken
/// invariant (a bug: debug builds stop).
fn shrunk(count: u64, pages: u64) -> u64 {
    debug_assert!(pages <= count, "giving back {pages} pages of {count}");
    count.saturating_sub(pages)
}
