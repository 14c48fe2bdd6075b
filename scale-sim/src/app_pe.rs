//! An application PE: replays its workload's steps — computing for a
//! while, or asking its file service and waiting for the answer; for an
//! open or the next range of a file, then obtaining the capability the
//! service names through its own kernel.
//!
//! Must not have more than one request outstanding (a blocking call, as
//! in SemperOS's traces).

use std::sync::Arc;

use caps::distributed::ProcessId;

use crate::service_pe::Request;
use crate::workload::Step;
use crate::world::{Call, Event, Pe, Wake, World};

pub(crate) struct AppPe {
    pub process: ProcessId,
    service: Option<usize>,
    steps: Arc<[Step]>,
    next: usize,
    pub started: u64,
    pub finished: Option<u64>,
}

impl AppPe {
    pub fn new(process: ProcessId, service: Option<usize>, steps: Arc<[Step]>) -> Self {
        Self { process, service, steps, next: 0, started: 0, finished: None }
    }
}

impl World {
    pub(crate) fn app_wake(&mut self, app: usize, wake: Wake) {
        let mut at = self.now;
        match wake {
            Wake::Start => self.apps[app].started = self.now,
            Wake::Served(Some(copy)) => {
                // The exchange itself: the application obtains the range's
                // capability through its own kernel (SemperOS's session
                // exchange; across kernels when the service is elsewhere).
                let pe = &self.apps[app];
                let (kernel, caller) = (usize::from(pe.process.kernel.0), pe.process);
                self.calls_issued += 1;
                let at = at + self.costs.message_receive + self.costs.message_send;
                self.queue.schedule(at, Event::KernelCall { kernel, caller, pe: Pe::App(app), call: Call::Obtain { parent: copy } });
                return;
            }
            Wake::Served(None) | Wake::Answered => at += self.costs.message_receive,
            Wake::Computed => {}
        }
        let pe = &mut self.apps[app];
        let Some(step) = pe.steps.get(pe.next).copied() else {
            pe.finished = Some(at);
            return;
        };
        pe.next += 1;
        let request = match step {
            Step::Compute(instructions) => {
                self.queue.schedule(at + instructions, Event::AppWake { app, wake: Wake::Computed });
                return;
            }
            Step::Open(handle) => Request::Open { handle },
            Step::Extend(handle) => Request::Extend { handle },
            Step::Close(handle) => Request::Close { handle },
            Step::Meta => Request::Meta,
        };
        // `with_apps` refuses a file workload without a service.
        let Some(service) = pe.service else { return };
        self.queue.schedule(at + self.costs.message_send, Event::ServiceRequest { service, app, request });
    }
}
