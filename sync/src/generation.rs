//! A generation number for something kept under a lock, and a reader's
//! cache keyed by it: the reader uses what it cached while the generation
//! has not moved, and reads again (under the lock) once it has. The
//! kernel's user-mode entry keeps its address space's tables this way
//! (`kernel_objects::capabilities::EntryCache`), so that a system call's
//! return takes no lock when nothing changed, and each thread its last
//! descriptor look-ups (`linux_objects::descriptor_cache`).
//!
//! The protocol: a writer changes the guarded thing and calls
//! [`Generation::advance`] before it lets go of the lock; a reader takes
//! [`Generation::current`] *before* it reads the thing, and files what it
//! read under that number ([`GenerationCache::get_or_fill`] does both in
//! that order). Read the other way round, a reader could file old contents
//! under the new number and keep them for ever — the loom model below
//! finds exactly that. Must never be used for anything whose safety rests
//! on the cache being fresh: a reader may act on the old value until it
//! next looks.

use crate::atomics::{AtomicU64, Ordering};

/// A counter that moves whenever the guarded thing changes.
pub struct Generation(AtomicU64);

impl Default for Generation {
    fn default() -> Self {
        Self::new()
    }
}

impl Generation {
    loom_const_fn! {
        /// Generation 0.
        pub fn new() -> Self {
            Self(AtomicU64::new(0))
        }
    }

    /// The generation now. Acquire: pairs with [`Self::advance`], so a
    /// reader that sees the new number also sees the writer's change.
    #[inline]
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Moves to the next generation (after the change, under its lock).
    #[inline]
    pub fn advance(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    /// Moves to generation `value` if it differs from the current one
    /// (after the change, under its lock): for a guarded thing that counts
    /// its own changes, so that the count is the generation.
    #[inline]
    pub fn follow(&self, value: u64) {
        if self.0.load(Ordering::Relaxed) != value {
            self.0.store(value, Ordering::Release);
        }
    }
}

/// One reader's cached value: `(key, generation, value)` of its last fill.
pub struct GenerationCache<T: Clone>(Option<(u64, u64, T)>);

impl<T: Clone> Default for GenerationCache<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T: Clone> GenerationCache<T> {
    /// The value cached for `key` while `generation` has not moved since;
    /// else `fill()`'s, filed under the generation read *before* it ran.
    /// A `fill` error is passed on and nothing is cached.
    #[inline]
    pub fn get_or_fill<E>(&mut self, key: u64, generation: &Generation, fill: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.with(key, generation, fill, T::clone)
    }

    /// [`Self::get_or_fill`], handing `then` the value in place (no copy
    /// of it on the way: the user-mode entry's path).
    #[inline]
    pub fn with<E, R>(&mut self, key: u64, generation: &Generation, fill: impl FnOnce() -> Result<T, E>, then: impl FnOnce(&T) -> R) -> Result<R, E> {
        let now = generation.current();
        if let Some((cached_key, cached_generation, value)) = &self.0 {
            if *cached_key == key && *cached_generation == now {
                return Ok(then(value));
            }
        }
        let value = fill()?;
        let result = then(&value);
        self.0 = Some((key, now, value));
        Ok(result)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_cache_refills_when_the_key_or_the_generation_changes_and_not_otherwise() {
        let generation = Generation::new();
        let mut cache = GenerationCache::default();
        let mut fills = 0;
        let mut get = |cache: &mut GenerationCache<u32>, key: u64, value: u32| {
            cache.get_or_fill(key, &generation, || -> Result<u32, ()> {
                fills += 1;
                Ok(value)
            })
        };
        assert_eq!(get(&mut cache, 1, 10), Ok(10));
        assert_eq!(get(&mut cache, 1, 11), Ok(10), "same key, same generation: cached");
        assert_eq!(get(&mut cache, 2, 12), Ok(12), "another key");
        drop(get);
        assert_eq!(fills, 2);
        generation.advance();
        assert_eq!(cache.get_or_fill(2, &generation, || -> Result<u32, ()> { Ok(13) }), Ok(13), "a new generation");
        assert_eq!(cache.get_or_fill(2, &generation, || -> Result<u32, &str> { Err("gone") }), Ok(13));
        generation.advance();
        assert_eq!(cache.get_or_fill(2, &generation, || -> Result<u32, &str> { Err("gone") }), Err("gone"));
        assert_eq!(cache.get_or_fill(2, &generation, || -> Result<u32, &str> { Ok(14) }), Ok(14), "an error cached nothing");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::{Arc, Mutex};

    /// A writer replaces the guarded value (1 → 2) and advances under the
    /// lock while a reader looks once; after the writer is done, a second
    /// look must give 2 — no stale value filed under the new generation.
    fn a_reader_never_keeps_the_old_value(generation_first: bool) {
        loom::model(move || {
            let guarded = Arc::new((Mutex::new(1u64), Generation::new()));
            let writer = {
                let guarded = guarded.clone();
                loom::thread::spawn(move || {
                    let mut value = guarded.0.lock().unwrap();
                    *value = 2;
                    guarded.1.advance();
                })
            };
            let mut cache = GenerationCache::default();
            let read = |cache: &mut GenerationCache<u64>| {
                if generation_first {
                    cache.get_or_fill(0, &guarded.1, || -> Result<u64, ()> { Ok(*guarded.0.lock().unwrap()) }).unwrap()
                } else {
                    // The wrong order: the value first, its number after.
                    let value = *guarded.0.lock().unwrap();
                    let now = guarded.1.current();
                    match cache.0 {
                        Some((0, cached, kept)) if cached == now => kept,
                        _ => {
                            cache.0 = Some((0, now, value));
                            value
                        }
                    }
                }
            };
            let first = read(&mut cache);
            assert!(first == 1 || first == 2);
            writer.join().unwrap();
            assert_eq!(read(&mut cache), 2, "a stale value was kept");
        });
    }

    #[test]
    fn a_reader_that_reads_the_generation_first_never_keeps_the_old_value() {
        a_reader_never_keeps_the_old_value(true);
    }

    /// Negative control: reading the value before its generation files the
    /// old value under the new number.
    #[test]
    #[should_panic(expected = "stale")]
    fn reading_the_value_before_the_generation_can_keep_the_old_value() {
        a_reader_never_keeps_the_old_value(false);
    }
}
