//! A file-service PE (SemperOS's m3fs): it answers its applications'
//! requests in order, one at a time on its PE, and hands out memory
//! capabilities for file ranges — for each, a copy of its file system's
//! memory derived on its own kernel, which the application then obtains
//! through its kernel (across kernels when it is in another group) — and
//! revokes them when the file is closed, the applications' copies with
//! them.
//!
//! Unlike m3fs, it never waits for its kernel: a request whose capability
//! is being derived is answered when the kernel says so, while the
//! service goes on with the next; a close is answered at once and its
//! revocations finish behind it (the service derives a fresh copy for
//! every range, so nothing it hands out later depends on them).
//!
//! Must not name a capability before it exists.

use std::collections::{BTreeMap, VecDeque};

use caps::distributed::{CapKey, Outcome, ProcessId};

use crate::world::{Call, Event, Pe, Wake, World};

/// What an application asks its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Open a file: its first range's capability.
    Open { handle: u32 },
    /// The next range of an open file.
    Extend { handle: u32 },
    /// Close a file: its ranges' capabilities are revoked.
    Close { handle: u32 },
    /// A look at metadata (stat, a directory listing, a failed open).
    Meta,
}

/// A call to the kernel the service has not had answered yet.
enum Job {
    Deriving { app: usize, handle: u32 },
    Revoking,
}

/// What the service's PE takes next, in arrival order.
enum Work {
    Request { app: usize, request: Request },
    Answer { tag: u64, outcome: Outcome },
}

pub(crate) struct ServicePe {
    kernel: usize,
    process: ProcessId,
    root: Option<CapKey>,
    inbox: VecDeque<Work>,
    busy: bool,
    jobs: BTreeMap<u64, Job>,
    next_tag: u64,
    copies: BTreeMap<(usize, u32), Vec<CapKey>>,
    /// Instructions spent on work.
    pub busy_time: u64,
}

impl ServicePe {
    pub fn new(kernel: usize, process: ProcessId, root: Option<CapKey>) -> Self {
        Self { kernel, process, root, inbox: VecDeque::new(), busy: false, jobs: BTreeMap::new(), next_tag: 0, copies: BTreeMap::new(), busy_time: 0 }
    }
}

impl World {
    pub(crate) fn service_request_arrived(&mut self, service: usize, app: usize, request: Request) {
        self.services[service].inbox.push_back(Work::Request { app, request });
        self.service_start_next(service);
    }

    pub(crate) fn service_answer(&mut self, service: usize, tag: u64, outcome: Outcome) {
        self.services[service].inbox.push_back(Work::Answer { tag, outcome });
        self.service_start_next(service);
    }

    pub(crate) fn service_free(&mut self, service: usize) {
        self.services[service].busy = false;
        self.service_start_next(service);
    }

    /// Takes the next work if the PE is free; it is busy until the work's
    /// cost (and what it sends) has passed.
    fn service_start_next(&mut self, service: usize) {
        let pe = &mut self.services[service];
        if pe.busy {
            return;
        }
        let Some(work) = pe.inbox.pop_front() else { return };
        pe.busy = true;
        let start = self.now + self.costs.message_receive;
        let end = match work {
            Work::Request { app, request } => self.service_request(service, app, request, start),
            Work::Answer { tag, outcome } => self.service_kernel_answer(service, tag, outcome, start),
        };
        self.services[service].busy_time += end - self.now;
        self.queue.schedule(end, Event::ServiceFree { service });
    }

    /// Serves `request` from `at`; the time its PE is done.
    fn service_request(&mut self, service: usize, app: usize, request: Request, at: u64) -> u64 {
        let costs = &self.costs;
        let at = at
            + match request {
                Request::Open { .. } => costs.file_open_close,
                Request::Extend { .. } => costs.file_read_4k,
                Request::Close { .. } => 0,
                Request::Meta => costs.file_stat,
            };
        match request {
            Request::Meta => self.service_reply(app, None, at),
            Request::Open { handle } | Request::Extend { handle } => match self.services[service].root {
                Some(root) => self.service_call(service, Job::Deriving { app, handle }, Call::Obtain { parent: root }, at),
                None => self.service_reply(app, None, at),
            },
            Request::Close { handle } => {
                let copies = self.services[service].copies.remove(&(app, handle)).unwrap_or_default();
                let at = copies.into_iter().fold(at, |at, cap| self.service_call(service, Job::Revoking, Call::Revoke { cap }, at));
                self.service_reply(app, None, at)
            }
        }
    }

    /// Takes the kernel's answer to call `tag` from `at`; the time its PE
    /// is done.
    fn service_kernel_answer(&mut self, service: usize, tag: u64, outcome: Outcome, at: u64) -> u64 {
        match (self.services[service].jobs.remove(&tag), outcome) {
            (Some(Job::Deriving { app, handle }), Outcome::Done(Some(copy))) => {
                self.services[service].copies.entry((app, handle)).or_default().push(copy);
                self.service_reply(app, Some(copy), at)
            }
            (Some(Job::Deriving { app, .. }), _) => self.service_reply(app, None, at),
            (Some(Job::Revoking) | None, _) => at,
        }
    }

    /// Sends `call` to the service's kernel at `at`; the time after sending.
    fn service_call(&mut self, service: usize, job: Job, call: Call, at: u64) -> u64 {
        let pe = &mut self.services[service];
        let tag = pe.next_tag;
        pe.next_tag += 1;
        pe.jobs.insert(tag, job);
        let (kernel, caller) = (pe.kernel, pe.process);
        self.calls_issued += 1;
        let at = at + self.costs.message_send;
        self.queue.schedule(at, Event::KernelCall { kernel, caller, pe: Pe::Service { service, tag }, call });
        at
    }

    /// Answers `app` at `at`; the time after sending.
    fn service_reply(&mut self, app: usize, copy: Option<CapKey>, at: u64) -> u64 {
        let at = at + self.costs.message_send;
        self.queue.schedule(at, Event::AppWake { app, wake: Wake::Served(copy) });
        at
    }
}
