//! A step-by-step driver for refinement tests of blocking objects.
//!
//! Client threads run one operation at a time on command. The driver issues
//! a step, then waits until the system is *quiet*: every client is idle or
//! parked with no permit pending, so nothing can move until the next step.
//! Then it compares what completed with what the spec says completed. A
//! lost wake-up shows as a client quietly parked whose operation the spec
//! completed; a wrong order as the wrong client completing.
//!
//! [`SteppedBlocking`] is the `Blocking` that makes parking visible to the
//! driver; the driver can also unpark anyone at any time (a spurious
//! wake-up, or a stale permit left for a later park).

use std::boxed::Box;
use std::cell::RefCell;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::vec::Vec;

use spinlock::{NoGuard, ThreadLevels};

use crate::blocking::{SyncGuard, SyncLock};
use crate::std_blocking::lock_yielding;
use crate::Blocking;

/// Blocking through the driver's board.
pub(crate) struct SteppedBlocking;

/// A client's handle: its board and its index on it.
#[derive(Clone)]
pub(crate) struct SteppedThread {
    board: Arc<Board>,
    index: usize,
}

std::thread_local! {
    static CURRENT: RefCell<Option<SteppedThread>> = const { RefCell::new(None) };
}

impl Blocking for SteppedBlocking {
    type Thread = SteppedThread;
    type LockPolicy = NoGuard;
    type LockLevels = ThreadLevels;

    fn current() -> SteppedThread {
        CURRENT
            .with(|current| current.borrow().clone())
            .expect("only the driver's client threads block")
    }

    fn park() {
        let me = Self::current();
        me.board.park(me.index);
    }

    fn unpark(thread: &SteppedThread) {
        thread.board.unpark(thread.index);
    }

    fn lock<T>(lock: &SyncLock<T, Self>) -> SyncGuard<'_, T, Self> {
        lock_yielding::<T, Self>(lock)
    }
}

/// What the driver sees of a client.
#[derive(Clone, Copy, Debug, Default)]
struct ClientState {
    /// Running a command.
    busy: bool,
    /// Inside `park`.
    parked: bool,
    /// The park permit.
    permit: bool,
    /// Its command panicked.
    panicked: bool,
}

impl ClientState {
    fn is_quiet(&self) -> bool {
        !self.busy || (self.parked && !self.permit)
    }
}

/// The clients' states, and a condition variable for every change.
struct Board {
    clients: Mutex<Vec<ClientState>>,
    changed: Condvar,
}

impl Board {
    fn states(&self) -> MutexGuard<'_, Vec<ClientState>> {
        self.clients.lock().unwrap()
    }

    fn park(&self, index: usize) {
        let mut clients = self.states();
        clients[index].parked = true;
        self.changed.notify_all();
        while !clients[index].permit {
            clients = self.changed.wait(clients).unwrap();
        }
        clients[index].permit = false;
        clients[index].parked = false;
        self.changed.notify_all();
    }

    fn unpark(&self, index: usize) {
        self.states()[index].permit = true;
        self.changed.notify_all();
    }

    fn set_busy(&self, index: usize, busy: bool) {
        self.states()[index].busy = busy;
        self.changed.notify_all();
    }
}

type Command<O> = Box<dyn FnOnce() -> O + Send>;

/// The driver: client threads and what their commands returned.
pub(crate) struct Driver<O> {
    board: Arc<Board>,
    commands: Vec<mpsc::Sender<Command<O>>>,
    outcomes: Arc<Mutex<Vec<(usize, O)>>>,
    threads: Vec<JoinHandle<()>>,
}

impl<O: Send + 'static> Driver<O> {
    /// Starts `clients` idle client threads.
    pub(crate) fn new(clients: usize) -> Self {
        let board = Arc::new(Board {
            clients: Mutex::new(std::vec![ClientState::default(); clients]),
            changed: Condvar::new(),
        });
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let mut driver = Self {
            board,
            commands: Vec::new(),
            outcomes,
            threads: Vec::new(),
        };
        (0..clients).for_each(|index| driver.start_client(index));
        driver
    }

    fn start_client(&mut self, index: usize) {
        let (sender, receiver) = mpsc::channel::<Command<O>>();
        let me = SteppedThread {
            board: self.board.clone(),
            index,
        };
        let outcomes = self.outcomes.clone();
        self.commands.push(sender);
        self.threads.push(std::thread::spawn(move || {
            CURRENT.with(|current| *current.borrow_mut() = Some(me.clone()));
            for command in receiver {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(command));
                let outcome = outcome.unwrap_or_else(|panic| {
                    me.board.states()[index].panicked = true;
                    me.board.changed.notify_all();
                    std::panic::resume_unwind(panic)
                });
                outcomes.lock().unwrap().push((index, outcome));
                me.board.set_busy(index, false);
            }
        }));
    }

    /// Has client `index` (idle) run `command`.
    pub(crate) fn run(&self, index: usize, command: impl FnOnce() -> O + Send + 'static) {
        assert!(!self.board.states()[index].busy, "client {index} is busy");
        self.board.set_busy(index, true);
        self.commands[index].send(Box::new(command)).unwrap();
    }

    /// A spurious wake-up of client `index` (or a stale permit, if it is
    /// not parked).
    pub(crate) fn unpark(&self, index: usize) {
        self.board.unpark(index);
    }

    /// Waits until nothing can move without a new step; panics after ten
    /// seconds (a livelock, or a thread spinning forever).
    pub(crate) fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut clients = self.board.states();
        while !clients.iter().all(ClientState::is_quiet) {
            let panicked = clients.iter().position(|client| client.panicked);
            assert!(panicked.is_none(), "client {panicked:?} panicked");
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the system never became quiet: {clients:?}");
            clients = self.board.changed.wait_timeout(clients, left).unwrap().0;
        }
    }

    /// What completed since the last call: (client, outcome), in completion
    /// order.
    pub(crate) fn take_outcomes(&self) -> Vec<(usize, O)> {
        core::mem::take(&mut *self.outcomes.lock().unwrap())
    }

    /// Clients not running a command.
    pub(crate) fn idle_clients(&self) -> Vec<usize> {
        let clients = self.board.states();
        (0..clients.len()).filter(|index| !clients[*index].busy).collect()
    }

    /// Ends every client thread; all must be idle.
    pub(crate) fn finish(self) {
        let idle = self.idle_clients().len();
        assert_eq!(idle, self.threads.len(), "clients still blocked at the end");
        drop(self.commands);
        self.threads
            .into_iter()
            .for_each(|thread| thread.join().unwrap());
    }
}
