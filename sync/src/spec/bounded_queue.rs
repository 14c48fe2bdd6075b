//! The atomic spec of [`BoundedQueue`](crate::BoundedQueue).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::ThreadNumber;

/// A bounded FIFO queue with FIFO service of the threads it blocks.
///
/// An operation completes in the step that issues it when it can (no
/// earlier thread of its kind waits, and there is room or an item), else
/// its thread joins the inserters' or removers' queue. After every step,
/// waiting threads are served head first as long as they can be. So a
/// thread waits only while the queue is full (inserters) or empty
/// (removers), and never both kinds at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundedQueueSpec<T> {
    capacity: usize,
    items: VecDeque<T>,
    inserters: VecDeque<(ThreadNumber, T)>,
    removers: VecDeque<ThreadNumber>,
}

/// An operation that completed, and with what.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueCompletion<T> {
    /// `thread`'s insert returned.
    Inserted {
        /// Who inserted.
        thread: ThreadNumber,
    },
    /// `thread`'s remove returned `item`.
    Removed {
        /// Who removed.
        thread: ThreadNumber,
        /// What it got.
        item: T,
    },
}

impl<T> BoundedQueueSpec<T> {
    /// An empty queue of `capacity` (at least 1) items.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a bounded queue holds at least one item");
        Self {
            capacity,
            items: VecDeque::new(),
            inserters: VecDeque::new(),
            removers: VecDeque::new(),
        }
    }

    /// `thread` inserts `item`; returns the operations this step completed.
    pub fn insert(&mut self, thread: ThreadNumber, item: T) -> Vec<QueueCompletion<T>> {
        self.inserters.push_back((thread, item));
        self.serve()
    }

    /// `thread` removes; returns the operations this step completed.
    pub fn remove(&mut self, thread: ThreadNumber) -> Vec<QueueCompletion<T>> {
        self.removers.push_back(thread);
        self.serve()
    }

    /// Whether an insert issued now would wait.
    pub fn insert_would_wait(&self) -> bool {
        !self.inserters.is_empty() || self.items.len() == self.capacity
    }

    /// Whether a remove issued now would wait.
    pub fn remove_would_wait(&self) -> bool {
        !self.removers.is_empty() || self.items.is_empty()
    }

    /// The items, oldest first.
    pub fn items(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Threads waiting to insert, oldest first.
    pub fn waiting_inserters(&self) -> impl Iterator<Item = ThreadNumber> + '_ {
        self.inserters.iter().map(|(thread, _)| *thread)
    }

    /// Threads waiting to remove, oldest first.
    pub fn waiting_removers(&self) -> impl Iterator<Item = ThreadNumber> + '_ {
        self.removers.iter().copied()
    }

    /// Serves waiting threads, head first, while one can go.
    fn serve(&mut self) -> Vec<QueueCompletion<T>> {
        let mut completed = Vec::new();
        loop {
            if !self.removers.is_empty() && !self.items.is_empty() {
                let thread = self.removers.pop_front().expect("checked non-empty");
                let item = self.items.pop_front().expect("checked non-empty");
                completed.push(QueueCompletion::Removed { thread, item });
            } else if !self.inserters.is_empty() && self.items.len() < self.capacity {
                let (thread, item) = self.inserters.pop_front().expect("checked non-empty");
                self.items.push_back(item);
                completed.push(QueueCompletion::Inserted { thread });
            } else {
                return completed;
            }
        }
    }
}
