//! Which root table each CPU has loaded, and the two sides of the pact
//! that lets a user space's TLB shootdown skip the CPUs without it.
//!
//! A CPU about to load a root **announces** it here first (then loads
//! CR3, which walks the tables afresh: no PCIDs, user entries never
//! global). A CPU that changed a space's entries **looks** here after
//! them and asks only the CPUs that name the space's root. Each side puts
//! a SeqCst fence between its write and its read (the Dekker pair), so
//! either the look sees the announcement (that CPU is asked) or the
//! loading CPU's walk sees the new entries (it needs no asking). A CPU
//! that announced another root is at most a few instructions from loading
//! it, with interrupts off and no user address touched in between.
//!
//! Pure logic over atomics (host-tested, model-checked with loom below).
//! Must never leave out a CPU that may still use the space's old entries.

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicU64, Ordering};

#[cfg(not(loom))]
use core::sync::atomic::{fence, AtomicU64, Ordering};

/// One CPU's record: the root it has loaded or is about to load (0: none).
pub struct LoadedRoot(AtomicU64);

impl LoadedRoot {
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    #[cfg(loom)]
    pub fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// This CPU is about to load `root` (before CR3): the root recorded
    /// before. The fence keeps the table walk that follows after the
    /// record.
    pub fn announce(&self, root: u64) -> u64 {
        let previous = self.0.swap(root, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        previous
    }

    /// The recorded root.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Default for LoadedRoot {
    fn default() -> Self {
        Self::new()
    }
}

/// The CPUs among `candidates` that name `root` in `records` (indexed by
/// CPU), each given to `ask`: called after the space's entries changed.
pub fn cpus_with_root(records: &[LoadedRoot], candidates: impl Iterator<Item = usize>, root: u64, mut ask: impl FnMut(usize)) {
    fence(Ordering::SeqCst);
    for cpu in candidates {
        if records.get(cpu).is_some_and(|record| record.get() == root) {
            ask(cpu);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_cpus_naming_the_root_are_asked() {
        let records: [LoadedRoot; 4] = Default::default();
        records[0].announce(0x1000);
        records[1].announce(0x2000);
        records[3].announce(0x1000);
        let mut asked = [false; 4];
        cpus_with_root(&records, 0..5, 0x1000, |cpu| asked[cpu] = true);
        assert_eq!(asked, [true, false, false, true]);
        assert_eq!(records[3].announce(0x2000), 0x1000);
        let mut asked = [false; 4];
        cpus_with_root(&records, [1, 3].into_iter(), 0x1000, |cpu| asked[cpu] = true);
        assert_eq!(asked, [false; 4], "a CPU that moved on is not asked");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// CPU 1 switches from root A to root B while CPU 0 changes an entry
    /// of B and looks who to ask: CPU 1 is asked, or its walk (after its
    /// announcement) reads the new entry.
    fn a_loading_cpu_is_asked_or_sees_the_change(writer_fences: bool) {
        loom::model(move || {
            let records = Arc::new([LoadedRoot::new(), LoadedRoot::new()]);
            let entry = Arc::new(AtomicU64::new(1));
            records[1].announce(0xA000);
            let loader = {
                let (records, entry) = (records.clone(), entry.clone());
                loom::thread::spawn(move || {
                    records[1].announce(0xB000);
                    entry.load(Ordering::Relaxed)
                })
            };
            entry.store(2, Ordering::Relaxed);
            let mut asked = false;
            if writer_fences {
                cpus_with_root(&*records, 1..2, 0xB000, |_| asked = true);
            } else {
                asked = records[1].0.load(Ordering::Relaxed) == 0xB000;
            }
            let walked = loader.join().unwrap();
            assert!(asked || walked == 2, "CPU 1 was not asked and walked the old entry");
        });
    }

    #[test]
    fn a_cpu_loading_the_root_is_asked_or_walks_the_new_entry() {
        a_loading_cpu_is_asked_or_sees_the_change(true);
    }

    /// Negative control: without the writer's fence the old entry is
    /// walked by a CPU that was not asked.
    #[test]
    #[should_panic(expected = "not asked")]
    fn without_the_fence_a_loading_cpu_can_be_missed() {
        a_loading_cpu_is_asked_or_sees_the_change(false);
    }
}
