//! loom model of the kernel's protocol around the cache (see
//! `linux-objects/src/page_cache.rs`): every change of a file and every
//! fill of the cache happen under the file tree's lock, with the cache's
//! lock taken inside it; a reader copies a cached page while holding the
//! cache's lock; the evictor (a failed frame allocation anywhere) takes
//! only the cache's lock. Checked: a reader never copies a page the
//! evictor freed, never sees a value older than a write that finished
//! before it started, and the cached page always equals the file.
//! `RUSTFLAGS="--cfg loom" cargo test -p page-cache --release --lib`.

use crate::{Added, PageCache};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::vec::Vec;

const FILE: u32 = 1;

struct Kernel {
    /// The file's one page, as the file system holds it.
    tree: Mutex<u64>,
    cache: Mutex<PageCache<u32, usize>>,
    /// Page frames by handle: their contents, None once freed.
    frames: Mutex<Vec<Option<u64>>>,
    write_done: AtomicBool,
}

impl Kernel {
    fn read(&self) -> u64 {
        let tree = self.tree.lock().unwrap();
        {
            let mut cache = self.cache.lock().unwrap();
            if let Some(page) = cache.get(FILE, 0) {
                return self.frames.lock().unwrap()[page].expect("a reader copied a freed page");
            }
        }
        // A miss: the file is read (the kernel may sleep here, so the
        // cache's lock is not held), a page made and added.
        let value = *tree;
        let page = {
            let mut frames = self.frames.lock().unwrap();
            frames.push(Some(value));
            frames.len() - 1
        };
        let added = self.cache.lock().unwrap().add(FILE, 0, page).unwrap();
        assert_eq!(added, Added::Added, "only the tree's holder fills");
        value
    }

    fn write(&self, value: u64) {
        let mut tree = self.tree.lock().unwrap();
        *tree = value;
        let cache = self.cache.lock().unwrap();
        if let Some(page) = cache.peek(FILE, 0) {
            self.frames.lock().unwrap()[page] = Some(value);
        }
        drop(cache);
        drop(tree);
        self.write_done.store(true, Ordering::SeqCst);
    }

    fn evict(&self) {
        let mut cache = self.cache.lock().unwrap();
        cache.choose_victims(1, |_| true, |_, _, page| self.frames.lock().unwrap()[page] = None);
        // A second sweep: the first only clears "used" marks.
        cache.choose_victims(1, |_| true, |_, _, page| self.frames.lock().unwrap()[page] = None);
    }
}

#[test]
fn readers_writers_and_the_evictor_never_see_a_stale_or_freed_page() {
    loom::model(|| {
        let kernel = Arc::new(Kernel { tree: Mutex::new(1), cache: Mutex::new(PageCache::new()), frames: Mutex::new(Vec::new()), write_done: AtomicBool::new(false) });
        // A first read fills the cache.
        assert_eq!(kernel.read(), 1);
        let writer = {
            let kernel = kernel.clone();
            thread::spawn(move || kernel.write(2))
        };
        let evictor = {
            let kernel = kernel.clone();
            thread::spawn(move || kernel.evict())
        };
        let finished_before = kernel.write_done.load(Ordering::SeqCst);
        let seen = kernel.read();
        assert!(seen == 1 || seen == 2);
        if finished_before {
            assert_eq!(seen, 2, "a read after a finished write saw the old value");
        }
        writer.join().unwrap();
        evictor.join().unwrap();
        let file = *kernel.tree.lock().unwrap();
        let cache = kernel.cache.lock().unwrap();
        if let Some(page) = cache.peek(FILE, 0) {
            assert_eq!(kernel.frames.lock().unwrap()[page], Some(file), "the cached page differs from the file");
        }
    });
}
