//! Which CPUs a user space's TLB shootdown reaches: those that have the
//! space's root loaded, and not those that ran it once and have loaded
//! other tables since (`machine::tlb::shootdown_space`). Before, every CPU
//! that had ever run a space was interrupted on each of its unmaps.

use alloc::format;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU8, Ordering};

use machine::{paging, percpu, tlb};
use sched::Pinning;
use vmem::{Access, Rights};

use super::runner::{check, Outcome};
use super::waiting::{frames_come_back, wait_until};
use kernel_objects::physical_memory::free_frames;
use kernel_objects::address_spaces::{carry_out, new_space, prepare_to_enter, switch_to, KernelSpace};
use kernel_objects::kernel_containers::containers;
use kernel_objects::SystemFacts;

const DATA: u64 = 0x60_0000;
/// Unmaps per phase: the phase that must not ask the holder allows fewer
/// requests than this (a kernel stack freed meanwhile asks every CPU).
const ROUNDS: u64 = 8;

/// The holder thread's states.
const STARTED: u8 = 0;
const LOADED: u8 = 1;
const REFUSED: u8 = 2;
const LEAVE: u8 = 3;
const LEFT: u8 = 4;

/// Faults page `page` of the data region in and unmaps it again,
/// carrying the flush out.
fn map_and_unmap(space: &mut KernelSpace, page: u64) -> Outcome {
    let address = DATA + page * vmem::PAGE_SIZE;
    space.handle_fault(address, Access::Write).map_err(|fault| format!("fault at {address:#x}: {fault:?}"))?;
    let flush = space.unmap(address, vmem::PAGE_SIZE).map_err(|error| format!("unmap {address:#x}: {error:?}"))?;
    check(!flush.is_empty(), || format!("unmapping the mapped page {address:#x} flushed nothing"))?;
    carry_out(flush);
    Ok(())
}

pub fn a_shootdown_asks_only_the_cpus_that_have_the_space_loaded(_facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count();
    if online < 2 {
        return Ok(());
    }
    let me = percpu::current_index();
    sched::migrate_current(me, Pinning::Pinned).map_err(|error| format!("{error:?}"))?;
    let holder_cpu = (me + 1) % online;
    sched::release_spare_stacks();
    let free_before = free_frames();
    let tree = containers().ok_or("no container tree")?;
    let container = tree.create_child(sched::current().container(), 64).map_err(|error| format!("{error:?}"))?;
    let mut space = new_space(container).map_err(|error| format!("new space: {error:?}"))?;
    let outcome = run_phases(&mut space, me, holder_cpu);
    carry_out(space.destroy());
    tree.destroy(container).map_err(|error| format!("{error:?}"))?;
    sched::migrate_current(percpu::current_index(), Pinning::Free).map_err(|error| format!("{error:?}"))?;
    outcome?;
    // The holder's stack comes back after it left its CPU: the next test
    // (`caps::a_process_reaches_only_what_its_capabilities_allow`, which
    // counts free frames) once saw it arrive in the middle.
    frames_come_back(free_before)
}

fn run_phases(space: &mut KernelSpace, me: usize, holder_cpu: usize) -> Outcome {
    space.add_demand_zero(DATA, 2 * ROUNDS * vmem::PAGE_SIZE, Rights::READ_WRITE).map_err(|error| format!("data region: {error:?}"))?;
    // This CPU is in the space's set but never loads it; the holder's CPU
    // loads it and keeps it loaded until told to leave.
    let tables = prepare_to_enter(space);
    space.activate_on(holder_cpu);
    let state = Arc::new(AtomicU8::new(STARTED));
    let holder_state = state.clone();
    sched::spawn_on(holder_cpu, Pinning::Pinned, "tlb-holder", move || {
        holder_state.store(if switch_to(tables) { LOADED } else { REFUSED }, Ordering::SeqCst);
        while holder_state.load(Ordering::SeqCst) != LEAVE {
            core::hint::spin_loop();
        }
        paging::switch_to_kernel_tables();
        holder_state.store(LEFT, Ordering::SeqCst);
    })
    .map_err(|error| format!("spawn: {error:?}"))?;
    let loaded = wait_until(10_000, || state.load(Ordering::SeqCst) != STARTED);
    check(loaded && state.load(Ordering::SeqCst) == LOADED, || format!("the holder on CPU {holder_cpu} did not load the space"))?;

    let before = tlb::served(holder_cpu);
    for page in 0..ROUNDS {
        map_and_unmap(space, page)?;
    }
    let asked = tlb::served(holder_cpu) - before;
    let outcome = check(asked >= ROUNDS, || format!("CPU {holder_cpu}, with the space loaded, was asked {asked} times for {ROUNDS} unmaps from CPU {me}"));

    state.store(LEAVE, Ordering::SeqCst);
    let left = wait_until(10_000, || state.load(Ordering::SeqCst) == LEFT);
    outcome?;
    check(left, || format!("the holder on CPU {holder_cpu} did not leave the space"))?;
    let before = tlb::served(holder_cpu);
    for page in ROUNDS..2 * ROUNDS {
        map_and_unmap(space, page)?;
    }
    let asked = tlb::served(holder_cpu) - before;
    check(asked < ROUNDS, || format!("CPU {holder_cpu}, which left the space, was still asked {asked} times for {ROUNDS} unmaps"))
}

crate::kernel_tests! {
    "memory" => [
        a_shootdown_asks_only_the_cpus_that_have_the_space_loaded,
    ],
}
