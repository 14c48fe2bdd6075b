//! The quota containers in the kernel: a container at its quota is refused
//! (threads, frames, reservations: ENOMEM at a system call) while threads
//! of another container keep running, and a whole tree of containers and
//! threads, once gone, leaves every frame free again.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use containers::{ContainerId, QuotaError};
use machine::percpu;
use reservations::{Bound, Reservation, ReservationError};
use sched::{Pinning, SpawnError, Thread, THREAD_PAGES};

use super::runner::{check, Outcome};
use super::waiting::{frames_come_back, wait_until};
use kernel_objects::kernel_containers::{containers, ChargedFrameError, ContainerAccount, KernelContainers};
use kernel_objects::OwnedFrame;
use kernel_objects::kernel_memory::KERNEL_BUDGET;
use kernel_objects::physical_memory::free_frames;
use kernel_objects::SystemFacts;

fn tree() -> Result<&'static KernelContainers, String> {
    containers().ok_or_else(|| "no container tree".into())
}

fn create(parent: ContainerId, quota: u64) -> Result<ContainerId, String> {
    tree()?.create_child(parent, quota).map_err(|error| format!("create_child({quota}) failed: {error:?}"))
}

/// Destroys `id`, checking nothing stays charged to it.
fn destroy(id: ContainerId) -> Outcome {
    let destroyed = tree()?.destroy(id).map_err(|error| format!("destroy failed: {error:?}"))?;
    check(destroyed.still_charged == 0, || format!("{} pages still charged to a finished container", destroyed.still_charged))
}

fn wait_for_exit(threads: &[Arc<Thread>]) -> Outcome {
    check(wait_until(60_000, || threads.iter().all(|thread| thread.has_exited())), || "threads did not finish".into())
}

/// Frees the spare stacks until free frames are back to `before` (a
/// thread's stack is freed once its CPU has switched away from it).
pub fn full_container_gets_enomem_while_another_keeps_running(_facts: &SystemFacts) -> Outcome {
    let tree = tree()?;
    let root = sched::current().container();
    let online = percpu::online_count();
    const SPARE_FRAMES: u64 = 4;
    let full = create(root, 2 * THREAD_PAGES + SPARE_FRAMES)?;
    let busy = create(root, online as u64 * THREAD_PAGES)?;

    // Busy's threads count on every CPU until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<Vec<AtomicU64>> = Arc::new((0..online).map(|_| AtomicU64::new(0)).collect());
    let mut threads = Vec::new();
    for cpu in 0..online {
        let (stop, counters) = (stop.clone(), counters.clone());
        let thread = sched::spawn_in(busy, cpu, Pinning::Pinned, "counter", move || {
            while !stop.load(Ordering::Acquire) {
                counters[cpu].fetch_add(1, Ordering::Relaxed);
                sched::yield_now();
            }
        });
        threads.push(thread.map_err(|error| format!("spawn in the busy container on CPU {cpu}: {error:?}"))?);
    }

    // Fill the other container: two threads, then four frames.
    for cpu in 0..2 {
        let stop = stop.clone();
        let thread = sched::spawn_in(full, cpu % online, Pinning::Free, "waiter", move || {
            while !stop.load(Ordering::Acquire) {
                sched::yield_now();
            }
        });
        threads.push(thread.map_err(|error| format!("spawn {cpu} within quota: {error:?}"))?);
    }
    let mut frames: Vec<OwnedFrame> = Vec::new();
    for _ in 0..SPARE_FRAMES {
        frames.push(OwnedFrame::allocate(full).map_err(|error| format!("frame within quota refused: {error:?}"))?);
    }
    let quota_before_refusals = tree.usage(full).map_err(|error| format!("{error:?}"))?;
    let spawn = sched::spawn_in(full, 0, Pinning::Free, "one-too-many", || {});
    check(matches!(spawn, Err(SpawnError::OverQuota)), || format!("spawn past the quota gave {:?}", spawn.as_ref().map(|thread| thread.id())))?;
    let frame = OwnedFrame::allocate(full);
    check(matches!(frame, Err(ChargedFrameError::Quota(QuotaError::Exhausted { .. }))), || {
        format!("frame past the quota gave {:?}", frame.as_ref().map(OwnedFrame::address))
    })?;
    let account = ContainerAccount(full);
    let reservation = Reservation::reserve(&KERNEL_BUDGET, &account, Bound::fixed(1), 0);
    check(matches!(reservation, Err(ReservationError::Quota { .. })), || "a reservation past the quota was granted".into())?;
    drop(reservation);
    let usage_after = tree.usage(full).map_err(|error| format!("{error:?}"))?;
    check(usage_after == quota_before_refusals, || format!("refusals changed usage {quota_before_refusals} -> {usage_after}"))?;

    // Meanwhile every busy thread keeps counting.
    let seen: Vec<u64> = counters.iter().map(|counter| counter.load(Ordering::Relaxed)).collect();
    let advanced = wait_until(20_000, || counters.iter().zip(&seen).all(|(counter, &then)| counter.load(Ordering::Relaxed) > then + 10));
    check(advanced, || "threads of the other container stopped running".into())?;

    stop.store(true, Ordering::Release);
    wait_for_exit(&threads)?;
    drop(frames); // each frees itself and its charge
    destroy(full)?;
    destroy(busy)
}

/// Spawns a thread in `container` that allocates `frames` charged frames,
/// spawns `children` threads of its own (same container) that do the same
/// one level down, frees its frames and exits.
fn spawn_worker(container: ContainerId, cpu: usize, frames: u64, children: u32, all: Arc<machine::irq_lock::IrqLock<Vec<Arc<Thread>>>>) -> Result<(), SpawnError> {
    let list = all.clone();
    let thread = sched::spawn_in(container, cpu, Pinning::Free, "tree-worker", move || {
        let held: Vec<OwnedFrame> = (0..frames).filter_map(|_| OwnedFrame::allocate(container).ok()).collect();
        for child in 0..children {
            let cpu = (cpu + 1 + child as usize) % percpu::online_count();
            let _ = spawn_worker(container, cpu, frames, 0, list.clone());
        }
        drop(held); // each frees itself and its charge
    })?;
    all.lock().push(thread);
    Ok(())
}

pub fn a_finished_tree_of_containers_and_threads_frees_every_frame(_facts: &SystemFacts) -> Outcome {
    let tree = tree()?;
    let root = sched::current().container();
    sched::release_spare_stacks();
    let free_before = free_frames();
    let root_usage_before = tree.usage(root).map_err(|error| format!("{error:?}"))?;

    // root → top → {left → leaf, right}, each with threads that spawn threads.
    let top = create(root, 2_000)?;
    let left = create(top, 800)?;
    let right = create(top, 400)?;
    let leaf = create(left, 300)?;
    let all = Arc::new(machine::irq_lock::IrqLock::new(Vec::new()));
    for (index, container) in [top, left, right, leaf].into_iter().enumerate() {
        for worker in 0..3 {
            spawn_worker(container, (index + worker) % percpu::online_count(), 8, 2, all.clone())
                .map_err(|error| format!("spawning a worker in container {index}: {error:?}"))?;
        }
    }
    // Workers add their children to the list before they exit.
    let finished = wait_until(60_000, || {
        let threads = all.lock();
        threads.len() == 4 * 3 * 3 && threads.iter().all(|thread| thread.has_exited())
    });
    check(finished, || format!("{} of 36 threads seen, not all finished", all.lock().len()))?;
    for container in [top, left, right, leaf] {
        let charged = tree.charged(container).map_err(|error| format!("{error:?}"))?;
        check(charged == 0, || format!("{charged} pages still charged after every thread exited"))?;
    }
    destroy(leaf)?;
    destroy(right)?;
    destroy(left)?;
    destroy(top)?;
    let root_usage_after = tree.usage(root).map_err(|error| format!("{error:?}"))?;
    check(root_usage_after == root_usage_before, || format!("root usage {root_usage_before} before, {root_usage_after} after"))?;
    frames_come_back(free_before)
}

crate::kernel_tests! {
    "containers" => [
        full_container_gets_enomem_while_another_keeps_running,
        a_finished_tree_of_containers_and_threads_frees_every_frame,
    ],
}
