//! Linux's KVM interface: the `ioctl`s of `/dev/kvm`, a VM's descriptor
//! and a vCPU's, and `mmap` of a vCPU's `kvm_run` area, over
//! `kernel_objects::virtual_machines` (the layouts and rules are
//! `kvm-abi`'s). `KVM_RUN` runs the guest until an exit the VMM handles:
//! port I/O, `hlt`, a triple fault, a state the CPU refuses, or a signal.
//!
//! What the hypervisor does itself, inside `KVM_RUN`: nested page faults
//! in a memory slot (the VMM's page is lent to the guest), CPUID (the
//! host's values without SVM, with the hypervisor bit), and MSRs
//! (`kvm_abi::msrs`: the VMCB's state, fixed values, or #GP). A fault outside every slot is MMIO: the
//! instruction is read through the guest's tables and decoded
//! (`kvm_abi::mmio_decode`), and the VMM gets `KVM_EXIT_MMIO`; one that
//! does not decode, and `ins`/`outs`, end the run with
//! `KVM_EXIT_INTERNAL_ERROR`. Not yet: an in-kernel interrupt controller,
//! interrupt injection.
//!
//! Must never let a bad argument panic: every size and number is checked
//! and every refusal is Linux's errno (EINVAL on `/dev/kvm` and a vCPU
//! for an unknown request, ENOTTY on a VM).

use alloc::sync::Arc;

use caps::Placement;
use kernel_objects::virtual_machines::{Completion, GuestFault, VirtualCpu, VirtualMachine};
use kvm_abi::guest_walk::{translate, Paging};
use kvm_abi::mmio_decode::{decode, merge_load, CodeMode, Operand};
use kvm_abi::msrs::{efer_write, home as msr_home, MsrHome, StateMsr};
use kvm_abi::ioctls::*;
use kvm_abi::layouts::{self, MemoryRegion, Regs, RunExit, Segment as KvmSegment, Sregs, DescriptorTable};
use linux_abi::Errno;
use machine::svm::{GuestField, GuestRegisters, Segment, SegmentState, Vcpu, VmExit};

use super::files::install;
use super::{value, Call, CallResult};
use crate::open_files::{flags, Backing, Device, KvmFile, OpenFile};

/// The `ioctl`s of a KVM descriptor (`file`).
pub fn ioctl(call: &mut Call<'_>, file: &OpenFile, request: u64, argument: u64) -> CallResult {
    match &file.backing {
        Backing::Device(Device::Kvm, _) => system_ioctl(call, request, argument),
        Backing::Kvm(KvmFile::Machine(vm)) if !vm.driven_by(call.process.native.space()) => Err(Errno::EIO),
        Backing::Kvm(KvmFile::Processor(vcpu)) if !vcpu.vm.driven_by(call.process.native.space()) => Err(Errno::EIO),
        Backing::Kvm(KvmFile::Machine(vm)) => machine_ioctl(call, vm, request, argument),
        Backing::Kvm(KvmFile::Processor(vcpu)) => processor_ioctl(call, vcpu, request, argument),
        _ => Err(Errno::ENOTTY),
    }
}

fn new_descriptor(call: &Call<'_>, file: KvmFile) -> CallResult {
    install(call, OpenFile::new(Backing::Kvm(file), flags::O_RDWR), Placement::LowestFrom(0), true)
}

fn check_extension(capability: u64) -> u64 {
    match capability {
        capabilities::USER_MEMORY | capabilities::IMMEDIATE_EXIT => 1,
        capabilities::NR_MEMSLOTS => u64::from(kvm_abi::memory_slots::USER_SLOTS),
        _ => 0,
    }
}

fn system_ioctl(call: &mut Call<'_>, request: u64, argument: u64) -> CallResult {
    match request {
        KVM_GET_API_VERSION if argument == 0 => value(API_VERSION),
        KVM_CREATE_VM if argument == 0 => {
            let vm = VirtualMachine::new(call.process.native.container(), call.process.native.space())?;
            new_descriptor(call, KvmFile::Machine(vm))
        }
        KVM_CHECK_EXTENSION => value(check_extension(argument)),
        KVM_GET_VCPU_MMAP_SIZE if argument == 0 => value(layouts::VCPU_MMAP_BYTES as u64),
        KVM_GET_SUPPORTED_CPUID => {
            let mut count = [0u8; 4];
            call.read_in(argument, &mut count)?;
            let offered = supported_cpuid();
            if (u32::from_le_bytes(count) as usize) < offered.len() {
                return Err(Errno::E2BIG);
            }
            call.write_out(argument, &(offered.len() as u32).to_le_bytes())?;
            for (index, entry) in offered.iter().enumerate() {
                call.write_out(argument + 8 + (index * kvm_abi::cpuid::ENTRY_BYTES) as u64, &entry.encode())?;
            }
            value(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn machine_ioctl(call: &mut Call<'_>, vm: &Arc<VirtualMachine>, request: u64, argument: u64) -> CallResult {
    match request {
        KVM_CREATE_VCPU => {
            let id = u32::try_from(argument).map_err(|_| Errno::EINVAL)?;
            let vcpu = VirtualCpu::new(vm.clone(), id)?;
            new_descriptor(call, KvmFile::Processor(vcpu))
        }
        KVM_SET_USER_MEMORY_REGION => {
            let mut bytes = [0u8; layouts::MEMORY_REGION_BYTES];
            call.read_in(argument, &mut bytes)?;
            vm.set_memory_region(MemoryRegion::decode(&bytes))?;
            value(0)
        }
        KVM_CHECK_EXTENSION => value(check_extension(argument)),
        _ => Err(Errno::ENOTTY),
    }
}

fn processor_ioctl(call: &mut Call<'_>, vcpu: &Arc<VirtualCpu>, request: u64, argument: u64) -> CallResult {
    match request {
        KVM_RUN if argument == 0 => run(call, vcpu),
        KVM_SET_CPUID2 => {
            let mut count = [0u8; 4];
            call.read_in(argument, &mut count)?;
            let count = u32::from_le_bytes(count) as usize;
            if count > kvm_abi::cpuid::MAX_ENTRIES {
                return Err(Errno::E2BIG);
            }
            let mut table = alloc::vec::Vec::new();
            table.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
            for index in 0..count {
                let mut bytes = [0u8; kvm_abi::cpuid::ENTRY_BYTES];
                call.read_in(argument + 8 + (index * kvm_abi::cpuid::ENTRY_BYTES) as u64, &mut bytes)?;
                table.push(kvm_abi::cpuid::CpuidEntry::decode(&bytes));
            }
            vcpu.set_cpuid(table);
            value(0)
        }
        KVM_INTERRUPT => {
            let mut word = [0u8; 4];
            call.read_in(argument, &mut word)?;
            let vector = u8::try_from(u32::from_le_bytes(word)).map_err(|_| Errno::EINVAL)?;
            vcpu.queue_interrupt(vector);
            value(0)
        }
        KVM_GET_REGS => {
            let regs = vcpu.with(|vcpu| to_regs(vcpu.registers()))?;
            call.write_out(argument, &regs.encode())?;
            value(0)
        }
        KVM_SET_REGS => {
            let mut bytes = [0u8; layouts::REGS_BYTES];
            call.read_in(argument, &mut bytes)?;
            let regs = Regs::decode(&bytes);
            vcpu.with(|vcpu| vcpu.set_registers(from_regs(&regs)))?;
            value(0)
        }
        KVM_GET_SREGS => {
            let sregs = vcpu.with(|machine| special_registers(machine, vcpu.id))?;
            call.write_out(argument, &sregs.encode())?;
            value(0)
        }
        KVM_SET_SREGS => {
            let mut bytes = [0u8; layouts::SREGS_BYTES];
            call.read_in(argument, &mut bytes)?;
            let sregs = Sregs::decode(&bytes);
            vcpu.with(|machine| set_special_registers(machine, &sregs))?;
            value(0)
        }
        KVM_GET_MSRS => msr_batch(call, vcpu, argument, false),
        KVM_SET_MSRS => msr_batch(call, vcpu, argument, true),
        KVM_GET_FPU => {
            let fpu = vcpu.with(|machine| kvm_abi::fpu_msrs::fpu_from_fxsave(&machine.fpu_legacy()))?;
            call.write_out(argument, &fpu)?;
            value(0)
        }
        KVM_SET_FPU => {
            let mut fpu = [0u8; kvm_abi::fpu_msrs::FPU_BYTES];
            call.read_in(argument, &mut fpu)?;
            let accepted = vcpu.with(|machine| {
                let image = kvm_abi::fpu_msrs::fxsave_from_fpu(&fpu, &machine.fpu_legacy());
                machine.set_fpu_legacy(&image)
            })?;
            if accepted {
                value(0)
            } else {
                Err(Errno::EINVAL)
            }
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `KVM_GET_MSRS` / `KVM_SET_MSRS`: each entry in turn through the same
/// homes a guest's `rdmsr`/`wrmsr` reaches, stopping at the first MSR that
/// is not there (or a value it refuses); answers how many were done, and
/// for a read writes every entry back, as Linux's `msr_io` does.
fn msr_batch(call: &mut Call<'_>, vcpu: &Arc<VirtualCpu>, argument: u64, write: bool) -> CallResult {
    use kvm_abi::fpu_msrs::{decode_msr_entry, encode_msr_entry, MAX_IO_MSRS, MSRS_HEADER_BYTES, MSR_ENTRY_BYTES};
    let mut header = [0u8; 4];
    call.read_in(argument, &mut header)?;
    let count = u32::from_le_bytes(header) as usize;
    if count >= MAX_IO_MSRS {
        return Err(Errno::E2BIG);
    }
    let entry_address = |index: usize| argument + (MSRS_HEADER_BYTES + index * MSR_ENTRY_BYTES) as u64;
    let mut entries = alloc::vec::Vec::new();
    entries.try_reserve_exact(count).map_err(|_| Errno::ENOMEM)?;
    for index in 0..count {
        let mut bytes = [0u8; MSR_ENTRY_BYTES];
        call.read_in(entry_address(index), &mut bytes)?;
        entries.push(decode_msr_entry(&bytes));
    }
    let done = vcpu.with(|machine| {
        let mut done = 0;
        for (index, data) in entries.iter_mut() {
            let ok = if write {
                write_msr(machine, *index, *data).is_some()
            } else {
                // A read that fails leaves 0 in its entry, as Linux does.
                let read = read_msr(machine, *index, vcpu.id);
                *data = read.unwrap_or(0);
                read.is_some()
            };
            if !ok {
                break;
            }
            done += 1;
        }
        done
    })?;
    if !write {
        for (position, (index, data)) in entries.iter().enumerate() {
            call.write_out(entry_address(position), &encode_msr_entry(*index, *data))?;
        }
    }
    value(done as u64)
}

fn to_regs(registers: GuestRegisters) -> Regs {
    let r = registers;
    Regs([r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rsp, r.rbp, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip, r.rflags])
}

fn from_regs(regs: &Regs) -> GuestRegisters {
    let w = regs.0;
    GuestRegisters {
        rax: w[0],
        rbx: w[1],
        rcx: w[2],
        rdx: w[3],
        rsi: w[4],
        rdi: w[5],
        rsp: w[6],
        rbp: w[7],
        r8: w[8],
        r9: w[9],
        r10: w[10],
        r11: w[11],
        r12: w[12],
        r13: w[13],
        r14: w[14],
        r15: w[15],
        rip: w[16],
        rflags: w[17],
    }
}

/// `kvm_sregs`' segment order.
const SEGMENTS: [Segment; 8] = [Segment::Cs, Segment::Ds, Segment::Es, Segment::Fs, Segment::Gs, Segment::Ss, Segment::Tr, Segment::Ldtr];

fn special_registers(vcpu: &Vcpu, id: u32) -> Sregs {
    let mut sregs = Sregs::default();
    for (slot, segment) in sregs.segments.iter_mut().zip(SEGMENTS) {
        let state = vcpu.segment(segment);
        *slot = KvmSegment::from_vmcb(state.selector, state.attributes, state.limit, state.base);
    }
    let table = |segment| {
        let state = vcpu.segment(segment);
        DescriptorTable { base: state.base, limit: state.limit as u16 }
    };
    sregs.gdt = table(Segment::Gdtr);
    sregs.idt = table(Segment::Idtr);
    sregs.cr0 = vcpu.get(GuestField::Cr0);
    sregs.cr2 = vcpu.get(GuestField::Cr2);
    sregs.cr3 = vcpu.get(GuestField::Cr3);
    sregs.cr4 = vcpu.get(GuestField::Cr4);
    sregs.efer = vcpu.get(GuestField::Efer);
    // The local APIC's default base, enabled, and BSP for vCPU 0.
    sregs.apic_base = 0xFEE0_0800 | if id == 0 { 0x100 } else { 0 };
    sregs
}

fn set_special_registers(vcpu: &mut Vcpu, sregs: &Sregs) {
    for (segment, kvm) in SEGMENTS.into_iter().zip(sregs.segments.iter()) {
        vcpu.set_segment(segment, SegmentState { selector: kvm.selector, attributes: kvm.vmcb_attributes(), limit: kvm.limit, base: kvm.base });
    }
    vcpu.set_segment(Segment::Gdtr, SegmentState { limit: u32::from(sregs.gdt.limit), base: sregs.gdt.base, ..SegmentState::default() });
    vcpu.set_segment(Segment::Idtr, SegmentState { limit: u32::from(sregs.idt.limit), base: sregs.idt.base, ..SegmentState::default() });
    vcpu.set(GuestField::Cr0, sregs.cr0);
    vcpu.set(GuestField::Cr2, sregs.cr2);
    vcpu.set(GuestField::Cr3, sregs.cr3);
    vcpu.set(GuestField::Cr4, sregs.cr4);
    vcpu.set(GuestField::Efer, sregs.efer);
}

/// `mmap` of a vCPU descriptor: its `kvm_run` area, shared, whole.
pub fn map_run_area(call: &Call<'_>, vcpu: &VirtualCpu, address: u64, length: u64, offset: u64, rights: vmem::Rights) -> Result<(), Errno> {
    if offset != 0 || length != layouts::VCPU_MMAP_BYTES as u64 {
        return Err(Errno::EINVAL);
    }
    kernel_objects::capabilities::memory_objects::map_into(&call.process.native, address, vcpu.run_area, rights)
}

/// The first bytes of `kvm_run`: its header and the exit's fields.
fn run_header(vcpu: &VirtualCpu) -> Result<[u8; 64], Errno> {
    let mut header = [0u8; 64];
    kernel_objects::capabilities::memory_objects::read(vcpu.run_area, 0, &mut header)?;
    Ok(header)
}

fn report(vcpu: &VirtualCpu, mut header: [u8; 64], exit: RunExit, guest_interrupts_on: bool, ready_for_injection: bool) -> CallResult {
    exit.encode(&mut header);
    header[layouts::run_offsets::IF_FLAG] = u8::from(guest_interrupts_on);
    header[layouts::run_offsets::READY_FOR_INTERRUPT_INJECTION] = u8::from(ready_for_injection);
    kernel_objects::capabilities::memory_objects::write(vcpu.run_area, 0, &header)?;
    value(0)
}

/// Why a run returned to the VMM.
enum Stop {
    Exit(RunExit),
    /// A signal is pending (EINTR, `KVM_EXIT_INTR`).
    Interrupted,
}

/// `KVM_RUN`.
fn run(call: &mut Call<'_>, vcpu: &Arc<VirtualCpu>) -> CallResult {
    let header = run_header(vcpu)?;
    let mut machine = vcpu.take()?;
    let window_wanted = header[layouts::run_offsets::REQUEST_INTERRUPT_WINDOW] != 0;
    let stop = if header[layouts::run_offsets::IMMEDIATE_EXIT] != 0 { Ok(Stop::Interrupted) } else { run_taken(call, vcpu, &mut machine, window_wanted) };
    let interrupts_on = machine.registers().rflags & (1 << 9) != 0;
    let ready = machine.interruptible() && !vcpu.has_queued_interrupt();
    machine.request_interrupt_window(false);
    vcpu.put_back(machine);
    match stop? {
        Stop::Exit(exit) => report(vcpu, header, exit, interrupts_on, ready),
        Stop::Interrupted => {
            // As on every exit (Linux's post_kvm_run_save): the VMM's view of
            // the guest's IF and readiness must not be an older exit's.
            let mut header = run_header(vcpu)?;
            header[layouts::run_offsets::EXIT_REASON..layouts::run_offsets::EXIT_REASON + 4].copy_from_slice(&10u32.to_le_bytes());
            header[layouts::run_offsets::IF_FLAG] = u8::from(interrupts_on);
            header[layouts::run_offsets::READY_FOR_INTERRUPT_INJECTION] = u8::from(ready);
            kernel_objects::capabilities::memory_objects::write(vcpu.run_area, 0, &header)?;
            Err(Errno::EINTR)
        }
    }
}

/// Finishes an `in` the VMM supplied the data of, then runs the guest
/// until an exit for the VMM.
fn run_taken(call: &mut Call<'_>, vcpu: &VirtualCpu, machine: &mut Vcpu, window_wanted: bool) -> Result<Stop, Errno> {
    complete(vcpu, machine)?;
    loop {
        if call.interrupted() {
            return Ok(Stop::Interrupted);
        }
        // The window the VMM asked for is open: say so now, as Linux does
        // before entering. Checked after every exit the kernel handles
        // itself too, since under QEMU's TCG the VINTR intercept misses a
        // window the guest's own `sti` opens (docs/hypervisor.md); a host
        // timer interrupt, which ends a guest running with IF on, bounds
        // the wait.
        if window_wanted && machine.interruptible() && !vcpu.has_queued_interrupt() {
            return Ok(Stop::Exit(RunExit::InterruptWindowOpen));
        }
        // A queued interrupt goes in once the guest can take it; until
        // then the guest runs with the window asked for.
        let (deliver, waiting) = vcpu.interrupt_to_deliver(machine.interruptible());
        if let Some(vector) = deliver {
            machine.inject(machine::svm::GuestEvent::Interrupt { vector });
        }
        machine.request_interrupt_window(waiting || window_wanted);
        let exit = vcpu.run(machine)?;
        machine.requeue_interrupted_delivery();
        let mut registers = machine.registers();
        match exit {
            VmExit::Io { string: true, .. } | VmExit::Io { repeat: true, .. } => return Ok(Stop::Exit(RunExit::InternalError { suberror: 1 })),
            VmExit::Io { port, input, bytes, next_rip, .. } => {
                if input {
                    vcpu.with_pending(|pending| *pending = Some(Completion::Input { size: bytes, next_rip }));
                } else {
                    let data = registers.rax.to_le_bytes();
                    kernel_objects::capabilities::memory_objects::write(vcpu.run_area, layouts::IO_DATA_OFFSET as u64, &data[..usize::from(bytes)])?;
                    registers.rip = next_rip;
                    machine.finish_instruction(registers);
                }
                return Ok(Stop::Exit(RunExit::Io { input, size: bytes, port, count: 1 }));
            }
            VmExit::Halt => {
                registers.rip = registers.rip.wrapping_add(1);
                machine.finish_instruction(registers);
                return Ok(Stop::Exit(RunExit::Halt));
            }
            VmExit::Cpuid => {
                let (function, index) = (registers.rax as u32, registers.rcx as u32);
                let mut answer = vcpu.cpuid_answer(function, index).unwrap_or_else(|| offered_cpuid(function, index));
                // As on a CPU (and as KVM keeps it at run time): OSXSAVE and
                // OSPKE follow the guest's own CR4, whatever the table says.
                let cr4 = machine.get(GuestField::Cr4);
                match (function, index) {
                    (1, _) => answer[2] = (answer[2] & !(1 << 27)) | if cr4 & (1 << 18) != 0 { 1 << 27 } else { 0 },
                    (7, 0) => answer[2] = (answer[2] & !(1 << 4)) | if cr4 & (1 << 22) != 0 { 1 << 4 } else { 0 },
                    _ => {}
                }
                registers.rax = u64::from(answer[0]);
                registers.rbx = u64::from(answer[1]);
                registers.rcx = u64::from(answer[2]);
                registers.rdx = u64::from(answer[3]);
                registers.rip = registers.rip.wrapping_add(2);
                machine.finish_instruction(registers);
            }
            VmExit::Msr { write } => {
                let index = registers.rcx as u32;
                let value = (registers.rdx << 32) | (registers.rax & 0xFFFF_FFFF);
                let done = if write {
                    write_msr(machine, index, value)
                } else {
                    read_msr(machine, index, vcpu.id).map(|read| {
                        registers.rax = read & 0xFFFF_FFFF;
                        registers.rdx = read >> 32;
                    })
                };
                match done {
                    Some(()) => {
                        let rip = registers.rip.wrapping_add(2);
                        machine.finish_instruction(GuestRegisters { rip, ..registers });
                    }
                    None => machine.inject(machine::svm::GuestEvent::Exception { vector: 13, error_code: Some(0) }),
                }
            }
            VmExit::NestedPageFault { guest_physical, error_code } => match vcpu.vm.resolve(&call.process.native, guest_physical, error_code & 2 != 0)? {
                GuestFault::Mapped => {}
                GuestFault::NoSlot | GuestFault::ReadOnly => return Ok(Stop::Exit(device_access(call, vcpu, machine, guest_physical))),
            },
            VmExit::Shutdown => return Ok(Stop::Exit(RunExit::Shutdown)),
            VmExit::InvalidState => return Ok(Stop::Exit(RunExit::FailEntry { reason: u64::MAX })),
            VmExit::HostInterrupt => {}
            VmExit::InterruptWindow if window_wanted && !vcpu.has_queued_interrupt() => return Ok(Stop::Exit(RunExit::InterruptWindowOpen)),
            VmExit::InterruptWindow => {}
            VmExit::Xsetbv | VmExit::Vmmcall | VmExit::Other { .. } => machine.inject(machine::svm::GuestEvent::Exception { vector: 6, error_code: None }),
        }
    }
}

/// Finishes the instruction the VMM supplied the data of (an `in`, a
/// load from a device), before the guest runs again.
fn complete(vcpu: &VirtualCpu, machine: &mut Vcpu) -> Result<(), Errno> {
    let Some(pending) = vcpu.with_pending(|pending| pending.take()) else { return Ok(()) };
    let (offset, size) = match pending {
        Completion::Input { size, .. } => (layouts::IO_DATA_OFFSET, size),
        Completion::MmioLoad { access, .. } => (layouts::run_offsets::MMIO_DATA, access.size),
    };
    let mut data = [0u8; 8];
    kernel_objects::capabilities::memory_objects::read(vcpu.run_area, offset as u64, &mut data[..usize::from(size.min(8))])?;
    let loaded = u64::from_le_bytes(data);
    let mut registers = machine.registers();
    match pending {
        Completion::Input { size, next_rip } => {
            registers.rax = merge_load(registers.rax, loaded, size, false);
            registers.rip = next_rip;
        }
        Completion::MmioLoad { access, next_rip } => {
            let (number, high) = match access.operand {
                Operand::Register(number) => (number, false),
                Operand::HighByte(number) => (number, true),
                Operand::Immediate(_) => return Ok(()),
            };
            let old = register(&registers, number);
            set_register(&mut registers, number, merge_load(old, loaded, access.destination_size, high));
            registers.rip = next_rip;
        }
    }
    machine.finish_instruction(registers);
    Ok(())
}

/// A guest access outside every slot: the instruction is read through the
/// guest's tables and decoded, a store's value goes to the VMM with the
/// exit (the guest moves past it), a load's waits for the VMM's data.
fn device_access(call: &Call<'_>, vcpu: &VirtualCpu, machine: &mut Vcpu, address: u64) -> RunExit {
    const EMULATION_FAILED: RunExit = RunExit::InternalError { suberror: 1 };
    let registers = machine.registers();
    let code = machine.segment(Segment::Cs);
    let efer = machine.get(GuestField::Efer);
    let mode = if code.attributes & 0x200 != 0 && efer & (1 << 10) != 0 {
        CodeMode::Long
    } else if code.attributes & 0x400 != 0 {
        CodeMode::Protected32
    } else {
        CodeMode::Bits16
    };
    let linear = if mode == CodeMode::Long { registers.rip } else { code.base.wrapping_add(registers.rip) & 0xFFFF_FFFF };
    let paging = Paging { cr0: machine.get(GuestField::Cr0), cr3: machine.get(GuestField::Cr3), cr4: machine.get(GuestField::Cr4), efer };
    let Some(bytes) = fetch_instruction(call, vcpu, paging, linear) else { return EMULATION_FAILED };
    let Some(access) = decode(&bytes, mode) else { return EMULATION_FAILED };
    let next_rip = registers.rip.wrapping_add(u64::from(access.length));
    if !access.write {
        vcpu.with_pending(|pending| *pending = Some(Completion::MmioLoad { access, next_rip }));
        return RunExit::Mmio { address, data: [0; 8], length: u32::from(access.size), write: false };
    }
    let value = match access.operand {
        Operand::Register(number) => register(&registers, number),
        Operand::HighByte(number) => register(&registers, number) >> 8,
        Operand::Immediate(value) => value,
    };
    let mut data = [0u8; 8];
    data[..usize::from(access.size)].copy_from_slice(&value.to_le_bytes()[..usize::from(access.size)]);
    machine.finish_instruction(GuestRegisters { rip: next_rip, ..registers });
    RunExit::Mmio { address, data, length: u32::from(access.size), write: true }
}

/// Up to 15 bytes of guest code from linear `address` (fewer where the
/// next page is not the guest's memory); `None` if none can be read.
fn fetch_instruction(call: &Call<'_>, vcpu: &VirtualCpu, paging: Paging, address: u64) -> Option<[u8; 15]> {
    let read_guest = |physical: u64, buffer: &mut [u8]| -> Option<()> {
        let user = vcpu.vm.user_address_of(physical)?;
        call.read_in(user, buffer).ok()
    };
    let mut bytes = [0u8; 15];
    let mut done = 0;
    while done < bytes.len() {
        let at = address.wrapping_add(done as u64);
        let physical = translate(paging, at, |entry| {
            let mut word = [0u8; 8];
            read_guest(entry, &mut word).map(|()| u64::from_le_bytes(word))
        });
        let chunk = (bytes.len() - done).min((4096 - (at & 0xFFF)) as usize);
        match physical.and_then(|physical| read_guest(physical, &mut bytes[done..done + chunk])) {
            Some(()) => done += chunk,
            None if done > 0 => break,
            None => return None,
        }
    }
    Some(bytes)
}

/// General register `number` in the instruction encoding's order.
fn register(registers: &GuestRegisters, number: u8) -> u64 {
    let r = registers;
    [r.rax, r.rcx, r.rdx, r.rbx, r.rsp, r.rbp, r.rsi, r.rdi, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15][usize::from(number & 15)]
}

fn set_register(registers: &mut GuestRegisters, number: u8, value: u64) {
    let r = registers;
    let slot = match number & 15 {
        0 => &mut r.rax,
        1 => &mut r.rcx,
        2 => &mut r.rdx,
        3 => &mut r.rbx,
        4 => &mut r.rsp,
        5 => &mut r.rbp,
        6 => &mut r.rsi,
        7 => &mut r.rdi,
        8 => &mut r.r8,
        9 => &mut r.r9,
        10 => &mut r.r10,
        11 => &mut r.r11,
        12 => &mut r.r12,
        13 => &mut r.r13,
        14 => &mut r.r14,
        _ => &mut r.r15,
    };
    *slot = value;
}

fn state_field(msr: StateMsr) -> GuestField {
    match msr {
        StateMsr::KernelGsBase => GuestField::KernelGsBase,
        StateMsr::Star => GuestField::Star,
        StateMsr::Lstar => GuestField::Lstar,
        StateMsr::Cstar => GuestField::Cstar,
        StateMsr::Sfmask => GuestField::Sfmask,
        StateMsr::SysenterCs => GuestField::SysenterCs,
        StateMsr::SysenterEsp => GuestField::SysenterEsp,
        StateMsr::SysenterEip => GuestField::SysenterEip,
        StateMsr::Pat => GuestField::GuestPat,
    }
}

/// `rdmsr` by the guest: the value, or `None` for #GP.
fn read_msr(machine: &Vcpu, index: u32, id: u32) -> Option<u64> {
    let value = match msr_home(index) {
        MsrHome::Efer => machine.get(GuestField::Efer),
        MsrHome::FsBase => machine.segment(Segment::Fs).base,
        MsrHome::GsBase => machine.segment(Segment::Gs).base,
        MsrHome::State(msr) => machine.get(state_field(msr)),
        MsrHome::TimeStampCounter => machine::cpu::read_timestamp_counter(),
        MsrHome::ApicBase => 0xFEE0_0800 | if id == 0 { 0x100 } else { 0 },
        MsrHome::Zero => 0,
        MsrHome::Missing => return None,
    };
    Some(value)
}

/// `wrmsr` by the guest: `None` for #GP.
fn write_msr(machine: &mut Vcpu, index: u32, value: u64) -> Option<()> {
    match msr_home(index) {
        MsrHome::Efer => machine.set(GuestField::Efer, efer_write(value)?),
        MsrHome::FsBase | MsrHome::GsBase => {
            // A base must be canonical.
            if (value as i64) << 16 >> 16 != value as i64 {
                return None;
            }
            let segment = if msr_home(index) == MsrHome::FsBase { Segment::Fs } else { Segment::Gs };
            let state = machine.segment(segment);
            machine.set_segment(segment, SegmentState { base: value, ..state });
        }
        MsrHome::State(msr) => machine.set(state_field(msr), value),
        MsrHome::TimeStampCounter | MsrHome::ApicBase | MsrHome::Zero => {}
        MsrHome::Missing => return None,
    }
    Some(())
}

/// A CPUID leaf as this hypervisor offers it: the host's, with the
/// hypervisor bit, without SVM (no nested guests), without MONITOR
/// (MONITOR/MWAIT are intercepted) and without XSAVE and what needs it
/// (OSXSAVE, AVX, leaf 0xD): XSETBV is intercepted and not emulated, and
/// the guest's XCR0 is not switched (docs/hypervisor.md), so a guest
/// keeps to FXSAVE and SSE. Static glibc programs in a guest run `xgetbv`
/// when CPUID claims OSXSAVE, which faulted before.
fn offered_cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    const XSAVE_AND_AVX: u32 = 1 << 26 | 1 << 27 | 1 << 28;
    let result = machine::cpu::cpuid(leaf, subleaf);
    let mut registers = [result.eax, result.ebx, result.ecx, result.edx];
    match leaf {
        1 => registers[2] = (registers[2] | 1 << 31) & !(1 << 3) & !XSAVE_AND_AVX,
        0xD => registers = [0; 4],
        0x8000_0001 => registers[2] &= !(1 << 2),
        0x8000_000A => registers = [0; 4],
        _ => {}
    }
    registers
}

/// `KVM_GET_SUPPORTED_CPUID`'s entries: every basic and extended leaf
/// the host has, with the subleaves of those that have them.
fn supported_cpuid() -> alloc::vec::Vec<kvm_abi::cpuid::CpuidEntry> {
    use kvm_abi::cpuid::{subleaves, CpuidEntry, MAX_ENTRIES, SIGNIFICANT_INDEX};
    let highest_basic = machine::cpu::cpuid(0, 0).eax.min(0x1F);
    let highest_extended = machine::cpu::cpuid(0x8000_0000, 0).eax.clamp(0x8000_0000, 0x8000_0021);
    let mut entries = alloc::vec::Vec::new();
    for function in (0..=highest_basic).chain(0x8000_0000..=highest_extended) {
        let count = subleaves(function);
        for index in 0..count {
            if entries.len() < MAX_ENTRIES {
                let flags = if count > 1 { SIGNIFICANT_INDEX } else { 0 };
                entries.push(CpuidEntry { function, index, flags, registers: offered_cpuid(function, index) });
            }
        }
    }
    entries
}
