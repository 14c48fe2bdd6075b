//! SemperOS's experiments (its §5.2–5.3) on the simulated machine: the
//! revocation of a chain and of a tree of capabilities across kernels,
//! and the parallel and system efficiency of applications.
//!
//! Must check every run (`World::finish`) and say so when a run fails,
//! never report a number from a run that did not pass.

use std::collections::BTreeMap;
use std::sync::Arc;

use caps::distributed::{CapKey, Outcome, ProcessId};

use crate::costs::CostModel;
use crate::layout::Layout;
use crate::workload::Step;
use crate::world::{Call, KernelWait, World};

/// How the experiments run.
#[derive(Clone, Debug)]
pub struct Setup {
    pub costs: CostModel,
    pub wait: KernelWait,
    /// Lamina's own measurements to compare with (`multikernel_*` lines of
    /// the cost file, from the same benchmark run).
    pub measured: BTreeMap<String, u64>,
}

impl Setup {
    /// The committed cost model, kernels parking as on Lamina today.
    pub fn committed() -> Result<Self, String> {
        let text = include_str!("../costs.txt");
        Ok(Self { costs: CostModel::parse(text)?, wait: KernelWait::Park, measured: CostModel::records(text, "multikernel_") })
    }

    /// The same, with the file service's own work free: what the
    /// capability protocol and the kernels alone cost the applications.
    pub fn without_file_work(&self) -> Self {
        let mut costs = self.costs.clone();
        (costs.file_open_close, costs.file_stat, costs.file_read_4k, costs.file_write_4k) = (0, 0, 0, 0);
        Self { costs, ..self.clone() }
    }

    /// `costs`, kernels parking, nothing measured to compare with.
    pub fn with_costs(costs: CostModel) -> Self {
        Self { costs, wait: KernelWait::Park, measured: BTreeMap::new() }
    }
}

/// Runs `call` for `caller` to its answer; the key it made, if any.
fn call_and_wait(world: &mut World, caller: ProcessId, call: Call) -> Result<Option<CapKey>, String> {
    let answered = world.answers().len();
    world.call(caller, call);
    world.run();
    match world.answers().get(answered) {
        Some((_, Outcome::Done(key))) => Ok(*key),
        Some((_, outcome)) => Err(format!("{call:?} by {caller:?} ended {outcome:?}")),
        None => Err(format!("{call:?} by {caller:?} was never answered")),
    }
}

/// Times a revoke of `root` (owned by `owner`) from the call to its
/// answer, then checks the run and that no capability is left.
fn timed_revoke(mut world: World, owner: ProcessId, root: CapKey) -> Result<u64, String> {
    let start = world.now();
    call_and_wait(&mut world, owner, Call::Revoke { cap: root })?;
    let (done, _) = world.answers().last().copied().ok_or("no answer")?;
    world.finish()?;
    let left: usize = world.kernel_states().map(|kernel| kernel.capability_count()).sum();
    if left != 0 {
        return Err(format!("{left} capabilities left after the revoke"));
    }
    Ok(done - start)
}

/// The time of one delegation of a fresh capability from a process of
/// kernel 0 to a process of the same kernel or (`spanning`) of kernel 1,
/// from the call to its answer (Lamina's `multikernel` exchange benchmark).
pub fn exchange(setup: &Setup, spanning: bool) -> Result<u64, String> {
    let mut world = World::new(Layout::new(2, 0, 0)?, setup.costs.clone(), setup.wait);
    let owner = World::driver_process(0, 0);
    let root = call_and_wait(&mut world, owner, Call::Create)?.ok_or("no root")?;
    let to = World::driver_process(usize::from(spanning), 1);
    let start = world.now();
    call_and_wait(&mut world, owner, Call::Delegate { cap: root, to })?;
    let (done, _) = world.answers().last().copied().ok_or("no answer")?;
    world.finish()?;
    Ok(done - start)
}

/// The time to revoke a chain of `length` copies (each obtained from the
/// last by a process of the next kernel, round robin over `kernels`),
/// SemperOS's Figure 4 (`kernels` 1: group-local; 2: group-spanning).
pub fn revoke_chain(setup: &Setup, length: usize, kernels: usize) -> Result<u64, String> {
    let mut world = World::new(Layout::new(kernels, 0, 0)?, setup.costs.clone(), setup.wait);
    let owner = World::driver_process(0, 0);
    let root = call_and_wait(&mut world, owner, Call::Create)?.ok_or("no root")?;
    let mut last = root;
    for link in 1..=length {
        let process = World::driver_process(link % kernels, link as u32);
        last = call_and_wait(&mut world, process, Call::Obtain { parent: last })?.ok_or("no copy")?;
    }
    timed_revoke(world, owner, root)
}

/// The time to revoke a root with `children` copies spread round robin
/// over `spread` other kernels (0: all on the root's kernel), SemperOS's
/// Figure 5 ("1 + spread kernels").
pub fn revoke_tree(setup: &Setup, children: usize, spread: usize) -> Result<u64, String> {
    let mut world = World::new(Layout::new(1 + spread, 0, 0)?, setup.costs.clone(), setup.wait);
    let owner = World::driver_process(0, 0);
    let root = call_and_wait(&mut world, owner, Call::Create)?.ok_or("no root")?;
    for child in 0..children {
        let kernel = if spread == 0 { 0 } else { 1 + child % spread };
        let process = World::driver_process(kernel, 1 + child as u32);
        call_and_wait(&mut world, process, Call::Obtain { parent: root })?;
    }
    timed_revoke(world, owner, root)
}

/// One run of `instances` applications replaying `steps`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Efficiency {
    /// One instance alone, and the mean of the instances together.
    pub alone: u64,
    pub mean: u64,
    /// `alone / mean`.
    pub parallel: f64,
    /// `parallel × instances / PEs` (the OS's PEs count as zero).
    pub system: f64,
    /// Capability operations per instance (system calls to kernels).
    pub calls: u64,
    /// The busiest kernel's and the busiest service's share of the run
    /// of all instances together.
    pub busiest_kernel: f64,
    pub busiest_service: f64,
}

/// Runs `steps` once alone and `instances` times at once on `kernels`
/// kernels and `services` services (each run checked).
pub fn efficiency(setup: &Setup, steps: &Arc<[Step]>, kernels: usize, services: usize, instances: usize) -> Result<Efficiency, String> {
    let run = |apps: usize| -> Result<crate::world::Report, String> {
        let mut world = World::with_apps(Layout::new(kernels, services, apps)?, setup.costs.clone(), setup.wait, steps.clone())?;
        world.run();
        world.finish()
    };
    let alone = run(1)?;
    let together = run(instances)?;
    let alone_time = alone.app_times[0];
    let mean = together.app_times.iter().sum::<u64>() / instances as u64;
    let parallel = alone_time as f64 / mean.max(1) as f64;
    let share = |busy: &[u64]| busy.iter().max().copied().unwrap_or(0) as f64 / together.end.max(1) as f64;
    Ok(Efficiency {
        busiest_kernel: share(&together.kernel_busy),
        busiest_service: share(&together.service_busy),
        alone: alone_time,
        mean,
        parallel,
        system: parallel * instances as f64 / (kernels + services + instances) as f64,
        calls: alone.calls,
    })
}
