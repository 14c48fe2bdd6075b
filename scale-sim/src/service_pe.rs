//! A file-service PE (SemperOS's m3fs): it answers its applications'
//! requests one at a time and hands out memory capabilities for file
//! ranges — for each, a copy of its file system's memory derived on its
//! own kernel, which the application then obtains through its kernel
//! (across kernels when it is in another group) — and revokes them when
//! the file is closed, the applications' copies with them.
//!
//! Must not name a capability before it exists, or answer a close before
//! the file's capabilities are revoked everywhere.

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

/// The request in progress, waiting for its kernel.
enum Job {
    Deriving { app: usize, handle: u32 },
    Revoking { app: usize, rest: Vec<CapKey> },
}

pub(crate) struct ServicePe {
    kernel: usize,
    process: ProcessId,
    root: Option<CapKey>,
    requests: VecDeque<(usize, Request)>,
    job: Option<Job>,
    busy: bool,
    copies: BTreeMap<(usize, u32), Vec<CapKey>>,
}

impl ServicePe {
    pub fn new(kernel: usize, process: ProcessId, root: Option<CapKey>) -> Self {
        Self { kernel, process, root, requests: VecDeque::new(), job: None, busy: false, copies: BTreeMap::new() }
    }
}

impl World {
    pub(crate) fn service_request_arrived(&mut self, service: usize, app: usize, request: Request) {
        self.services[service].requests.push_back((app, request));
        self.service_start_next(service);
    }

    pub(crate) fn service_free(&mut self, service: usize) {
        self.services[service].busy = false;
        self.service_start_next(service);
    }

    fn service_start_next(&mut self, service: usize) {
        let pe = &mut self.services[service];
        if pe.busy {
            return;
        }
        let Some((app, request)) = pe.requests.pop_front() else { return };
        pe.busy = true;
        let costs = &self.costs;
        let work = costs.message_receive
            + match request {
                Request::Open { .. } => costs.file_open_close,
                Request::Extend { .. } => costs.file_read_4k,
                Request::Close { .. } => 0,
                Request::Meta => costs.file_stat,
            };
        let at = self.now + work;
        match request {
            Request::Meta => self.service_reply(service, app, None, at),
            Request::Open { handle } | Request::Extend { handle } => match self.services[service].root {
                Some(root) => {
                    self.services[service].job = Some(Job::Deriving { app, handle });
                    self.service_call(service, Call::Obtain { parent: root }, at);
                }
                None => self.service_reply(service, app, None, at),
            },
            Request::Close { handle } => {
                let rest = self.services[service].copies.remove(&(app, handle)).unwrap_or_default();
                self.service_revoke_next(service, app, rest, at);
            }
        }
    }

    pub(crate) fn service_answer(&mut self, service: usize, outcome: Outcome) {
        let at = self.now + self.costs.message_receive;
        match self.services[service].job.take() {
            Some(Job::Deriving { app, handle }) => match outcome {
                Outcome::Done(Some(copy)) => {
                    self.services[service].copies.entry((app, handle)).or_default().push(copy);
                    self.service_reply(service, app, Some(copy), at);
                }
                _ => self.service_reply(service, app, None, at),
            },
            Some(Job::Revoking { app, rest }) => self.service_revoke_next(service, app, rest, at),
            None => {}
        }
    }

    fn service_revoke_next(&mut self, service: usize, app: usize, mut rest: Vec<CapKey>, at: u64) {
        match rest.pop() {
            Some(cap) => {
                self.services[service].job = Some(Job::Revoking { app, rest });
                self.service_call(service, Call::Revoke { cap }, at);
            }
            None => self.service_reply(service, app, None, at),
        }
    }

    fn service_call(&mut self, service: usize, call: Call, at: u64) {
        let pe = &self.services[service];
        let (kernel, caller) = (pe.kernel, pe.process);
        self.calls_issued += 1;
        self.queue.schedule(at + self.costs.message_send, Event::KernelCall { kernel, caller, pe: Pe::Service(service), call });
    }

    fn service_reply(&mut self, service: usize, app: usize, copy: Option<CapKey>, at: u64) {
        let at = at + self.costs.message_send;
        self.queue.schedule(at, Event::AppWake { app, wake: Wake::Served(copy) });
        self.queue.schedule(at, Event::ServiceFree { service });
    }
}
