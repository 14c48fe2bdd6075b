//! Driving native processes from kernel code, for the tests and the
//! benchmarks: each process gets a page of stubs — `syscall`, a read
//! probe, a write probe and a reading loop — and the harness runs one stub
//! at a time in ring 3 with the registers it chooses. The system calls are
//! real (`syscall` from user mode into the native-call dispatcher); only
//! the program around them is played by the kernel.
//!
//! Must leave every CPU on the kernel tables when a call returns. Linked
//! only into the test and benchmark images; never contains `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

use machine::user::{run_user, vectors, UserContext, UserExit};
use machine::paging;
use kernel_objects::OwnedFrame;
use vmem::{Rights, PAGE_SIZE};

use caps::{CapError, ObjectKind, Placement, Rights as CapRights, SpaceId};

use kernel_objects::capabilities::{caps, handle_native_call, IpcThread, NativeProcess};
use linux_abi::Errno;

/// Where the stubs are.
pub const CODE: u64 = 0x40_0000;
/// A demand-zero page for buffers.
pub const DATA: u64 = 0x60_0000;
/// `syscall; ud2`
const SYSCALL_AT: u64 = CODE;
/// `mov rax,[rdi]; ud2`
const READ_AT: u64 = CODE + 4;
/// `mov [rdi],rsi; ud2`
const WRITE_AT: u64 = CODE + 9;
/// `loop: mov rax,[rdi]; jmp loop`
pub const READ_LOOP_AT: u64 = CODE + 14;

const STUBS: [u8; 19] = [
    0x0F, 0x05, 0x0F, 0x0B, // syscall; ud2
    0x48, 0x8B, 0x07, 0x0F, 0x0B, // mov rax,[rdi]; ud2
    0x48, 0x89, 0x37, 0x0F, 0x0B, // mov [rdi],rsi; ud2
    0x48, 0x8B, 0x07, 0xEB, 0xFB, // mov rax,[rdi]; jmp -5
];

/// Gives `process` its stub page and a demand-zero data page.
pub fn load_stubs(process: &NativeProcess) -> Result<(), &'static str> {
    let mut frame = OwnedFrame::allocate(process.container()).map_err(|_| "no frame for the stubs")?;
    if !(frame.zero() && frame.write_bytes(0, &STUBS)) {
        return Err("writing the stubs failed");
    }
    process
        .with_memory(|memory| {
            // The space takes the frame over (or frees it on an error).
            memory.map(CODE, frame, Rights::READ_EXECUTE).map_err(|_| "mapping the stubs failed")?;
            memory.add_demand_zero(DATA, PAGE_SIZE, Rights::READ_WRITE).map_err(|_| "data region refused")
        })
        .map_err(|_| "the process is gone")?
}

/// How a stub run ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StubEnd {
    /// The stub finished; `rax` as it left it.
    Done(u64),
    /// A page fault at this address.
    PageFault(u64),
    /// Another exception.
    Exception(u8),
}

/// Runs the stub at `rip` in `process` with `registers` set, until it
/// ends. A `syscall` goes to the native-call dispatcher; timer
/// interrupts just resume the stub.
fn run_stub(process: &NativeProcess, rip: u64, set: impl FnOnce(&mut UserContext)) -> StubEnd {
    let mut context = UserContext::new(rip, DATA + PAGE_SIZE);
    set(&mut context);
    let Ok(tables) = process.prepare_to_enter() else {
        return StubEnd::Exception(0xFF);
    };
    kernel_objects::address_spaces::switch_to(tables);
    let end = loop {
        match run_user(&mut context) {
            UserExit::Syscall => {
                paging::switch_to_kernel_tables();
                if !handle_native_call(process, &mut IpcThread::default(), &mut context, &|| false) {
                    context.registers.rax = Errno::ENOSYS.to_return_value();
                }
                break StubEnd::Done(context.registers.rax);
            }
            UserExit::Interrupt { .. } | UserExit::Kicked => continue,
            UserExit::Exception { vector: vectors::INVALID_OPCODE, .. } => break StubEnd::Done(context.registers.rax),
            UserExit::Exception { vector: vectors::PAGE_FAULT, address, .. } => break StubEnd::PageFault(address),
            UserExit::Exception { vector, .. } => break StubEnd::Exception(vector),
        }
    };
    paging::switch_to_kernel_tables();
    end
}

/// Makes native call `number` from `process`'s ring 3 with `arguments`;
/// returns `rax` (a slot, a count, or `-errno`).
pub fn native(process: &NativeProcess, number: u64, arguments: &[u64]) -> u64 {
    let end = run_stub(process, SYSCALL_AT, |context| {
        let registers = &mut context.registers;
        registers.rax = number;
        let targets = [&mut registers.rdi, &mut registers.rsi, &mut registers.rdx, &mut registers.r10, &mut registers.r8];
        for (target, value) in targets.into_iter().zip(arguments) {
            *target = *value;
        }
    });
    match end {
        StubEnd::Done(rax) => rax,
        _ => Errno::EFAULT.to_return_value(),
    }
}

/// Reads the word at `address` from `process`'s ring 3.
pub fn user_read(process: &NativeProcess, address: u64) -> StubEnd {
    run_stub(process, READ_AT, |context| context.registers.rdi = address)
}

/// Writes `value` at `address` from `process`'s ring 3.
pub fn user_write(process: &NativeProcess, address: u64, value: u64) -> StubEnd {
    run_stub(process, WRITE_AT, |context| {
        context.registers.rdi = address;
        context.registers.rsi = value;
    })
}

/// The errno in a native call's result, if it failed.
pub fn errno_of(result: u64) -> Option<Errno> {
    Errno::from_return_value(result)
}

/// Fills two empty capability spaces for a revoke of `count` copies: each
/// gets a process capability to the other at slot 0, `first` gets a new
/// endpoint capability at slot 1, and `count` delegations follow — each
/// from the last copy (a chain, alternating spaces) or all from slot 1 (a
/// tree). Returns the root's slot.
pub fn build_delegation_shape(first: SpaceId, second: SpaceId, count: u32, chain: bool) -> Result<u32, CapError> {
    caps().with(|database| {
        for (holder, named) in [(first, second), (second, first)] {
            database.create_object(holder, ObjectKind::Process, named.to_bits(), 0, CapRights::ALL, Placement::At(0))?;
        }
        let root = database.create_object(first, ObjectKind::Endpoint, 1, 0, CapRights::ALL, Placement::At(1))?;
        let mut last = (first, root);
        for _ in 0..count {
            let from = if chain { last } else { (first, root) };
            let target = if from.0 == first { second } else { first };
            last = (target, database.delegate(from.0, from.1, 0, CapRights::ALL, Placement::LowestFrom(1))?);
        }
        Ok(root)
    })
}
