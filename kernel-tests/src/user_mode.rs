//! Ring 3 on real hardware state: a tiny program runs in its own address
//! space, takes a demand-zero fault, makes system calls, is interrupted by
//! the timer; a forked copy sees only its own writes (copy-on-write); bad
//! accesses come back as exceptions, never kernel faults; and when both
//! spaces are gone every frame is free and nothing stays charged.

use alloc::format;
use alloc::string::String;

use machine::user::{run_user, vectors, UserContext, UserExit};
use machine::{paging, percpu};
use kernel_objects::user_memory::{read_user, PendingFlush};
use kernel_objects::address_spaces::{prepare_to_enter, switch_to};
use kernel_objects::OwnedFrame;
use vmem::{Access, Fault, Rights};

use super::runner::{check, Outcome};
use kernel_objects::address_spaces::{carry_out, fork_space, new_space, KernelSpace};
use containers::ContainerId;
use kernel_objects::kernel_containers::containers;
use kernel_objects::physical_memory::free_frames;
use kernel_objects::SystemFacts;

const CODE: u64 = 0x40_0000;
const DATA: u64 = 0x60_0000;

/// mov rax,[rdi]; syscall; mov qword [rdi],rsi; mov rax,[rdi]; syscall; jmp $
const PROGRAM: [u8; 19] = [
    0x48, 0x8B, 0x07, 0x0F, 0x05, 0x48, 0x89, 0x37, 0x48, 0x8B, 0x07, 0x0F, 0x05, 0x90, 0x90, 0x90, 0x90, 0xEB, 0xFE,
];
/// Where the endless loop starts.
const LOOP_AT: u64 = CODE + 17;

/// What a run of the program saw: the `rax` of each system call, and
/// whether it reached its loop.
struct Run {
    syscalls: [u64; 2],
    count: usize,
    looping: bool,
}

/// Runs `context` until it loops (a timer interrupt finds it there),
/// resolving page faults through `space`.
fn run_program(space: &mut KernelSpace, context: &mut UserContext) -> Result<Run, String> {
    let mut run = Run { syscalls: [0; 2], count: 0, looping: false };
    for _ in 0..100_000 {
        let tables = prepare_to_enter(space);
        check(switch_to(tables), || "the space's root was refused".into())?;
        match run_user(context) {
            UserExit::Syscall => {
                let slot = run.syscalls.get_mut(run.count).ok_or("more system calls than the program makes")?;
                *slot = context.registers.rax;
                run.count += 1;
            }
            UserExit::Exception { vector: vectors::PAGE_FAULT, error_code, address } => {
                let access = if error_code & 2 != 0 { Access::Write } else if error_code & 16 != 0 { Access::Execute } else { Access::Read };
                space.handle_fault(address, access).map_err(|fault| format!("fault at {address:#x} ({access:?}) not resolved: {fault:?}"))?;
            }
            UserExit::Exception { vector, error_code, address } => {
                return Err(format!("exception {vector} (code {error_code:#x}, address {address:#x}) at {:#x}", context.registers.rip));
            }
            UserExit::Kicked => return Err("run_user reported a kick it cannot get".into()),
            UserExit::Interrupt { .. } => {
                if context.registers.rip == LOOP_AT {
                    run.looping = true;
                    break;
                }
            }
        }
    }
    paging::switch_to_kernel_tables();
    Ok(run)
}

fn load_program(space: &mut KernelSpace, container: ContainerId) -> Outcome {
    let mut frame = OwnedFrame::allocate(container).map_err(|error| format!("code frame: {error:?}"))?;
    check(frame.zero() && frame.write_bytes(0, &PROGRAM), || "writing the program failed".into())?;
    // The space takes the frame over.
    space.map(CODE, frame, Rights::READ_EXECUTE).map_err(|error| format!("mapping the code: {error:?}"))?;
    space.add_demand_zero(DATA, vmem::PAGE_SIZE, Rights::READ_WRITE).map_err(|error| format!("data region: {error:?}"))
}

fn program_context(value: u64) -> UserContext {
    let mut context = UserContext::new(CODE, DATA + vmem::PAGE_SIZE);
    context.registers.rdi = DATA;
    context.registers.rsi = value;
    context
}

pub fn a_program_runs_in_ring_3_and_fork_copies_on_write(_facts: &SystemFacts) -> Outcome {
    check(machine::user::ready_cpus() as usize == percpu::online_count(), || "not every CPU enabled user mode".into())?;
    let tree = containers().ok_or("no container tree")?;
    let root = sched::current().container();
    sched::release_spare_stacks();
    let free_before = free_frames();
    let container = tree.create_child(root, 64).map_err(|error| format!("{error:?}"))?;

    let mut parent = new_space(container).map_err(|error| format!("new space: {error:?}"))?;
    load_program(&mut parent, container)?;
    let mut context = program_context(42);
    let run = run_program(&mut parent, &mut context)?;
    check(run.count == 2 && run.syscalls == [0, 42] && run.looping, || format!("parent saw {:?} ({} calls, looping {})", run.syscalls, run.count, run.looping))?;

    // Fork; the child writes 7, the parent's page must still hold 42.
    let (mut child, flush) = fork_space(&mut parent, container).map_err(|error| format!("fork: {error:?}"))?;
    carry_out(flush);
    let mut child_context = program_context(7);
    let run = run_program(&mut child, &mut child_context)?;
    check(run.syscalls == [42, 7], || format!("child saw {:?}: want the parent's 42, then its own 7", run.syscalls))?;
    let mut context = program_context(99);
    context.registers.rip = CODE + 5; // skip the first read and call: store 99, read, call
    let run = run_program(&mut parent, &mut context)?;
    check(run.syscalls[0] == 99, || format!("parent read {} after its own write of 99", run.syscalls[0]))?;
    let parent_frame = parent.translate(DATA).ok_or("parent data unmapped")?.frame;
    let child_frame = child.translate(DATA).ok_or("child data unmapped")?.frame;
    check(parent_frame != child_frame, || "parent and child still share the written page".into())?;
    let mut word = [0u8; 8];
    let mut flush = PendingFlush::default();
    read_user(&mut child, DATA, &mut word, &mut flush).map_err(|errno| format!("reading the child's page: {errno:?}"))?;
    flush.carry_out();
    check(u64::from_le_bytes(word) == 7, || "the child's page lost its write".into())?;

    // Bad accesses are exceptions for the program, not kernel faults.
    let mut context = UserContext::new(CODE, DATA + vmem::PAGE_SIZE);
    context.registers.rdi = 0x10; // mov rax,[rdi] reads address 0x10
    switch_to(prepare_to_enter(&mut parent));
    let exit = run_user(&mut context);
    paging::switch_to_kernel_tables();
    let segv = matches!(exit, UserExit::Exception { vector: vectors::PAGE_FAULT, address: 0x10, .. });
    check(segv, || format!("reading address 0x10 gave {exit:?}"))?;
    check(parent.handle_fault(0x10, Access::Read) == Err(Fault::Segmentation), || "address 0x10 was resolved".into())?;
    let mut context = UserContext::new(0xFFFF_8000_0000_0000, 0);
    let exit = run_user(&mut context);
    check(matches!(exit, UserExit::Exception { vector: vectors::GENERAL_PROTECTION, .. }), || format!("a kernel RIP gave {exit:?}"))?;

    // A kick seen with interrupts off: user mode is not entered at all.
    let mut context = program_context(5);
    let before = context.registers.rip;
    let exit = kernel_objects::address_spaces::run_user_in(&machine::cpu::InterruptsOff::new(), &prepare_to_enter(&mut parent), &mut context, || true);
    paging::switch_to_kernel_tables();
    check(exit == UserExit::Kicked && context.registers.rip == before, || format!("a kicked entry gave {exit:?}, rip {:#x}", context.registers.rip))?;

    carry_out(child.destroy());
    carry_out(parent.destroy());
    let charged = tree.charged(container).map_err(|error| format!("{error:?}"))?;
    check(charged == 0, || format!("{charged} pages still charged after both spaces went"))?;
    tree.destroy(container).map_err(|error| format!("{error:?}"))?;
    let free_after = free_frames();
    check(free_after == free_before, || format!("free frames {free_before} before, {free_after} after"))
}

crate::kernel_tests! {
    "memory" => [
        a_program_runs_in_ring_3_and_fork_copies_on_write,
    ],
}
