//! The atomic specification of a FIFO lock, as plain data.
//!
//! A lock is a queue of CPUs: the first holds the lock (whether or not it
//! has noticed yet), the rest wait in arrival order. Each operation is one
//! atomic step. Both [`TicketLock`](crate::TicketLock) and
//! [`McsLock`](crate::McsLock) refine it: their step functions (`take_ticket`
//! / `arrive`, `is_my_turn`, `release`, `try_lock`) give the same observable
//! results as the step of the same name here, which the refinement tests
//! check on random step sequences and the loom tests under all
//! interleavings. Mutual exclusion and FIFO order are evident here: only the
//! front of the queue holds the lock, and the queue only grows at the back.
//!
//! Fixed capacity (`CPUS`, each in the queue at most once), so that the spec
//! needs no allocator, like the layer it specifies.

/// A FIFO lock for the CPUs `0..CPUS`.
#[derive(Clone, Debug)]
pub struct FifoLock<const CPUS: usize> {
    /// A ring: `queue[first]` holds the lock, then the waiters in order.
    queue: [usize; CPUS],
    first: usize,
    length: usize,
    /// The number the next arrival gets (the ticket, in a ticket lock);
    /// counts modulo 2³².
    next_number: u32,
}

/// What a CPU learns by arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecArrival {
    /// Its arrival number: the previous arrival's plus one, modulo 2³².
    pub number: u32,
    /// The CPU it queued behind, or `None` if it took the free lock.
    pub behind: Option<usize>,
}

impl<const CPUS: usize> FifoLock<CPUS> {
    /// A free lock whose first arrival gets number `first_number`.
    pub const fn new(first_number: u32) -> Self {
        Self {
            queue: [0; CPUS],
            first: 0,
            length: 0,
            next_number: first_number,
        }
    }

    /// `cpu` joins the back of the queue. Precondition: it is not in it.
    pub fn arrive(&mut self, cpu: usize) -> SpecArrival {
        assert!(!self.contains(cpu), "spec: CPU {cpu} arrives while queued");
        let behind = self.last();
        let number = self.next_number;
        self.next_number = number.wrapping_add(1);
        self.queue[(self.first + self.length) % CPUS] = cpu;
        self.length += 1;
        SpecArrival { number, behind }
    }

    /// Whether `cpu` holds the lock: it is first in the queue.
    pub fn is_my_turn(&self, cpu: usize) -> bool {
        self.holder() == Some(cpu)
    }

    /// `cpu` leaves the lock to the next in the queue. Precondition: it
    /// holds the lock.
    pub fn release(&mut self, cpu: usize) {
        assert!(
            self.is_my_turn(cpu),
            "spec: CPU {cpu} releases a lock it does not hold"
        );
        self.first = (self.first + 1) % CPUS;
        self.length -= 1;
    }

    /// `cpu` takes the lock if the queue is empty, returning its arrival
    /// number; otherwise nothing changes.
    pub fn try_lock(&mut self, cpu: usize) -> Option<u32> {
        if self.length != 0 {
            return None;
        }
        Some(self.arrive(cpu).number)
    }

    /// The CPU holding the lock.
    pub fn holder(&self) -> Option<usize> {
        (self.length != 0).then(|| self.queue[self.first])
    }

    /// Whether some CPU holds the lock.
    pub fn is_locked(&self) -> bool {
        self.length != 0
    }

    /// Whether `cpu` holds or waits for the lock.
    pub fn contains(&self, cpu: usize) -> bool {
        (0..self.length).any(|place| self.queue[(self.first + place) % CPUS] == cpu)
    }

    fn last(&self) -> Option<usize> {
        (self.length != 0).then(|| self.queue[(self.first + self.length - 1) % CPUS])
    }
}
