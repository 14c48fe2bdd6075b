//! Stress on std threads: eight threads charge and release on shared
//! containers and on their own, and create and destroy their own, all at
//! once. Usage never exceeds quota, every page a thread charged can be
//! released (through the dead id too), and once everything is released and
//! destroyed the root has its whole quota back: no page was lost or made up.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::thread;
use std::vec::Vec;

use testkit::Rng;

use crate::{ContainerId, QuotaError, StdContainers};

const THREADS: u64 = 8;
const STEPS: usize = 100_000;
const ROOT_QUOTA: u64 = 10_000;
const SHARED_QUOTA: u64 = 3_000;

/// One thread's view: the live containers it made (with their parents),
/// the pages it charged per id (alive or dead), and what it got done.
struct Worker {
    containers: Arc<StdContainers>,
    shared: [ContainerId; 3],
    own: Vec<(ContainerId, ContainerId)>,
    charged: BTreeMap<ContainerId, u64>,
    done: Done,
    rng: Rng,
}

/// How many operations of each kind succeeded, to show the test raced
/// every kind against the others.
#[derive(Clone, Copy, Debug, Default)]
struct Done {
    charges: u64,
    releases: u64,
    releases_through_dead_ids: u64,
    creations: u64,
    destructions: u64,
}

impl Worker {
    /// One random operation. Destroying is a little likelier than
    /// creating, so that each thread's containers stay few and the table
    /// (64 slots) rarely fills up for long.
    fn step(&mut self) {
        match self.rng.below(100) {
            0..=44 => self.charge(),
            45..=84 => self.release_some(),
            85..=91 => self.create(),
            _ => self.destroy_a_leaf(),
        }
    }

    fn charge(&mut self) {
        let id = match self.rng.below(2) {
            0 if !self.own.is_empty() => self.own[self.rng.below(self.own.len())].0,
            _ => self.shared[self.rng.below(3)],
        };
        let pages = 1 + self.rng.below(8) as u64;
        match self.containers.charge(id, pages) {
            Ok(()) => {
                *self.charged.entry(id).or_default() += pages;
                self.done.charges += 1;
            }
            Err(QuotaError::Exhausted { asked, .. }) => assert_eq!(asked, pages),
            Err(error) => panic!("charging {pages} to {id}: {error}"),
        }
        let (usage, quota) = (self.containers.usage(id), self.containers.quota(id));
        if let (Ok(usage), Ok(quota)) = (usage, quota) {
            assert!(usage <= quota, "{id}: usage {usage} above quota {quota}");
        }
    }

    /// Releases part of what this thread charged to one id, alive or dead:
    /// never refused, since only this thread releases these pages.
    fn release_some(&mut self) {
        let Some((&id, &pages)) = self.charged.iter().nth(self.rng.below(self.charged.len()))
        else {
            return;
        };
        let part = 1 + self.rng.below(pages as usize) as u64;
        self.release(id, part);
    }

    fn release(&mut self, id: ContainerId, pages: u64) {
        let dead = self.containers.quota(id).is_err();
        let result = self.containers.release(id, pages);
        assert_eq!(
            result,
            Ok(()),
            "releasing {pages} of the pages this thread charged to {id}"
        );
        self.done.releases += 1;
        self.done.releases_through_dead_ids += u64::from(dead);
        let left = self.charged.get_mut(&id).expect("charged before");
        *left -= pages;
        if *left == 0 {
            self.charged.remove(&id);
        }
    }

    /// A child of a shared container or of one of this thread's own.
    fn create(&mut self) {
        let parent = match self.rng.below(3) {
            0 if !self.own.is_empty() => self.own[self.rng.below(self.own.len())].0,
            choice => self.shared[1 + choice % 2],
        };
        match self
            .containers
            .create_child(parent, 1 + self.rng.below(50) as u64)
        {
            Ok(child) => {
                self.own.push((child, parent));
                self.done.creations += 1;
            }
            Err(QuotaError::Exhausted { .. } | QuotaError::TooManyContainers) => {}
            Err(error) => panic!("creating a child of {parent}: {error}"),
        }
    }

    /// Destroys one of this thread's containers that has no live child;
    /// its charged pages stay in `charged`, to be released through the
    /// dead id.
    fn destroy_a_leaf(&mut self) {
        let leaves: Vec<usize> = (0..self.own.len())
            .filter(|&at| self.own.iter().all(|&(_, parent)| parent != self.own[at].0))
            .collect();
        if leaves.is_empty() {
            return;
        }
        let (id, _) = self.own.swap_remove(leaves[self.rng.below(leaves.len())]);
        let destroyed = self.containers.destroy(id);
        assert!(destroyed.is_ok(), "destroying the leaf {id}: {destroyed:?}");
        self.done.destructions += 1;
    }

    /// Releases everything this thread charged and destroys all it made.
    fn clean_up(&mut self) {
        while let Some((&id, &pages)) = self.charged.iter().next() {
            self.release(id, pages);
        }
        while !self.own.is_empty() {
            self.destroy_a_leaf();
        }
    }
}

#[test]
fn racing_threads_never_exceed_a_quota_and_lose_no_page() {
    let containers = Arc::new(StdContainers::with_capacity(ROOT_QUOTA, 64).unwrap());
    let root = containers.root();
    let shared = [
        root,
        containers.create_child(root, SHARED_QUOTA).unwrap(),
        containers.create_child(root, SHARED_QUOTA).unwrap(),
    ];
    let start = Arc::new(Barrier::new(THREADS as usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|seed| {
            let (containers, start) = (containers.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let (own, charged, done) = (Vec::new(), BTreeMap::new(), Done::default());
                let mut worker = Worker {
                    containers,
                    shared,
                    own,
                    charged,
                    done,
                    rng: Rng::new(seed),
                };
                (0..STEPS).for_each(|_| worker.step());
                worker.clean_up();
                worker.done
            })
        })
        .collect();
    for worker in workers {
        let done = worker.join().expect("a worker failed");
        let all = [
            done.charges,
            done.releases,
            done.releases_through_dead_ids,
            done.creations,
            done.destructions,
        ];
        assert!(
            all.iter().all(|&count| count > 0),
            "a worker left a kind of operation out: {done:?}"
        );
    }
    for id in shared {
        assert_eq!(containers.charged(id), Ok(0), "{id} after every release");
        assert_eq!(
            containers.children_count(id),
            Ok(if id == root { 2 } else { 0 })
        );
    }
    assert_eq!(containers.usage(shared[1]), Ok(0));
    assert_eq!(
        containers.usage(root),
        Ok(2 * SHARED_QUOTA),
        "the root holds exactly its children's quotas"
    );
    shared[1..]
        .iter()
        .for_each(|&id| assert!(containers.destroy(id).is_ok()));
    assert_eq!(
        containers.available(root),
        Ok(ROOT_QUOTA),
        "the root has its whole quota back"
    );
    let refilled = (1..containers.capacity())
        .filter(|_| containers.create_child(root, 1).is_ok())
        .count();
    assert_eq!(
        refilled,
        containers.capacity() - 1,
        "every slot is free again"
    );
}
