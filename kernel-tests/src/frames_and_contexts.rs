//! Tests of the frame allocator on real memory, of kernel stacks made after
//! boot, and of the machine layer's context switch.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use machine::context::{self, ThreadContext};
use machine::irq_lock::IrqLock;
use machine::{layout, paging, tlb};

use super::runner::{check, Outcome};
use kernel_objects::physical_memory::{allocate_frame, allocate_kernel_stack, free_frames, free_kernel_stack};
use kernel_objects::SystemFacts;
use frames::FrameNumber;

pub fn frame_allocator_hands_out_each_frame_once(_facts: &SystemFacts) -> Outcome {
    let free_before = free_frames();
    let mut taken = Vec::with_capacity(free_before as usize);
    while let Ok(frame) = allocate_frame() {
        taken.push(frame);
    }
    let count = taken.len() as u64;
    check(count == free_before, || format!("expected {free_before} frames before running out, got {count}"))?;
    let mut sorted: Vec<FrameNumber> = taken.iter().map(|frame| frame.number()).collect();
    sorted.sort_unstable();
    sorted.dedup();
    check(sorted.len() == taken.len(), || format!("{} frames handed out twice", taken.len() - sorted.len()))?;
    let kernel = layout::kernel_physical();
    let inside_kernel = taken.iter().any(|frame| (kernel.start..kernel.end).contains(&frame.number().start_address().0));
    check(!inside_kernel, || "a frame of the kernel image was handed out".into())?;
    drop(taken); // each handle frees its frame
    let free_after = free_frames();
    check(free_after == free_before, || format!("free frames {free_before} before, {free_after} after"))
}

/// A stack made after boot is mapped above a guard; freeing it unmaps it,
/// asks every other CPU to invalidate it, and gives every frame back
/// (page tables left empty included).
pub fn kernel_stacks_made_after_boot_are_guarded(_facts: &SystemFacts) -> Outcome {
    sched::release_spare_stacks();
    let free_before = free_frames();
    let stack = allocate_kernel_stack().map_err(|error| format!("{error:?}"))?;
    check(paging::translate(stack.bottom()).is_some(), || "stack bottom not mapped".into())?;
    check(paging::translate(stack.top() - 8).is_some(), || "stack top not mapped".into())?;
    // Touch it from here so this CPU caches the translation.
    check(paging::translate(stack.bottom()).is_some(), || "stack bottom not mapped".into())?;
    let guard = stack.bottom() - layout::PAGE_SIZE;
    check(paging::translate(guard).is_none(), || format!("guard page {guard:#x} is mapped"))?;
    let online = machine::percpu::online_count();
    let me = machine::percpu::current_index();
    let served_before: Vec<u64> = (0..online).map(tlb::served).collect();
    let bottom = stack.bottom();
    free_kernel_stack(stack);
    check(paging::translate(bottom).is_none(), || "a freed stack is still mapped".into())?;
    for cpu in (0..online).filter(|&cpu| cpu != me) {
        check(tlb::served(cpu) > served_before[cpu], || format!("CPU {cpu} was not asked to invalidate the freed stack"))?;
    }
    let free_after = free_frames();
    check(free_after == free_before, || format!("free frames {free_before} before the stack, {free_after} after freeing it"))
}

static MAIN_CONTEXT: IrqLock<Option<Arc<ThreadContext>>> = IrqLock::new(None);
static PING_PONGS: AtomicU64 = AtomicU64::new(0);

fn ping_pong_partner(_argument: usize) -> ! {
    loop {
        PING_PONGS.fetch_add(1, Ordering::SeqCst);
        let main = MAIN_CONTEXT.lock().clone().expect("the test stored its context");
        context::switch_to(main);
    }
}

pub fn context_switch_ping_pongs(_facts: &SystemFacts) -> Outcome {
    let stack = allocate_kernel_stack().map_err(|error| format!("{error:?}"))?;
    let partner = ThreadContext::new(stack, ping_pong_partner, 0);
    *MAIN_CONTEXT.lock() = Some(context::current());
    PING_PONGS.store(0, Ordering::SeqCst);
    for round in 1..=1000u64 {
        context::switch_to(partner.clone());
        let seen = PING_PONGS.load(Ordering::SeqCst);
        check(seen == round, || format!("after {round} switches the partner ran {seen} times"))?;
    }
    check(!partner.is_running(), || "the partner still counts as running after switching away".into())
}

crate::kernel_tests! {
    "memory" => [
        frame_allocator_hands_out_each_frame_once,
        kernel_stacks_made_after_boot_are_guarded,
    ],
    "context" => [
        context_switch_ping_pongs,
    ],
}
