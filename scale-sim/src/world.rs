//! The simulated machine and its event loop: the PEs' states, the clock,
//! the fabric, and the checks every run must pass at its end.
//!
//! Must not let two runs of the same input differ: the only order is the
//! event queue's.

use std::sync::Arc;

use caps::distributed::{audit, CapKey, Kernel, KernelId, Message, Outcome, ProcessId};

use crate::app_pe::AppPe;
use crate::costs::CostModel;
use crate::events::EventQueue;
use crate::fabric::Fabric;
use crate::kernel_pe::KernelPe;
use crate::layout::Layout;
use crate::service_pe::{Request, ServicePe};
use crate::workload::Step;

/// Who a kernel answers: the PE that made the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pe {
    App(usize),
    /// A service's call, with the tag it was sent under.
    Service { service: usize, tag: u64 },
    /// An experiment's own caller (not a PE of the machine).
    Driver,
}

/// A system call as it reaches a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// A new capability with no parent (a resource the caller made).
    Create,
    /// A copy of `parent`, anywhere.
    Obtain { parent: CapKey },
    /// A copy of the caller's `cap` for process `to`.
    Delegate { cap: CapKey, to: ProcessId },
    /// `cap` and everything derived from it, everywhere.
    Revoke { cap: CapKey },
    /// The caller dies: what it holds is revoked.
    Exit,
}

/// What wakes an application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    Start,
    Computed,
    /// The service answered; for an open or the next range, with the
    /// capability to obtain.
    Served(Option<CapKey>),
    /// The application's own kernel answered its call.
    Answered,
}

pub(crate) enum Event {
    KernelMessage { kernel: usize, from: usize, message: Message },
    KernelCall { kernel: usize, caller: ProcessId, pe: Pe, call: Call },
    KernelFree { kernel: usize },
    ServiceRequest { service: usize, app: usize, request: Request },
    ServiceAnswer { service: usize, tag: u64, outcome: Outcome },
    ServiceFree { service: usize },
    AppWake { app: usize, wake: Wake },
    DriverAnswer { outcome: Outcome },
}

/// How kernel PEs wait for work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelWait {
    /// Park, and pay `notify` to be woken (Lamina's kernels today).
    Park,
    /// Poll the channels (SemperOS's kernels on their DTU): no wake-up cost.
    Poll,
}

/// Process numbers: applications are their index; services and drivers
/// are numbered apart.
const SERVICE_BASE: u32 = 1 << 20;
const DRIVER_BASE: u32 = 1 << 21;

/// The simulated machine.
pub struct World {
    pub(crate) costs: CostModel,
    pub(crate) layout: Layout,
    pub(crate) wait: KernelWait,
    pub(crate) now: u64,
    pub(crate) queue: EventQueue<Event>,
    pub(crate) kernels: Vec<KernelPe>,
    pub(crate) services: Vec<ServicePe>,
    pub(crate) apps: Vec<AppPe>,
    pub(crate) fabric: Fabric,
    pub(crate) calls_issued: u64,
    pub(crate) calls_answered: u64,
    pub(crate) refused: u64,
    driver_answers: Vec<(u64, Outcome)>,
}

/// What a run did, once it passed its checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The time of the last event.
    pub end: u64,
    /// Events handled.
    pub events: u64,
    /// Messages between kernels.
    pub messages: u64,
    /// The most messages ever in flight on one pair of kernels.
    pub most_in_flight: usize,
    /// The most system calls ever open on one kernel.
    pub most_open_calls: usize,
    /// System calls made and answered.
    pub calls: u64,
    /// Calls refused (a capability being revoked, for instance).
    pub refused: u64,
    /// Each application's run time, start to end.
    pub app_times: Vec<u64>,
    /// Each kernel's and each service's busy time (a service is busy from
    /// taking a request to answering it).
    pub kernel_busy: Vec<u64>,
    pub service_busy: Vec<u64>,
}

impl World {
    /// A machine of `layout` with no applications (experiments drive the
    /// kernels with [`World::call`]).
    pub fn new(layout: Layout, costs: CostModel, wait: KernelWait) -> Self {
        let kernels = (0..layout.kernels).map(|k| KernelPe::new(Kernel::new(KernelId(k as u8)))).collect();
        let mut world = Self {
            fabric: Fabric::new(layout.kernels, layout.slots),
            costs,
            layout,
            wait,
            now: 0,
            queue: EventQueue::new(),
            kernels,
            services: Vec::new(),
            apps: Vec::new(),
            calls_issued: 0,
            calls_answered: 0,
            refused: 0,
            driver_answers: Vec::new(),
        };
        for service in 0..layout.services {
            let kernel = layout.service_kernel(service);
            let process = ProcessId { kernel: KernelId(kernel as u8), number: SERVICE_BASE + service as u32 };
            let root = world.kernels[kernel].state.create(process);
            world.services.push(ServicePe::new(kernel, process, root));
        }
        world
    }

    /// A machine of `layout` whose every application replays `steps`,
    /// all starting at time 0.
    pub fn with_apps(layout: Layout, costs: CostModel, wait: KernelWait, steps: Arc<[Step]>) -> Result<Self, String> {
        let mut world = Self::new(layout, costs, wait);
        for app in 0..layout.apps {
            let kernel = layout.app_kernel(app);
            let process = ProcessId { kernel: KernelId(kernel as u8), number: app as u32 };
            let service = layout.app_service(app);
            if service.is_none() && steps.iter().any(Step::needs_service) {
                return Err("the workload uses files, and the layout has no file service".into());
            }
            world.apps.push(AppPe::new(process, service, steps.clone()));
            world.queue.schedule(0, Event::AppWake { app, wake: Wake::Start });
        }
        Ok(world)
    }

    /// Process `number` of kernel `kernel`, as an experiment's caller.
    pub fn driver_process(kernel: usize, number: u32) -> ProcessId {
        ProcessId { kernel: KernelId(kernel as u8), number: DRIVER_BASE + number }
    }

    /// `caller` makes `call` at the current time; its answer comes back
    /// to [`World::answers`].
    pub fn call(&mut self, caller: ProcessId, call: Call) {
        let kernel = usize::from(caller.kernel.0);
        // A process that exits is answered by nobody.
        self.calls_issued += u64::from(call != Call::Exit);
        self.queue.schedule(self.now, Event::KernelCall { kernel, caller, pe: Pe::Driver, call });
    }

    /// The answers to [`World::call`]s so far, with their times.
    pub fn answers(&self) -> &[(u64, Outcome)] {
        &self.driver_answers
    }

    /// The current time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Runs until no event is left.
    pub fn run(&mut self) {
        while let Some((time, event)) = self.queue.next() {
            self.now = time;
            self.handle(event);
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::KernelMessage { kernel, from, message } => self.kernel_message_arrived(kernel, from, message),
            Event::KernelCall { kernel, caller, pe, call } => self.kernel_call_arrived(kernel, caller, pe, call),
            Event::KernelFree { kernel } => self.kernel_free(kernel),
            Event::ServiceRequest { service, app, request } => self.service_request_arrived(service, app, request),
            Event::ServiceAnswer { service, tag, outcome } => self.service_answer(service, tag, outcome),
            Event::ServiceFree { service } => self.service_free(service),
            Event::AppWake { app, wake } => self.app_wake(app, wake),
            Event::DriverAnswer { outcome } => self.driver_answers.push((self.now, outcome)),
        }
    }

    /// Sends a kernel's answer to the PE that called, at `time`.
    pub(crate) fn answer(&mut self, pe: Pe, outcome: Outcome, time: u64) {
        self.calls_answered += 1;
        if outcome == Outcome::Refused {
            self.refused += 1;
        }
        let event = match pe {
            Pe::App(app) => Event::AppWake { app, wake: Wake::Answered },
            Pe::Service { service, tag } => Event::ServiceAnswer { service, tag, outcome },
            Pe::Driver => Event::DriverAnswer { outcome },
        };
        self.queue.schedule(time, event);
    }

    /// The kernels' protocol states (for audits and experiments).
    pub fn kernel_states(&self) -> impl Iterator<Item = &Kernel> + Clone {
        self.kernels.iter().map(|kernel| &kernel.state)
    }

    /// The run's report, if it ended as every run must: no message left
    /// in a channel or waiting for a slot, every call answered, every
    /// application finished, no pair over its slots, no kernel over its
    /// threads, and the kernels' capabilities consistent (the model
    /// checker's audit).
    pub fn finish(&self) -> Result<Report, String> {
        if self.fabric.outstanding() != 0 {
            return Err(format!("{} messages between kernels were never taken", self.fabric.outstanding()));
        }
        if self.calls_answered != self.calls_issued {
            return Err(format!("{} calls made, {} answered", self.calls_issued, self.calls_answered));
        }
        if let Some(app) = self.apps.iter().position(|app| app.finished.is_none()) {
            return Err(format!("application {app} never finished"));
        }
        if self.fabric.most_in_flight > self.layout.slots {
            return Err(format!("{} messages in flight on a pair with {} slots", self.fabric.most_in_flight, self.layout.slots));
        }
        let most_open_calls = self.kernels.iter().map(|kernel| kernel.most_open).max().unwrap_or(0);
        if most_open_calls > self.layout.threads {
            return Err(format!("{most_open_calls} calls open on a kernel with {} threads", self.layout.threads));
        }
        audit(self.kernel_states())?;
        Ok(Report {
            end: self.now,
            events: self.queue.scheduled(),
            messages: self.fabric.sent,
            most_in_flight: self.fabric.most_in_flight,
            most_open_calls,
            calls: self.calls_issued,
            refused: self.refused,
            app_times: self.apps.iter().map(|app| app.finished.unwrap_or(0) - app.started).collect(),
            kernel_busy: self.kernels.iter().map(|kernel| kernel.busy_time).collect(),
            service_busy: self.services.iter().map(|service| service.busy_time).collect(),
        })
    }
}
