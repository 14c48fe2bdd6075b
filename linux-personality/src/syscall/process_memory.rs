//! `process_vm_readv` and `process_vm_writev`: bytes copied between the
//! caller's memory and another process's, as Linux does it. The target is
//! any thread id; only a caller with privilege, or whose real uid and gid
//! are all of the target's ids while the target is dumpable, reaches it
//! (`Credentials::may_access_memory_of`; EPERM otherwise, ESRCH for no
//! such live process). The copy goes a page at a time on both sides, so
//! a fault ends it on a page boundary: the bytes before it are the
//! answer, EFAULT only when there are none (Linux's `process_vm_rw_core`).
//! And `/proc/<pid>/mem`'s reads and writes: the file offset is the
//! address, a page that cannot be reached ends the transfer (EIO when it
//! is the first), a process that is gone reads as end of file; opening it
//! takes the same rule with the caller's file-system ids (EACCES). No
//! `ptrace`.

use alloc::vec::Vec;

use linux_abi::Errno;

use super::files::io_vectors;
use super::vector_cursor::VectorCursor;
use super::{value, Call, CallResult};
use crate::process;

const PAGE: u64 = 4096;

/// Which way the bytes go.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the target into the caller (`process_vm_readv`).
    Read,
    /// From the caller into the target (`process_vm_writev`).
    Write,
}

/// `process_vm_readv(pid, local, local_count, remote, remote_count, flags)`
/// and `process_vm_writev` (the same arguments).
pub fn process_vm(call: &mut Call<'_>, direction: Direction) -> CallResult {
    if call.argument(5) != 0 {
        return Err(Errno::EINVAL);
    }
    let local = io_vectors(call, call.argument(1), call.argument(2))?;
    if local.iter().all(|&(_, length)| length == 0) {
        return value(0);
    }
    let remote = io_vectors(call, call.argument(3), call.argument(4))?;
    let pid = call.argument(0) as i32;
    let target = (pid > 0).then(|| process::owner_of_thread(pid as u32)).flatten().ok_or(Errno::ESRCH)?;
    if !reaches(call, &target, Ids::Real) {
        return Err(Errno::EPERM);
    }
    let target_memory = target.native.user_memory();
    let mut page = Vec::new();
    page.try_reserve_exact(PAGE as usize).map_err(|_| Errno::ENOMEM)?;
    page.resize(PAGE as usize, 0);
    let mut local_cursor = VectorCursor::new(&local);
    let mut moved = 0u64;
    for &(remote_base, remote_length) in &remote {
        let mut done = 0;
        while done < remote_length {
            let Some((local_address, local_left)) = local_cursor.current() else { return value(moved) };
            let remote_address = remote_base.wrapping_add(done);
            let piece = (remote_length - done).min(local_left).min(PAGE - remote_address % PAGE).min(PAGE - local_address % PAGE);
            let bytes = &mut page[..piece as usize];
            let copied = match direction {
                Direction::Read => target_memory.read(remote_address, bytes).and_then(|()| call.write_out(local_address, bytes)),
                Direction::Write => call.read_in(local_address, bytes).and_then(|()| target_memory.write(remote_address, bytes)),
            };
            if let Err(error) = copied {
                return if moved > 0 { value(moved) } else { Err(error) };
            }
            done += piece;
            moved += piece;
            local_cursor.advance(piece);
        }
    }
    value(moved)
}

/// Which of the caller's ids the access rule compares.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ids {
    /// Real (`process_vm_readv`: `PTRACE_MODE_REALCREDS`).
    Real,
    /// File-system (opening `/proc/<pid>/mem`: `PTRACE_MODE_FSCREDS`).
    FileSystem,
}

/// Whether the caller may reach `target`'s memory (itself always).
pub(super) fn reaches(call: &Call<'_>, target: &process::Process, ids: Ids) -> bool {
    if target.pid == call.process.pid {
        return true;
    }
    let mine = call.process.state().credentials;
    let (theirs, dumpable) = {
        let state = target.state();
        (state.credentials, !state.control.not_dumpable)
    };
    match ids {
        Ids::Real => mine.may_access_memory_of(&theirs, dumpable),
        Ids::FileSystem => mine.may_open_memory_of(&theirs, dumpable),
    }
}

/// `read` of `/proc/<pid>/mem` at `address` into `buffer`: the bytes read.
pub(super) fn read_memory_file(pid: u32, address: u64, buffer: &mut [u8]) -> Result<usize, Errno> {
    let Some(target) = process::owner_of_thread(pid) else { return Ok(0) };
    let memory = target.native.user_memory();
    page_by_page(address, buffer.len(), |offset, at, length| memory.read(at, &mut buffer[offset..offset + length]))
}

/// `write` of `/proc/<pid>/mem` at `address`: the bytes written.
pub(super) fn write_memory_file(pid: u32, address: u64, data: &[u8]) -> Result<usize, Errno> {
    let Some(target) = process::owner_of_thread(pid) else { return Ok(0) };
    let memory = target.native.user_memory();
    page_by_page(address, data.len(), |offset, at, length| memory.write(at, &data[offset..offset + length]))
}

/// Runs `copy(offset, address, length)` for each page-bounded piece of
/// `length` bytes from `address`, until one fails: the bytes done, EIO
/// when the first failed (Linux's `mem_rw`).
fn page_by_page(address: u64, length: usize, mut copy: impl FnMut(usize, u64, usize) -> Result<(), Errno>) -> Result<usize, Errno> {
    let mut done = 0;
    while done < length {
        let at = address.wrapping_add(done as u64);
        let piece = (length - done).min((PAGE - at % PAGE) as usize);
        if copy(done, at, piece).is_err() {
            return if done > 0 { Ok(done) } else { Err(Errno::EIO) };
        }
        done += piece;
    }
    Ok(done)
}
