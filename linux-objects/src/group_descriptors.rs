//! Descriptors crossing CPU groups as capabilities (issue 20).
//!
//! With CPU groups, an open file description (a file or a pipe end) that
//! a process in another group comes to hold reaches it through the group
//! kernels' distributed capability protocol (`kernel_objects::group_kernels`):
//! the description gets a root capability in the database of the group
//! where it first crossed (its home, held by that group's kernel), and
//! every process of another group that inherits a descriptor of it
//! obtains a copy of that root through its own group's kernel — SemperOS's
//! obtain, with the messages between the two kernels. A fork into another
//! group completes only once every copy is made; so does an `SCM_RIGHTS`
//! receive from a sender in another group.
//!
//! The copies follow Linux's lifetimes, not the passer's: a child's
//! descriptors outlive its parent, so a copy derives from the
//! description's root, not from the parent's copy. When a process ends,
//! its copies are revoked in every group it held them in; when a
//! description's last descriptor goes, its root is revoked, and with it
//! any copy left anywhere. The data path (reads and writes) still goes
//! to the shared description: what is checked is who holds what, not each
//! byte.
//!
//! Must never hold its table locks while calling a group kernel (calls
//! park).

use alloc::vec::Vec;

use caps::distributed::{CapKey, KernelId, ProcessId};
use kernel_objects::group_kernels::{self, Answer, Request, KERNEL_PROCESS};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use super::process::Pid;
use linux_abi::Errno;

/// Level of the two tables (leaf locks).
const TABLES_LEVEL: Level = Level::new(8);

/// A description's root: its handle, its home group, the root's key.
#[derive(Clone, Copy)]
struct Root {
    handle: u64,
    key: CapKey,
}

/// Roots by description handle.
static ROOTS: KernelTicketLock<Vec<Root>> = KernelTicketLock::new(TABLES_LEVEL, Vec::new());
/// Every copy a process holds: the process, the copy's key (its kernel is
/// the group it was made in) and the description's handle.
static HOLDERS: KernelTicketLock<Vec<Holding>> = KernelTicketLock::new(TABLES_LEVEL, Vec::new());

/// One copy held.
#[derive(Clone, Copy)]
struct Holding {
    pid: Pid,
    copy: CapKey,
    handle: u64,
}

/// Asks group `group`'s kernel `request` and waits for its turn; when no
/// answer slot is free, posts it instead (clean-up must not be lost).
fn call_or_post(group: usize, request: Request) {
    if group_kernels::call(group, request).is_none() {
        group_kernels::post(group, request);
    }
}

/// The root of description `handle`, made in group `home` if it has none.
fn root_of(handle: u64, home: usize) -> Result<CapKey, Errno> {
    if let Some(root) = ROOTS.lock().iter().find(|root| root.handle == handle) {
        return Ok(root.key);
    }
    let owner = ProcessId { kernel: KernelId(home as u8), number: KERNEL_PROCESS };
    let Some(Answer::Done(Some(key))) = group_kernels::call(home, Request::Create { owner }) else {
        return Err(Errno::EAGAIN);
    };
    let mut roots = ROOTS.lock();
    // Another fork may have made one meanwhile: keep the first, drop ours.
    if let Some(root) = roots.iter().find(|root| root.handle == handle) {
        let first = root.key;
        drop(roots);
        group_kernels::post(home, Request::Revoke { caller: owner, cap: key });
        return Ok(first);
    }
    if roots.try_reserve(1).is_err() {
        drop(roots);
        group_kernels::post(home, Request::Revoke { caller: owner, cap: key });
        return Err(Errno::ENOMEM);
    }
    roots.push(Root { handle, key });
    Ok(key)
}

/// Process `pid`, new in group `group` and forked from a process in group
/// `parent_group`, inherited the descriptions `handles`: it obtains, through
/// its group's kernel, a copy of each one's root held in another group
/// (EAGAIN when a copy is refused or the kernels cannot be asked). Nothing
/// to do without group kernels or within one group.
pub fn carry_into_group(pid: Pid, group: usize, parent_group: usize, handles: &[u64]) -> Result<(), Errno> {
    if !group_kernels::running() || (group == parent_group && ROOTS.lock().is_empty()) {
        return Ok(());
    }
    let caller = ProcessId { kernel: KernelId(group as u8), number: pid };
    for (index, &handle) in handles.iter().enumerate() {
        if handles[..index].contains(&handle) {
            continue;
        }
        let known = ROOTS.lock().iter().find(|root| root.handle == handle).map(|root| root.key);
        let root = match known {
            Some(key) => key,
            // A description seen in one group only needs no root yet.
            None if group == parent_group => continue,
            None => root_of(handle, parent_group)?,
        };
        if root.kernel.0 as usize == group {
            continue;
        }
        match group_kernels::call(group, Request::Obtain { caller, parent: root }) {
            Some(Answer::Done(Some(copy))) => note_holder(Holding { pid, copy, handle })?,
            _ => return Err(Errno::EAGAIN),
        }
    }
    Ok(())
}

/// The descriptions behind descriptors `fds` of capability space `space`
/// (files and pipes; other kinds and unknown numbers are left out).
pub fn descriptions_of(space: caps::SpaceId, fds: &[u32]) -> Result<Vec<u64>, Errno> {
    let mut handles = Vec::new();
    handles.try_reserve_exact(fds.len()).map_err(|_| Errno::ENOMEM)?;
    kernel_objects::capabilities::caps().with(|database| {
        for &fd in fds {
            if let Ok((kind, handle)) = database.object_of(space, fd) {
                if crate::open_files::is_descriptor(kind) {
                    handles.push(handle);
                }
            }
        }
    });
    Ok(handles)
}

/// The descriptions behind every descriptor of capability space `space`
/// (files and pipes), in one pass over it.
pub fn descriptions_held(space: caps::SpaceId) -> Result<Vec<u64>, Errno> {
    let mut handles = Vec::new();
    kernel_objects::capabilities::caps().with(|database| {
        for (_, capability) in database.contents(space).filter(|(_, capability)| crate::open_files::is_descriptor(capability.object.kind())) {
            handles.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            handles.push(capability.object.handle);
        }
        Ok::<(), Errno>(())
    })?;
    Ok(handles)
}

/// Records a copy held. With no room to record it the copy is revoked at
/// once and the caller fails (ENOMEM).
fn note_holder(holding: Holding) -> Result<(), Errno> {
    {
        let mut holders = HOLDERS.lock();
        if holders.try_reserve(1).is_ok() {
            holders.push(holding);
            return Ok(());
        }
    }
    let Holding { pid, copy, .. } = holding;
    call_or_post(copy.kernel.0 as usize, Request::Revoke { caller: ProcessId { kernel: copy.kernel, number: pid }, cap: copy });
    Err(Errno::ENOMEM)
}

/// Process `pid`, with capability space `space`, moves from group `old`
/// to group `new` (`sched_setaffinity`): it obtains copies in `new` of
/// every description it holds that lives in another group, then its
/// copies in `old` are revoked (it is no longer a process there). Call it
/// before the move: on an error nothing moved and the old copies stay.
pub fn process_moving(pid: Pid, space: caps::SpaceId, old: usize, new: usize) -> Result<(), Errno> {
    if !group_kernels::running() || old == new {
        return Ok(());
    }
    carry_into_group(pid, new, old, &descriptions_held(space)?)?;
    // Its copies in the old group go one by one: the process number stays
    // alive there, so that it may come back.
    let leaving: Vec<CapKey> = {
        let mut holders = HOLDERS.lock();
        let mut leaving = Vec::new();
        holders.retain(|holding| {
            let moves = holding.pid == pid && holding.copy.kernel.0 as usize == old && leaving.try_reserve(1).is_ok();
            if moves {
                leaving.push(holding.copy);
            }
            !moves
        });
        leaving
    };
    for copy in leaving {
        call_or_post(old, Request::Revoke { caller: ProcessId { kernel: copy.kernel, number: pid }, cap: copy });
    }
    Ok(())
}

/// Process `pid` ended: its copies are revoked in every group it held
/// them in. It waits for each group kernel's turn (the copies are leaves:
/// they are gone from that group's database when the turn answers; their
/// parents learn it by message after). The caller may park.
pub fn process_ended(pid: Pid) {
    if !group_kernels::running() {
        return;
    }
    let mut groups = 0u64;
    HOLDERS.lock().retain(|holding| {
        if holding.pid == pid {
            groups |= caps::distributed::peer_bit(holding.copy.kernel.0 as usize);
        }
        holding.pid != pid
    });
    for group in 0..64 {
        if groups & caps::distributed::peer_bit(group) != 0 {
            call_or_post(group, Request::Kill { number: pid });
        }
    }
}

/// Description `handle`'s last descriptor went: its root, if it has one,
/// is revoked at home, and every copy left anywhere with it.
pub fn description_released(handle: u64) {
    if !group_kernels::running() {
        return;
    }
    let root = {
        let mut roots = ROOTS.lock();
        let Some(index) = roots.iter().position(|root| root.handle == handle) else { return };
        roots.swap_remove(index)
    };
    // The root's revoke takes every copy with it: forget them.
    HOLDERS.lock().retain(|holding| holding.handle != handle);
    let home = root.key.kernel;
    group_kernels::post(home.0 as usize, Request::Revoke { caller: ProcessId { kernel: home, number: KERNEL_PROCESS }, cap: root.key });
}
