//! The index itself: files sorted by key, each a sorted list of runs of
//! [`RUN_PAGES`] page slots, and the clock hand that sweeps them.
//!
//! Must never keep an empty run or an empty file that is not held, and
//! never count a page twice: `resident` is the number of filled slots.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Range;

/// Pages per run of slots (a run covers 256 KiB of a file).
pub const RUN_PAGES: usize = 64;

/// What the cache has done, for reports and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Lookups that found their page.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Pages added.
    pub added: u64,
    /// Pages the clock took for reuse.
    pub evicted: u64,
    /// Pages removed because their file changed or went.
    pub dropped: u64,
}

/// The result of [`PageCache::add`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added<P> {
    /// The page is the file's now.
    Added,
    /// The file already had a page there (it wins); the one given is
    /// the caller's again.
    AlreadyCached(P),
}

/// No memory to grow the index: the page given is the caller's again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRoom;

#[derive(Clone, Copy, Debug)]
struct Slot<P> {
    page: P,
    /// Used since the clock's hand last passed.
    referenced: bool,
    /// May hold stores not yet in the file (mapped shared and writable).
    marked: bool,
}

/// A run's slots are a block of their own, so that a file's list of runs
/// stays small (a 1 GiB file: 4,096 runs of 32 bytes) and never needs one
/// large block of the heap.
#[derive(Debug)]
struct Run<P> {
    /// Page index of the first slot, divided by [`RUN_PAGES`].
    number: u64,
    slots: Box<[Option<Slot<P>>]>,
    filled: usize,
}

impl<P: Copy> Run<P> {
    fn new(number: u64) -> Result<Self, NoRoom> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(RUN_PAGES).map_err(|_| NoRoom)?;
        slots.resize(RUN_PAGES, None);
        Ok(Self { number, slots: slots.into_boxed_slice(), filled: 0 })
    }
}

#[derive(Debug)]
struct CachedFile<K, P> {
    key: K,
    runs: Vec<Run<P>>,
    /// A process maps the file shared: its entry stays while empty.
    held: bool,
}

/// Where the clock's hand is: a file, a run in it, a slot in the run.
/// Removals may leave it past the end; the sweep then starts over.
#[derive(Clone, Copy, Debug, Default)]
struct Hand {
    file: usize,
    run: usize,
    slot: usize,
}

/// The cached pages of every file. `K` names a file, `P` is a page handle.
#[derive(Debug)]
pub struct PageCache<K, P> {
    files: Vec<CachedFile<K, P>>,
    resident: usize,
    hand: Hand,
    statistics: Statistics,
}

impl<K, P> Default for PageCache<K, P> {
    fn default() -> Self {
        Self::new()
    }
}

fn split(index: u64) -> (u64, usize) {
    (index / RUN_PAGES as u64, (index % RUN_PAGES as u64) as usize)
}

impl<K, P> PageCache<K, P> {
    /// An empty cache.
    pub const fn new() -> Self {
        Self { files: Vec::new(), resident: 0, hand: Hand { file: 0, run: 0, slot: 0 }, statistics: Statistics { hits: 0, misses: 0, added: 0, evicted: 0, dropped: 0 } }
    }

    /// How many pages are cached.
    pub fn resident(&self) -> usize {
        self.resident
    }

    /// What the cache has done so far.
    pub fn statistics(&self) -> Statistics {
        self.statistics
    }

    /// How many files are held (mapped shared).
    pub fn files_held(&self) -> usize {
        self.files.iter().filter(|file| file.held).count()
    }
}

impl<K: Ord + Copy, P: Copy> PageCache<K, P> {
    fn file_position(&self, key: K) -> Result<usize, usize> {
        self.files.binary_search_by(|file| file.key.cmp(&key))
    }

    fn file(&self, key: K) -> Option<&CachedFile<K, P>> {
        self.file_position(key).ok().map(|at| &self.files[at])
    }

    fn slot(&self, key: K, index: u64) -> Option<&Slot<P>> {
        let (number, within) = split(index);
        let file = self.file(key)?;
        let run = file.runs.binary_search_by(|run| run.number.cmp(&number)).ok()?;
        file.runs[run].slots[within].as_ref()
    }

    fn slot_mut(&mut self, key: K, index: u64) -> Option<&mut Slot<P>> {
        let (number, within) = split(index);
        let at = self.file_position(key).ok()?;
        let file = &mut self.files[at];
        let run = file.runs.binary_search_by(|run| run.number.cmp(&number)).ok()?;
        file.runs[run].slots[within].as_mut()
    }

    /// Page `index` of file `key`, marked as used; counts a hit or a miss.
    pub fn get(&mut self, key: K, index: u64) -> Option<P> {
        match self.slot_mut(key, index) {
            Some(slot) => {
                slot.referenced = true;
                let page = slot.page;
                self.statistics.hits += 1;
                Some(page)
            }
            None => {
                self.statistics.misses += 1;
                None
            }
        }
    }

    /// Page `index` of file `key`, without counting or marking it used.
    pub fn peek(&self, key: K, index: u64) -> Option<P> {
        self.slot(key, index).map(|slot| slot.page)
    }

    /// Makes `page` page `index` of file `key` (used just now). A page
    /// already there wins; without memory for the index, nothing changes.
    pub fn add(&mut self, key: K, index: u64, page: P) -> Result<Added<P>, NoRoom> {
        let (number, within) = split(index);
        let at = self.entry(key)?;
        let file = &mut self.files[at];
        let run = match file.runs.binary_search_by(|run| run.number.cmp(&number)) {
            Ok(run) => run,
            Err(place) => {
                let run = Run::new(number);
                if file.runs.try_reserve(1).is_err() || run.is_err() {
                    self.forget_if_empty(at);
                    return Err(NoRoom);
                }
                file.runs.insert(place, run.map_err(|_| NoRoom)?);
                place
            }
        };
        let run = &mut file.runs[run];
        if let Some(slot) = &run.slots[within] {
            return Ok(Added::AlreadyCached(slot.page));
        }
        run.slots[within] = Some(Slot { page, referenced: true, marked: false });
        run.filled += 1;
        self.resident += 1;
        self.statistics.added += 1;
        Ok(Added::Added)
    }

    /// The position of `key`'s entry, made empty if there is none.
    fn entry(&mut self, key: K) -> Result<usize, NoRoom> {
        match self.file_position(key) {
            Ok(at) => Ok(at),
            Err(place) => {
                self.files.try_reserve(1).map_err(|_| NoRoom)?;
                self.files.insert(place, CachedFile { key, runs: Vec::new(), held: false });
                Ok(place)
            }
        }
    }

    /// Removes file entry `at` if it has no page and is not held.
    fn forget_if_empty(&mut self, at: usize) {
        if self.files.get(at).is_some_and(|file| file.runs.is_empty() && !file.held) {
            self.files.remove(at);
        }
    }

    /// Holds file `key` (a process maps it shared); returns whether it was
    /// not held before.
    pub fn hold(&mut self, key: K) -> Result<bool, NoRoom> {
        let at = self.entry(key)?;
        let newly = !self.files[at].held;
        self.files[at].held = true;
        Ok(newly)
    }

    /// Whether file `key` is held.
    pub fn is_held(&self, key: K) -> bool {
        self.file(key).is_some_and(|file| file.held)
    }

    /// Calls `visit` with each cached page of `key` whose index is in
    /// `indices`, in order.
    pub fn visit(&self, key: K, indices: Range<u64>, mut visit: impl FnMut(u64, P)) {
        let Some(file) = self.file(key) else { return };
        for run in &file.runs {
            let first = run.number * RUN_PAGES as u64;
            for (within, slot) in run.slots.iter().enumerate() {
                let index = first + within as u64;
                if let Some(slot) = slot.filter(|_| indices.contains(&index)) {
                    visit(index, slot.page);
                }
            }
        }
    }

    /// Calls `visit` with each index in `indices` that has no page for
    /// `key`, in order.
    pub fn visit_missing(&self, key: K, indices: Range<u64>, mut visit: impl FnMut(u64)) {
        for index in indices {
            if self.slot(key, index).is_none() {
                visit(index);
            }
        }
    }

    /// Marks the cached pages of `key` in `indices` as maybe holding
    /// stores the file does not have yet (a writable shared mapping).
    pub fn mark(&mut self, key: K, indices: Range<u64>) {
        for index in indices {
            if let Some(slot) = self.slot_mut(key, index) {
                slot.marked = true;
            }
        }
    }

    /// Calls `visit` with each marked page of `key`, in order.
    pub fn visit_marked(&self, key: K, mut visit: impl FnMut(u64, P)) {
        let Some(file) = self.file(key) else { return };
        for run in &file.runs {
            for (within, slot) in run.slots.iter().enumerate() {
                if let Some(slot) = slot.filter(|slot| slot.marked) {
                    visit(run.number * RUN_PAGES as u64 + within as u64, slot.page);
                }
            }
        }
    }

    /// Calls `visit` with every page of every held file (file, index,
    /// page), in order.
    pub fn visit_all_held(&self, mut visit: impl FnMut(K, u64, P)) {
        for file in self.files.iter().filter(|file| file.held) {
            for run in &file.runs {
                for (within, slot) in run.slots.iter().enumerate() {
                    if let Some(slot) = slot {
                        visit(file.key, run.number * RUN_PAGES as u64 + within as u64, slot.page);
                    }
                }
            }
        }
    }

    /// Calls `visit` with each file that has a marked page, in key order.
    pub fn visit_files_with_marks(&self, mut visit: impl FnMut(K)) {
        for file in &self.files {
            if file.runs.iter().any(|run| run.slots.iter().flatten().any(|slot| slot.marked)) {
                visit(file.key);
            }
        }
    }

    /// Clears the mark of page `index` of `key` (its stores are in the
    /// file and nobody maps it any more).
    pub fn unmark(&mut self, key: K, index: u64) {
        if let Some(slot) = self.slot_mut(key, index) {
            slot.marked = false;
        }
    }

    /// Removes page `index` of `key` and hands it back.
    pub fn remove(&mut self, key: K, index: u64) -> Option<P> {
        let mut removed = None;
        self.remove_where(key, index..index + 1, |page| removed = Some(page));
        removed
    }

    /// Removes every page of `key` at or past index `first` (the file was
    /// cut short), handing each to `give`.
    pub fn remove_from(&mut self, key: K, first: u64, give: impl FnMut(P)) {
        self.remove_where(key, first..u64::MAX, give);
    }

    fn remove_where(&mut self, key: K, indices: Range<u64>, mut give: impl FnMut(P)) {
        let Ok(at) = self.file_position(key) else { return };
        let file = &mut self.files[at];
        let mut removed = 0;
        for run in &mut file.runs {
            let first = run.number * RUN_PAGES as u64;
            for (within, slot) in run.slots.iter_mut().enumerate() {
                if indices.contains(&(first + within as u64)) {
                    if let Some(slot) = slot.take() {
                        give(slot.page);
                        run.filled -= 1;
                        removed += 1;
                    }
                }
            }
        }
        file.runs.retain(|run| run.filled > 0);
        self.resident -= removed;
        self.statistics.dropped += removed as u64;
        self.forget_if_empty(at);
    }

    /// Removes file `key` (its inode was freed, or the kernel lets go of
    /// it), handing each page to `give`; returns whether it was held.
    pub fn remove_file(&mut self, key: K, give: impl FnMut(P)) -> bool {
        let Ok(at) = self.file_position(key) else { return false };
        let file = self.files.remove(at);
        self.give_all(file, give)
    }

    /// Removes every file whose key `doomed` picks (a file system was
    /// unmounted), handing each page to `give`; returns how many of them
    /// were held.
    pub fn remove_files(&mut self, mut doomed: impl FnMut(K) -> bool, mut give: impl FnMut(P)) -> usize {
        let mut held = 0;
        let mut at = 0;
        while at < self.files.len() {
            if doomed(self.files[at].key) {
                let file = self.files.remove(at);
                held += usize::from(self.give_all(file, &mut give));
            } else {
                at += 1;
            }
        }
        held
    }

    fn give_all(&mut self, file: CachedFile<K, P>, mut give: impl FnMut(P)) -> bool {
        for run in file.runs {
            for slot in run.slots.iter().flatten() {
                give(slot.page);
                self.resident -= 1;
                self.statistics.dropped += 1;
            }
        }
        file.held
    }

    /// Takes up to `wanted` pages for reuse, clock fashion: the hand
    /// sweeps every page at most twice; a page used since it last passed
    /// gets a second chance, a marked page, a page of a held file or one
    /// `idle` says is in use elsewhere is passed over. Each page taken goes to `take` with its
    /// file and index. Returns how many were taken.
    pub fn choose_victims(&mut self, wanted: usize, mut idle: impl FnMut(P) -> bool, mut take: impl FnMut(K, u64, P)) -> usize {
        let mut taken = 0;
        let mut looked = 0;
        let limit = self.resident.saturating_mul(2);
        while taken < wanted && looked < limit {
            let Some(hand) = self.next_filled() else { break };
            let file = &mut self.files[hand.file];
            if file.held {
                // A process maps it: its pages may be mid-way into a space.
                looked += file.runs.iter().map(|run| run.filled).sum::<usize>();
                self.hand = Hand { file: hand.file + 1, run: 0, slot: 0 };
                continue;
            }
            looked += 1;
            let key = file.key;
            let run = &mut file.runs[hand.run];
            let index = run.number * RUN_PAGES as u64 + hand.slot as u64;
            let Some(slot) = run.slots[hand.slot].as_mut() else { break };
            if slot.referenced {
                slot.referenced = false;
            } else if !slot.marked && idle(slot.page) {
                let page = slot.page;
                run.slots[hand.slot] = None;
                run.filled -= 1;
                self.resident -= 1;
                self.statistics.evicted += 1;
                taken += 1;
                take(key, index, page);
                if run.filled == 0 {
                    file.runs.remove(hand.run);
                    self.forget_if_empty(hand.file);
                    self.hand.slot = 0;
                    continue;
                }
            }
            self.hand.slot += 1;
        }
        taken
    }

    /// Moves the hand to the next filled slot (from where it is, wrapping
    /// around once); None when the cache is empty.
    fn next_filled(&mut self) -> Option<Hand> {
        if self.resident == 0 {
            return None;
        }
        let mut hand = self.hand;
        // At most every slot once, plus the wrap.
        for _ in 0..=self.resident.saturating_mul(RUN_PAGES) + self.files.len() * 2 + 2 {
            let Some(file) = self.files.get(hand.file) else {
                hand = Hand::default();
                continue;
            };
            let Some(run) = file.runs.get(hand.run) else {
                hand = Hand { file: hand.file + 1, run: 0, slot: 0 };
                continue;
            };
            match run.slots.get(hand.slot) {
                Some(Some(_)) => {
                    self.hand = hand;
                    return Some(hand);
                }
                Some(None) => hand.slot += 1,
                None => hand = Hand { file: hand.file, run: hand.run + 1, slot: 0 },
            }
        }
        None
    }
}
