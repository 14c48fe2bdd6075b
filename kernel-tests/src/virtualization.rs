//! The machine's SVM layer running real guest code (issue 24): a guest
//! whose nested page tables are a space of our own with one code page at
//! guest-physical 0x1000, run in real mode from there. Each intercept the
//! machine fixes must end the guest with the right exit: port output
//! (with the port, the byte and the next instruction's address), `hlt`,
//! `cpuid`, a write to a guest-physical page the tables do not map (a
//! nested page fault naming it), a guest spinning for ever (ended by the
//! host's timer, so the host keeps its CPU), and a triple fault.

use alloc::format;
use alloc::string::String;

use machine::svm::{self, GuestRegisters, Segment, SegmentState, Vcpu, VmExit};

use super::frame_record::{claimed_frame, give_back};
use super::runner::{check, Outcome};
use super::small_space::{SmallSpace, USER_WRITABLE};
use kernel_objects::SystemFacts;

/// Guest-physical address of the code.
const CODE: u64 = 0x1000;
/// The guest's program (16-bit), by offset from `CODE`:
/// 0x00 `mov dx, 0x3f8`, 0x03 `add al, bl`, 0x05 `add al, '0'`,
/// 0x07 `out dx, al`, 0x08 `mov al, 10`, 0x0a `out dx, al`, 0x0b `hlt`,
/// 0x0c `cpuid`, 0x0e `mov [0x3000], al`, 0x11 `jmp $`, 0x13 `ud2`.
const PROGRAM: [u8; 21] = [0xBA, 0xF8, 0x03, 0x00, 0xD8, 0x04, 0x30, 0xEE, 0xB0, 0x0A, 0xEE, 0xF4, 0x0F, 0xA2, 0xA2, 0x00, 0x30, 0xEB, 0xFE, 0x0F, 0x0B];
const UNMAPPED: u64 = 0x3000;

pub fn a_real_mode_guest_exits_at_each_intercept(_facts: &SystemFacts) -> Outcome {
    check(svm::offered() && svm::available(), || "SVM with nested paging is not available (the test machine is QEMU's -cpu max)".into())?;
    let mut space = SmallSpace::new()?;
    let outcome = run_guest(&mut space);
    space.tear_down()?;
    outcome
}

fn run_guest(space: &mut SmallSpace) -> Outcome {
    let leaves = space.first_leaf_table()?;
    space.link(leaves, (CODE / 4096) as usize, USER_WRITABLE)?;
    check(space.tables.write_user(CODE, &PROGRAM), || "the guest's code page could not be filled".into())?;
    let mut vcpu = Vcpu::new(claimed_frame()?).map_err(|frame| {
        let _ = give_back(frame);
        String::from("a vCPU could not be made")
    })?;
    let outcome = exits(space, &mut vcpu);
    give_back(vcpu.into_frame())?;
    outcome
}

fn exits(space: &SmallSpace, vcpu: &mut Vcpu) -> Outcome {
    let token = space.tables.token();
    let reset = vcpu.registers();
    check(reset.rip == 0xFFF0 && vcpu.segment(Segment::Cs).base == 0xFFFF_0000, || format!("reset state: rip {:#x}, cs {:?}", reset.rip, vcpu.segment(Segment::Cs)))?;
    vcpu.set_segment(Segment::Cs, SegmentState { selector: 0, attributes: 0x9B, limit: 0xFFFF, base: 0 });
    vcpu.set_registers(GuestRegisters { rip: CODE, rax: 2, rbx: 2, rflags: 2, ..GuestRegisters::default() });
    let run = |vcpu: &mut Vcpu| vcpu.run(&token).ok_or_else(|| String::from("the nested root was refused"));

    for (expected_byte, expected_next) in [(b'4', CODE + 0x08), (b'\n', CODE + 0x0B)] {
        let exit = run(vcpu)?;
        let byte = vcpu.registers().rax as u8;
        check(
            exit == VmExit::Io { port: 0x3F8, input: false, bytes: 1, string: false, repeat: false, next_rip: expected_next } && byte == expected_byte,
            || format!("expected `out` of {expected_byte:#x} to 0x3f8, saw {exit:?} with al = {byte:#x}"),
        )?;
        let registers = vcpu.registers();
        vcpu.set_registers(GuestRegisters { rip: expected_next, ..registers });
    }

    let exit = run(vcpu)?;
    check(exit == VmExit::Halt && vcpu.registers().rip == CODE + 0x0B, || format!("expected hlt at {:#x}, saw {exit:?} at {:#x}", CODE + 0x0B, vcpu.registers().rip))?;
    step_to(vcpu, CODE + 0x0C);
    let exit = run(vcpu)?;
    check(exit == VmExit::Cpuid, || format!("expected cpuid, saw {exit:?}"))?;
    step_to(vcpu, CODE + 0x0E);

    let exit = run(vcpu)?;
    let write_fault = matches!(exit, VmExit::NestedPageFault { guest_physical: UNMAPPED, error_code } if error_code & 2 != 0);
    check(write_fault, || format!("expected a nested page fault writing {UNMAPPED:#x}, saw {exit:?}"))?;
    // `jmp $` for ever, with the guest's interrupts off: only the host's
    // timer interrupt ends it, since with V_INTR_MASKING the host's IF at
    // VMRUN decides, not the guest's. (A 64-bit store to TLB_CONTROL once
    // zeroed V_INTR_MASKING at every entry, and such a guest kept its CPU.)
    for guest_flags in [0x002, 0x202] {
        step_to(vcpu, CODE + 0x11);
        let registers = vcpu.registers();
        vcpu.set_registers(GuestRegisters { rflags: guest_flags, ..registers });
        let exit = run(vcpu)?;
        check(exit == VmExit::HostInterrupt && vcpu.registers().rip == CODE + 0x11, || {
            format!("a spinning guest (RFLAGS {guest_flags:#x}): expected a host interrupt at {:#x}, saw {exit:?} at {:#x}", CODE + 0x11, vcpu.registers().rip)
        })?;
    }

    // `ud2` with an empty interrupt table: #UD, #GP, then a triple fault.
    vcpu.set_segment(Segment::Idtr, SegmentState::default());
    step_to(vcpu, CODE + 0x13);
    let exit = run(vcpu)?;
    check(exit == VmExit::Shutdown, || format!("expected a triple fault (shutdown), saw {exit:?}"))
}

fn step_to(vcpu: &mut Vcpu, rip: u64) {
    let registers = vcpu.registers();
    vcpu.set_registers(GuestRegisters { rip, ..registers });
}

crate::kernel_tests! {
    "virtualization" => [
        a_real_mode_guest_exits_at_each_intercept,
    ],
}
