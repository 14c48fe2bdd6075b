//! Lamina's native system calls: capabilities and IPC from user space.
//! Numbers `0x4c00..0x4c20` (`'L'` = 0x4c), far from Linux's (below 0x200)
//! and from the x32 bit. Arguments in `rdi, rsi, rdx, r10, r8` as for
//! Linux; the result in `rax`, `-errno` on failure. The IPC calls also
//! take a message's four words in `rsi, rdx, r10, r8` and its `info` in
//! `r9`, and give a received message back in the same registers (`info`
//! in `rax`). `docs/capabilities.md` is the
//! reference for each call and its errors.
//!
//! Every call takes a process's slot numbers, never kernel names: what a
//! process can reach is exactly what its capability space holds. Must
//! never trust an argument: a bad slot, right set, range or pointer is an
//! errno.

use caps::{CapError, Narrowing, ObjectKind, Placement, RevokeScope, Rights, Slot, UseSite};
use machine::user::UserContext;
use vmem::{TlbFlush, PAGE_SIZE};

use super::processes::NativeProcess;
use super::endpoints::{self, Interrupted, IpcRegisters, IpcThread};
use super::{caps, effects, memory_objects};
use crate::address_spaces::{carry_out, KernelSpace};
use crate::untyped_memory::SharedFrame;
use linux_abi::Errno;

/// The native call numbers.
pub mod numbers {
    /// `cap_create_memory(pages, rights) -> slot`
    pub const CREATE_MEMORY: u64 = 0x4c00;
    /// `cap_derive(slot, rights, offset, length) -> slot` (0, 0: the whole view)
    pub const DERIVE: u64 = 0x4c01;
    /// `cap_delegate(slot, process_slot, rights) -> slot in the target`
    pub const DELEGATE: u64 = 0x4c02;
    /// `cap_offer(slot, process_slot) -> 0`
    pub const OFFER: u64 = 0x4c03;
    /// `cap_obtain(process_slot, their_slot, rights) -> slot`
    pub const OBTAIN: u64 = 0x4c04;
    /// `cap_revoke(slot, scope) -> removed` (scope 0: with the capability, 1: descendants only)
    pub const REVOKE: u64 = 0x4c05;
    /// `cap_drop(slot) -> 0`
    pub const DROP: u64 = 0x4c06;
    /// `cap_info(slot, buffer) -> 0` (writes a 56-byte `CapInfo`)
    pub const INFO: u64 = 0x4c07;
    /// `cap_map(slot, address, rights) -> 0`
    pub const MAP: u64 = 0x4c08;
    /// `cap_unmap(slot) -> 0`
    pub const UNMAP: u64 = 0x4c09;
    /// `endpoint_create(rights) -> slot`
    pub const CREATE_ENDPOINT: u64 = 0x4c10;
    /// `send(slot, words…, info) -> 0`
    pub const SEND: u64 = 0x4c11;
    /// `call(slot, words…, info) -> info` (the answer's words in the word registers)
    pub const CALL: u64 = 0x4c12;
    /// `recv(slot) -> info` (the message's words in the word registers)
    pub const RECV: u64 = 0x4c13;
    /// `reply(_, words…, info) -> 1 delivered, 0 the caller gave up`
    pub const REPLY: u64 = 0x4c14;
    /// `reply_recv(slot, words…, info) -> info`: reply, then receive
    pub const REPLY_RECV: u64 = 0x4c15;
    /// `ipc_buffer(address, length) -> 0`
    pub const IPC_BUFFER: u64 = 0x4c16;
    /// The first number after the native range.
    pub const END: u64 = 0x4c20;
}

/// Bytes `cap_info` writes.
pub const INFO_BYTES: usize = 56;

/// Where new capabilities go: the lowest free slot (as a new file
/// descriptor would).
const ANY_SLOT: Placement = Placement::LowestFrom(0);

/// Handles the system call `context` stopped at, if it is a native one:
/// sets `rax` to the result and returns true. False: not a native call.
/// `thread` is the calling thread's IPC state; `interrupted` says when a
/// blocked IPC call must give up (`EINTR`).
#[inline]
pub fn handle_native_call(process: &NativeProcess, thread: &mut IpcThread, context: &mut UserContext, interrupted: Interrupted<'_>) -> bool {
    let number = context.registers.rax;
    if !(numbers::CREATE_MEMORY..numbers::END).contains(&number) {
        return false;
    }
    if (numbers::SEND..=numbers::IPC_BUFFER).contains(&number) {
        ipc_call(process, thread, context, interrupted);
    } else {
        handle_in_range(process, context);
    }
    true
}

/// The IPC fast path ([`endpoints::fast_path`]), for the run loop to try
/// before its dispatch: true when it ran the call (`rax` and the message
/// registers set), false when the general path must.
#[inline(always)]
pub fn try_fast_ipc(process: &NativeProcess, thread: &mut IpcThread, context: &mut UserContext, interrupted: Interrupted<'_>) -> bool {
    let registers = &mut context.registers;
    let call = match registers.rax {
        numbers::CALL => true,
        numbers::REPLY_RECV => false,
        _ => return false,
    };
    let message = IpcRegisters { words: [registers.rsi, registers.rdx, registers.r10, registers.r8], info: registers.r9 };
    match endpoints::fast_path(process, thread, &message, registers.rdi, call, interrupted) {
        None => false,
        Some(Ok(received)) => {
            [registers.rsi, registers.rdx, registers.r10, registers.r8] = received.words;
            registers.rax = received.info;
            true
        }
        Some(Err(errno)) => {
            registers.rax = errno.to_return_value();
            true
        }
    }
}

/// The IPC calls, which read and write the message registers.
fn ipc_call(process: &NativeProcess, thread: &mut IpcThread, context: &mut UserContext, interrupted: Interrupted<'_>) {
    let registers = &mut context.registers;
    let slot = registers.rdi;
    let message = IpcRegisters { words: [registers.rsi, registers.rdx, registers.r10, registers.r8], info: registers.r9 };
    let result = match registers.rax {
        numbers::SEND => endpoints::send(process, thread, slot, &message, interrupted).map(Some),
        numbers::CALL => endpoints::call(process, thread, slot, &message, interrupted).map(Some),
        numbers::RECV => endpoints::receive(process, thread, slot, None, interrupted).map(Some),
        numbers::REPLY_RECV => endpoints::receive(process, thread, slot, Some(&message), interrupted).map(Some),
        numbers::REPLY => endpoints::reply(process, thread, &message).map(|delivered| {
            registers.rax = delivered;
            None
        }),
        _ => endpoints::set_buffer(thread, registers.rdi, registers.rsi).map(|done| {
            registers.rax = done;
            None
        }),
    };
    match result {
        Ok(Some(received)) => {
            [registers.rsi, registers.rdx, registers.r10, registers.r8] = received.words;
            registers.rax = received.info;
        }
        Ok(None) => {}
        Err(errno) => registers.rax = errno.to_return_value(),
    }
}

fn handle_in_range(process: &NativeProcess, context: &mut UserContext) {
    let registers = &context.registers;
    let number = registers.rax;
    let arguments = [registers.rdi, registers.rsi, registers.rdx, registers.r10, registers.r8];
    context.registers.rax = match native_call(process, number, arguments) {
        Ok(value) => value,
        Err(errno) => errno.to_return_value(),
    };
}

/// Runs native call `number` for `process`.
fn native_call(process: &NativeProcess, number: u64, arguments: [u64; 5]) -> Result<u64, Errno> {
    let [first, second, third, fourth, _] = arguments;
    match number {
        numbers::CREATE_MEMORY => create_memory(process, first, rights(second)?),
        numbers::DERIVE => {
            let narrowing = if third == 0 && fourth == 0 { Narrowing::Whole } else { Narrowing::Bytes { offset: third, length: fourth } };
            let rights = rights(second)?;
            let derived = caps().with(|database| database.derive(process.space(), slot(first)?, rights, narrowing, ANY_SLOT));
            Ok(u64::from(derived.map_err(Errno::from)?))
        }
        numbers::DELEGATE => {
            let rights = rights(third)?;
            let given = caps().with(|database| database.delegate(process.space(), slot(first)?, slot(second)?, rights, ANY_SLOT));
            Ok(u64::from(given.map_err(Errno::from)?))
        }
        numbers::OFFER => {
            caps().with(|database| database.offer(process.space(), slot(first)?, slot(second)?)).map_err(Errno::from)?;
            Ok(0)
        }
        numbers::OBTAIN => {
            let rights = rights(third)?;
            let taken = caps().with(|database| database.obtain(process.space(), slot(first)?, slot(second)?, rights, ANY_SLOT));
            Ok(u64::from(taken.map_err(Errno::from)?))
        }
        numbers::REVOKE => {
            let scope = match second {
                0 => RevokeScope::WithSelf,
                1 => RevokeScope::Descendants,
                _ => return Err(Errno::EINVAL),
            };
            let report = caps().revoke(process.space(), slot(first).map_err(Errno::from)?, scope, effects::undo).map_err(Errno::from)?;
            Ok(report.removed)
        }
        numbers::DROP => {
            let removed = caps().with(|database| database.drop_capability(process.space(), slot(first)?)).map_err(Errno::from)?;
            effects::undo(&removed);
            Ok(0)
        }
        numbers::INFO => {
            let info = caps().with(|database| info(database, process, first)).map_err(Errno::from)?;
            process.user_memory().write(second, &info)?;
            Ok(0)
        }
        numbers::MAP => map(process, first, second, rights(third)?),
        numbers::UNMAP => unmap(process, first),
        numbers::CREATE_ENDPOINT => endpoints::create(process, rights(first)?),
        _ => Err(Errno::ENOSYS),
    }
}

fn slot(value: u64) -> Result<Slot, CapError> {
    Slot::try_from(value).map_err(|_| CapError::SlotOutOfRange)
}

fn rights(bits: u64) -> Result<Rights, Errno> {
    Rights::from_bits(bits).ok_or(Errno::EINVAL)
}

fn create_memory(process: &NativeProcess, pages: u64, rights: Rights) -> Result<u64, Errno> {
    let handle = memory_objects::create(process.container(), pages)?;
    let size = pages * PAGE_SIZE;
    let made = caps().with(|database| database.create_object(process.space(), ObjectKind::Memory, handle, size, rights, ANY_SLOT));
    made.map(u64::from).map_err(|error| {
        memory_objects::release(handle);
        Errno::from(error)
    })
}

/// The `CapInfo` record of the capability in `slot` (little endian):
/// kind u32, rights u32, group u16, flags u16 (bit 0: has a parent, bit 1:
/// mapped), creator u32, object u64, view offset u64, view length u64,
/// object size u64, children u32, reserved u32.
fn info(database: &caps::CapDatabase, process: &NativeProcess, slot_number: u64) -> Result<[u8; INFO_BYTES], CapError> {
    let slot = slot(slot_number)?;
    let capability = database.capability(process.space(), slot)?;
    let (children, has_parent) = database.family(process.space(), slot)?;
    let key = capability.object.key;
    let flags = u16::from(has_parent) | (u16::from(capability.use_site.is_some()) << 1);
    let mut record = [0u8; INFO_BYTES];
    let mut put = |at: usize, bytes: &[u8]| record[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, &(key.kind as u32).to_le_bytes());
    put(4, &u32::from(capability.rights.bits()).to_le_bytes());
    put(8, &key.group.to_le_bytes());
    put(10, &flags.to_le_bytes());
    put(12, &key.creator.to_le_bytes());
    put(16, &key.object.to_le_bytes());
    put(24, &capability.view.offset.to_le_bytes());
    put(32, &capability.view.length.to_le_bytes());
    put(40, &capability.object.size.to_le_bytes());
    put(48, &children.to_le_bytes());
    Ok(record)
}

/// Maps the view of the memory capability in `slot_number` at `address`
/// with `rights` (which the capability must carry; read is required). The
/// capability records the mapping, so dropping or revoking it unmaps. The
/// check, the mapping and the record happen under the capability lock: a
/// revoke either comes first (the call fails) or finds the mapping.
fn map(process: &NativeProcess, slot_number: u64, address: u64, rights: Rights) -> Result<u64, Errno> {
    let page_rights = Rights::READ.union(Rights::WRITE).union(Rights::EXECUTE);
    if !page_rights.contains(rights) || !rights.contains(Rights::READ) || !address.is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    let vm_rights = vmem::Rights::new(true, rights.contains(Rights::WRITE), rights.contains(Rights::EXECUTE)).map_err(Errno::from)?;
    let mut rollback = None;
    let mapped = caps().with(|database| {
        let slot = slot(slot_number).map_err(Errno::from)?;
        let capability = database.access(process.space(), slot, ObjectKind::Memory, rights).map_err(Errno::from)?;
        if capability.use_site.is_some() {
            return Err(Errno::EBUSY);
        }
        let view = capability.view;
        if !view.offset.is_multiple_of(PAGE_SIZE) || !view.length.is_multiple_of(PAGE_SIZE) || view.length == 0 {
            return Err(Errno::EINVAL);
        }
        let frames = memory_objects::frames(capability.object.handle, view.offset / PAGE_SIZE, view.length / PAGE_SIZE)?;
        process.with_memory(|memory| map_frames(memory, address, &frames, vm_rights, Sharing::Shared, &mut rollback))??;
        let site = UseSite { place: process.space().to_bits(), detail: address };
        database.set_use_site(process.space(), slot, site).map_err(Errno::from)?;
        Ok(0)
    });
    if let Some(flush) = rollback {
        carry_out(flush);
    }
    mapped
}

/// How frames of a memory object are mapped into a space.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// Written through (shared memory).
    Shared,
    /// Copied on the first write (program text, private file mappings).
    Private,
}

/// Maps `frames` from `address` on, all or nothing: a failure unmaps the
/// pages already mapped and leaves the flush for them in `rollback` (the
/// process's other threads may have touched them).
pub(super) fn map_frames(
    memory: &mut KernelSpace,
    address: u64,
    frames: &[SharedFrame],
    rights: vmem::Rights,
    sharing: Sharing,
    rollback: &mut Option<TlbFlush>,
) -> Result<(), Errno> {
    for (index, frame) in frames.iter().enumerate() {
        let at = address.checked_add(index as u64 * PAGE_SIZE).ok_or(Errno::EINVAL)?;
        let mapped = match sharing {
            Sharing::Shared => memory.map_shared(at, frame, rights),
            Sharing::Private => memory.map_private(at, frame, rights),
        };
        if let Err(error) = mapped {
            if index > 0 {
                *rollback = memory.unmap(address, index as u64 * PAGE_SIZE).ok();
            }
            return Err(Errno::from(error));
        }
    }
    Ok(())
}

/// Unmaps what the memory capability in `slot_number` mapped.
fn unmap(process: &NativeProcess, slot_number: u64) -> Result<u64, Errno> {
    let flush = caps().with(|database| {
        let slot = slot(slot_number).map_err(Errno::from)?;
        let capability = database.access(process.space(), slot, ObjectKind::Memory, Rights::NONE).map_err(Errno::from)?;
        let site = database.clear_use_site(process.space(), slot).map_err(Errno::from)?;
        process.with_memory(|memory| memory.unmap(site.detail, capability.view.length)).map(|unmapped| unmapped.map_err(Errno::from))
    })??;
    carry_out(flush);
    Ok(0)
}
