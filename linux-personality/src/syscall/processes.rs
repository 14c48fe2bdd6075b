//! Process system calls: fork and clone (without threads yet), execve
//! (static and static-PIE ELF, `#!` scripts), exit, wait4/waitid, kill
//! and process groups and sessions, arch_prctl, set_tid_address.

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::{ObjectKind, Placement, Rights, Slot};
use machine::user::UserContext;

use super::paths::{lookup_at, path_in, AT_FDCWD};
use super::{value, Call, CallResult, Outcome, UserPtr};
use crate::exec_cache::FileKey;
use kernel_objects::address_spaces::{carry_out, destroy_space, fork_space};
use kernel_objects::capabilities::{caps, undo, NativeProcess};
use linux_abi::cpu_times::{rusage, CpuTimes};
use linux_abi::Errno;
use crate::exec::build;
use linux_abi::signal_frame::{codes, SigInfo};
use crate::fs;
use crate::open_files::is_descriptor;
use crate::process::{self, Child, Pid, Process, ProcessState};
use crate::run::{self, exited};
use crate::signal_sending::{send_signal_with, send_thread_signal_with, signal_group_with};
use crate::signals::MAX_SIGNAL;

pub fn exit(call: &mut Call<'_>) -> CallResult {
    Ok(Outcome::Exit(exited(call.argument(0) as u32)))
}

pub fn exit_thread(call: &mut Call<'_>) -> CallResult {
    Ok(Outcome::ExitThread(exited(call.argument(0) as u32)))
}

pub fn fork(call: &mut Call<'_>) -> CallResult {
    within_task_limit(call)?;
    let context = call.context.clone();
    fork_with(call, context, None)
}

pub fn clone(call: &mut Call<'_>) -> CallResult {
    const CLONE_VM: u64 = 0x100;
    const CLONE_THREAD: u64 = 0x10000;
    const CLONE_SETTLS: u64 = 0x80000;
    const CLONE_PARENT_SETTID: u64 = 0x100000;
    const CLONE_CHILD_CLEARTID: u64 = 0x200000;
    const CLONE_SIGHAND: u64 = 0x800;
    const CLONE_CHILD_SETTID: u64 = 0x0100_0000;
    let (flags, stack, parent_tid, child_tid, tls) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3), call.argument(4));
    within_task_limit(call)?;
    if flags & CLONE_THREAD != 0 {
        if flags & CLONE_VM == 0 || flags & CLONE_SIGHAND == 0 {
            return Err(Errno::EINVAL);
        }
        let tid = process::new_id();
        let mut context = call.context.clone();
        context.registers.rax = 0;
        if stack != 0 {
            context.registers.rsp = stack;
        }
        if flags & CLONE_SETTLS != 0 {
            context.registers.fs_base = tls;
        }
        if flags & CLONE_PARENT_SETTID != 0 {
            call.write_out(parent_tid, &tid.to_le_bytes())?;
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            call.write_out(child_tid, &tid.to_le_bytes())?;
        }
        let clear = if flags & CLONE_CHILD_CLEARTID != 0 { child_tid } else { 0 };
        {
            // A new thread starts with its creator's policy, as on Linux.
            let mut state = call.process.state();
            let inherited = state.scheduling_of(call.thread.tid);
            state.set_scheduling(tid, inherited)?;
            let affinity = state.affinity_of(call.thread.tid);
            state.set_affinity(tid, affinity)?;
            state.signals.add_thread(tid, call.thread.tid)?;
        }
        if let Err(errno) = run::start_thread(call.process.clone(), context, tid, clear) {
            call.process.state().signals.remove_thread(tid);
            return Err(errno);
        }
        return value(u64::from(tid));
    }
    // Without threads, a shared-memory child (vfork, posix_spawn) gets a
    // copy instead: correct for children that only exec or exit.
    let _ = flags & CLONE_VM;
    let mut context = call.context.clone();
    if stack != 0 {
        context.registers.rsp = stack;
    }
    if flags & CLONE_SETTLS != 0 {
        context.registers.fs_base = tls;
    }
    let clear = (flags & CLONE_CHILD_CLEARTID != 0).then_some(child_tid);
    let outcome = fork_with(call, context, clear)?;
    if flags & CLONE_PARENT_SETTID != 0 {
        if let Outcome::Value(pid) = outcome {
            call.write_out(parent_tid, &(pid as u32).to_le_bytes())?;
        }
    }
    Ok(outcome)
}

/// `RLIMIT_NPROC`: a caller whose real user is not root may not make a
/// task when its user already has the soft limit's number (EAGAIN), as
/// Linux counts them: every thread, and a process not yet reaped as one.
fn within_task_limit(call: &Call<'_>) -> Result<(), Errno> {
    let (user, limit) = {
        let state = call.process.state();
        (state.credentials.user.real, state.limits.soft(linux_abi::resource_limits::RLIMIT_NPROC))
    };
    if user == 0 || limit == linux_abi::resource_limits::INFINITY {
        return Ok(());
    }
    let tasks: u64 = process::all()
        .iter()
        .filter(|other| other.state().credentials.user.real == user)
        .map(|other| other.thread_count().max(1) as u64)
        .sum();
    if tasks >= limit {
        return Err(Errno::EAGAIN);
    }
    Ok(())
}

/// A copy of the calling process that resumes from `context` with `rax` 0.
fn fork_with(call: &Call<'_>, mut context: UserContext, clear_child_tid: Option<u64>) -> CallResult {
    let parent = call.process;
    let container = parent.native.container();
    let (memory, flush) = parent.native.with_memory(|memory| fork_space(memory, container))?.map_err(|_| Errno::ENOMEM)?;
    carry_out(flush);
    let native = NativeProcess::create_with(container, memory)?;
    let (parent_space, child_space) = (parent.native.space(), native.space());
    // A child inherits its parent's descriptors, and its IPC endpoints,
    // as copies the parent's revoke reaches.
    let inherited = |kind| is_descriptor(kind) || kind == ObjectKind::Endpoint;
    let descriptors: Vec<Slot> = caps().with(|database| {
        database.contents(parent_space).filter(|(_, capability)| inherited(capability.object.kind())).map(|(slot, _)| slot).collect()
    });
    for slot in descriptors {
        let _ = caps().with(|database| database.grant(parent_space, slot, child_space, Rights::ALL, Placement::At(slot)));
    }
    let (state, child_scheduling) = {
        let state = parent.state();
        let mut close_on_exec = Vec::new();
        if close_on_exec.try_reserve(state.close_on_exec.len()).is_err() {
            drop(state);
            native.destroy();
            return Err(Errno::ENOMEM);
        }
        close_on_exec.extend_from_slice(&state.close_on_exec);
        let child = ProcessState {
            parent: parent.pid,
            pgid: state.pgid,
            sid: state.sid,
            cwd: state.cwd,
            umask: state.umask,
            break_start: state.break_start,
            program_break: state.program_break,
            mmap_next: state.mmap_next,
            children: Vec::new(),
            close_on_exec,
            signals: state.signals.for_child(call.thread.tid),
            command: state.command.clone(),
            arguments: state.arguments.clone(),
            executable: state.executable.clone(),
            exit_status: None,
            stopped: false,
            real_timer: Default::default(),
            cpu_timers: Default::default(),
            posix_timers: Vec::new(),
            limits: state.limits,
            scheduling: Vec::new(),
            affinity: Vec::new(),
            credentials: state.credentials,
            // Neither the parent-death signal nor the subreaper role is
            // inherited (prctl(2)); the rest of prctl's settings are.
            control: process::ProcessControl { death_signal: 0, child_subreaper: false, ..state.control },
            nice: state.nice,
            cpu_warned: 0,
            groups: state.groups.clone(),
            sysv: state.sysv.for_child(),
            ended_threads: Default::default(),
            reaped_children: Default::default(),
        };
        (child, (state.scheduling_of(call.thread.tid).for_child(), state.affinity_of(call.thread.tid)))
    };
    let pgid = state.pgid;
    let child = match Process::create(native.clone(), state) {
        Ok(child) => child,
        Err(errno) => {
            native.destroy();
            return Err(errno);
        }
    };
    let (child_scheduling, child_affinity) = child_scheduling;
    let inherited = {
        let mut state = child.state();
        state.set_scheduling(child.pid, child_scheduling).and_then(|()| state.set_affinity(child.pid, child_affinity))
    };
    if inherited.is_err() {
        child.native.destroy();
        process::remove(child.pid);
        return Err(Errno::ENOMEM);
    }
    {
        let mut state = parent.state();
        if state.children.try_reserve(1).is_err() {
            drop(state);
            child.native.destroy();
            process::remove(child.pid);
            return Err(Errno::EAGAIN);
        }
        state.children.push(Child { pid: child.pid, pgid, status: None, times: Default::default(), stopped: None });
    }
    context.registers.rax = 0;
    child.move_to_group(group_for_child(parent.group(), child_affinity));
    let pid = child.pid;
    if let Err(errno) = carry_descriptors(&child, parent.group()) {
        run::exit(&child, exited(127));
        return Err(errno);
    }
    if let Err(errno) = run::start_thread(child.clone(), context, pid, clear_child_tid.unwrap_or(0)) {
        run::exit(&child, exited(127));
        return Err(errno);
    }
    value(u64::from(pid))
}

/// The CPU group a new process lives in (issue 20): the one its inherited
/// affinity confines it to (`taskset`), else the boot's placement policy
/// (round-robin or least-loaded over the groups). Group 0 without groups.
fn group_for_child(parent_group: usize, affinity: Option<u64>) -> usize {
    if kernel_objects::groups::count() < 2 {
        return 0;
    }
    affinity.and_then(kernel_objects::groups::confining_group).unwrap_or_else(|| kernel_objects::groups::place_new_process(parent_group))
}

/// The new process `child`, placed in its group, obtains through the group
/// kernels a copy of every inherited description held in another group
/// (`group_descriptors`; nothing to do without CPU groups).
fn carry_descriptors(child: &Arc<Process>, parent_group: usize) -> Result<(), Errno> {
    if kernel_objects::groups::count() < 2 {
        return Ok(());
    }
    let handles = crate::group_descriptors::descriptions_held(child.native.space())?;
    crate::group_descriptors::carry_into_group(child.pid, child.group(), parent_group, &handles)
}

/// Most arguments plus environment strings `execve` takes.
const MAX_STRINGS: usize = 8192;

fn string_vector(call: &Call<'_>, address: u64) -> Result<Vec<Vec<u8>>, Errno> {
    let mut strings = Vec::new();
    if address == 0 {
        return Ok(strings);
    }
    for index in 0..MAX_STRINGS as u64 {
        let pointer = call.word_in(address + index * 8)?;
        if pointer == 0 {
            return Ok(strings);
        }
        strings.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        strings.push(call.string_in(pointer, 128 * 1024).map_err(|errno| if errno == Errno::ENAMETOOLONG { Errno::E2BIG } else { errno })?);
    }
    Err(Errno::E2BIG)
}

pub fn execve(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    let arguments = string_vector(call, call.argument(1))?;
    let environment = string_vector(call, call.argument(2))?;
    exec(call, path, arguments, environment, 0)
}

fn exec(call: &mut Call<'_>, path: Vec<u8>, mut arguments: Vec<Vec<u8>>, environment: Vec<Vec<u8>>, depth: u32) -> CallResult {
    let inode = lookup_at(call, AT_FDCWD as u64, &path, true)?;
    let stat = fs::with(|tree| tree.stat(inode))?;
    if stat.mode & 0o170000 != 0o100000 {
        return Err(Errno::EACCES);
    }
    if stat.mode & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    super::permissions::check(call, inode, super::permissions::want::EXECUTE, false)?;
    let mut header = alloc::vec![0u8; 256];
    let length = fs::with(|tree| tree.read(inode, 0, &mut header))?;
    header.truncate(length);
    if header.starts_with(b"#!") {
        if depth >= 4 {
            return Err(Errno::ELOOP);
        }
        // `#!interpreter [one optional argument]`, up to the end of the line.
        let line = header[2..].split(|byte| *byte == b'\n').next().unwrap_or_default();
        let blank = |byte: &u8| *byte == b' ' || *byte == b'\t';
        let line = &line[line.iter().position(|byte| !blank(byte)).unwrap_or(line.len())..];
        let end = line.iter().position(blank).unwrap_or(line.len());
        let (interpreter, rest) = (line[..end].to_vec(), &line[end..]);
        if interpreter.is_empty() {
            return Err(Errno::ENOEXEC);
        }
        let start = rest.iter().position(|byte| !blank(byte)).unwrap_or(rest.len());
        let stop = rest.iter().rposition(|byte| !blank(byte) && *byte != b'\r').map_or(start, |last| last + 1).max(start);
        let optional = rest[start..stop].to_vec();
        let mut new_arguments = Vec::new();
        new_arguments.push(interpreter.clone());
        if !optional.is_empty() {
            new_arguments.push(optional);
        }
        new_arguments.push(path);
        if !arguments.is_empty() {
            arguments.remove(0);
        }
        new_arguments.extend(arguments);
        return exec(call, interpreter, new_arguments, environment, depth + 1);
    }
    let container = call.process.native.container();
    let argument_slices: Vec<&[u8]> = arguments.iter().map(Vec::as_slice).collect();
    let environment_slices: Vec<&[u8]> = environment.iter().map(Vec::as_slice).collect();
    let mut random = [0u8; 16];
    crate::random::fill(&mut random);
    let (stack_limit, personality) = {
        let state = call.process.state();
        (state.limits.soft(linux_abi::resource_limits::RLIMIT_STACK), state.control.personality)
    };
    let layout = crate::address_randomization::layout_for(personality);
    let image = fs::with(|tree| {
        let tree: &vfs::Namespace = tree;
        let contents = tree.contents(inode)?;
        let key = tree.stat(inode).ok().map(|stat| FileKey::of(inode, &stat));
        let interpreter_files = |path: &[u8]| {
            let interpreter = tree.lookup(tree.root(), path, true)?;
            Ok((tree.contents(interpreter)?, tree.stat(interpreter).ok().map(|stat| FileKey::of(interpreter, &stat))))
        };
        Ok(build(container, &contents, key, &interpreter_files, &argument_slices, &environment_slices, random, stack_limit, layout))
    })?;
    let image = match image {
        Ok(image) => image,
        // A malformed program is ENOEXEC (`ExecError::errno`), silently, as on Linux.
        Err(error) => return Err(error.errno()),
    };
    let executable = absolute_path(call, &path)?;
    // Every other thread leaves first (Linux's de_thread); this one takes
    // the process's id.
    call.process.become_single_threaded(call.thread.tid)?;
    let old_tid = core::mem::replace(&mut call.thread.tid, call.process.pid);
    // The point of no return: the old program is gone from here on. Its
    // robust locks are marked as their owner's death would mark them, and
    // neither the list nor `clear_child_tid` outlives its memory.
    crate::futexes::release_robust_list(call.process, old_tid, call.thread.robust_list);
    call.thread.robust_list = 0;
    call.thread.clear_tid = 0;
    close_on_exec_descriptors(call);
    crate::posix_timers::delete_all(call.process);
    // The old memory goes, and the segments attached in it (undo stays).
    let attachments = core::mem::take(&mut call.process.state().sysv.attachments);
    crate::sysv_ipc::leave(crate::sysv_ipc::ProcessIpc { attachments, undo: Vec::new() }, call.process.pid, false);
    {
        let mut state = call.process.state();
        state.signals.reset_for_exec(old_tid, call.process.pid);
        state.break_start = image.break_start;
        state.program_break = image.break_start;
        state.mmap_next = image.mmap_next;
        let name = path.rsplit(|byte| *byte == b'/').next().unwrap_or(&path);
        state.command = name[..name.len().min(15)].to_vec();
        state.arguments = arguments.join(&0u8);
        // A new program is dumpable again (no set-user-ID programs here).
        state.control.not_dumpable = false;
        state.executable = executable;
    }
    if let Some(old) = call.process.native.replace_memory(image.memory) {
        destroy_space(old);
    }
    *call.context = UserContext::new(image.entry, image.stack_pointer);
    Ok(Outcome::Registers)
}

/// The canonical absolute path of the program `path` names (symbolic
/// links resolved), as `/proc/self/exe` shows it.
fn absolute_path(call: &Call<'_>, path: &[u8]) -> Result<Vec<u8>, Errno> {
    let resolved = super::paths::resolve_at(call, AT_FDCWD as u64, path, true)?;
    let mut absolute = fs::with(|tree| tree.path_of(resolved.parent))?;
    if absolute != b"/" {
        absolute.push(b'/');
    }
    absolute.extend_from_slice(&resolved.name);
    Ok(absolute)
}

fn close_on_exec_descriptors(call: &Call<'_>) {
    let marked: Vec<u32> = {
        let mut state = call.process.state();
        let marked = state.close_on_exec.iter().enumerate().flat_map(|(word, bits)| (0..64).filter(move |bit| bits & (1 << bit) != 0).map(move |bit| (word * 64 + bit) as u32)).collect();
        state.close_on_exec.clear();
        marked
    };
    for fd in marked {
        super::files::drop_record_locks(call, u64::from(fd));
        if let Ok(removed) = caps().with(|database| database.drop_capability(call.process.native.space(), fd)) {
            undo(&removed);
        }
    }
}

/// Which children a `wait` selector names, and every child there is.
fn selected(call: &Call<'_>, selector: i64) -> Result<(Vec<Pid>, Vec<Pid>), Errno> {
    let children: Vec<Pid> = call.process.state().children.iter().map(|child| child.pid).collect();
    let known = children.clone();
    let own_group = call.process.state().pgid;
    let matches = |pid: Pid| match selector {
        -1 => true,
        0 => group_of(pid) == Some(own_group),
        selector if selector < -1 => group_of(pid) == Some((-selector) as Pid),
        selector => pid == selector as Pid,
    };
    let chosen: Vec<Pid> = children.into_iter().filter(|pid| matches(*pid)).collect();
    if chosen.is_empty() {
        return Err(Errno::ECHILD);
    }
    Ok((chosen, known))
}

fn group_of(pid: Pid) -> Option<Pid> {
    process::find(pid).map(|found| found.state().pgid)
}

/// Waits for a child `selector` names (as `selected`) to exit; returns its
/// pid, wait status and CPU time (`None` with `WNOHANG` when none has). A
/// child reaped (not kept) adds its time to its parent's children's time.
/// The selection is made again whenever a child the last one did not know
/// appears (forked by another thread, or an orphan adopted): a wait for
/// any child that kept its first list left adopted orphans unreaped, as
/// zombies, for as long as init waited for its one program.
fn reap(call: &Call<'_>, selector: i64, no_hang: bool, keep: bool, untraced: bool) -> Result<Option<(Pid, u32, CpuTimes)>, Errno> {
    loop {
        let (chosen, known) = selected(call, selector)?;
        let reportable = |child: &Child| chosen.contains(&child.pid) && (child.status.is_some() || (untraced && child.stopped.is_some()));
        let ready = |state: &ProcessState| state.children.iter().any(reportable);
        let unknown_child = |state: &ProcessState| state.children.iter().any(|child| !known.contains(&child.pid));
        let mut state = call.process.state();
        if !ready(&state) {
            if no_hang {
                return Ok(None);
            }
            state = call.process.wait_for(state, call.thread.tid, |state| ready(state) || unknown_child(state));
            if !ready(&state) {
                if unknown_child(&state) {
                    continue;
                }
                // EINTR, or run again after the signal (SA_RESTART, or no
                // handler: a SIGCONT, a stop).
                return Err(linux_abi::restart::ERESTARTSYS);
            }
        }
        let index = state.children.iter().position(reportable).ok_or(Errno::ECHILD)?;
        let child = state.children[index];
        if child.status.is_none() {
            // A stop, reported once.
            if !keep {
                state.children[index].stopped = None;
            }
            return Ok(child.stopped.map(|status| (child.pid, status, CpuTimes::default())));
        }
        if !keep {
            state.children.remove(index);
            state.reaped_children = state.reaped_children.plus(child.times);
        }
        drop(state);
        if !keep {
            process::remove(child.pid);
        }
        return Ok(child.status.map(|status| (child.pid, status, child.times)));
    }
}

pub fn wait4(call: &mut Call<'_>) -> CallResult {
    const WNOHANG: u64 = 1;
    let (selector, status_out, options) = (call.argument(0) as i32 as i64, UserPtr::<u32>::argument(call, 1), call.argument(2));
    if options & !(WNOHANG | 2 | 8 | 0x4000_0000 | 0x8000_0000 | 0x2000_0000) != 0 {
        return Err(Errno::EINVAL);
    }
    const WUNTRACED: u64 = 2;
    match reap(call, selector, options & WNOHANG != 0, false, options & WUNTRACED != 0)? {
        None => value(0),
        Some((pid, status, times)) => {
            if let Some(status_out) = status_out {
                status_out.write(call, &status)?;
            }
            if call.argument(3) != 0 {
                call.write_out(call.argument(3), &rusage(times, 0))?;
            }
            value(u64::from(pid))
        }
    }
}

pub fn waitid(call: &mut Call<'_>) -> CallResult {
    const P_ALL: u64 = 0;
    const P_PID: u64 = 1;
    const P_PGID: u64 = 2;
    const WNOHANG: u64 = 1;
    const WNOWAIT: u64 = 0x0100_0000;
    let (kind, id, info, options) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3));
    let selector = match kind {
        P_ALL => -1,
        P_PID => id as i64,
        P_PGID => -(id as i64),
        _ => return Err(Errno::EINVAL),
    };
    const WSTOPPED: u64 = 2;
    let reaped = reap(call, selector, options & WNOHANG != 0, options & WNOWAIT != 0, options & WSTOPPED != 0)?;
    let mut record = [0u8; 128];
    if let Some((_, _, times)) = reaped {
        if call.argument(4) != 0 {
            call.write_out(call.argument(4), &rusage(times, 0))?;
        }
    }
    if let Some((pid, status, _)) = reaped {
        let (code, value_field) = linux_abi::WaitStatus::decode(status).map_or((0, 0), linux_abi::WaitStatus::child_code_and_value);
        record[0..4].copy_from_slice(&17u32.to_le_bytes()); // SIGCHLD
        record[8..12].copy_from_slice(&code.to_le_bytes()); // CLD_EXITED / CLD_KILLED
        record[16..20].copy_from_slice(&pid.to_le_bytes());
        record[24..28].copy_from_slice(&value_field.to_le_bytes());
    }
    if info != 0 {
        call.write_out(info, &record)?;
    }
    value(0)
}

fn check_signal(signal: u64) -> Result<u32, Errno> {
    if signal > u64::from(MAX_SIGNAL) {
        return Err(Errno::EINVAL);
    }
    Ok(signal as u32)
}

/// The `siginfo` of a signal process `call` sends with `kill` (`code`
/// `SI_USER`) or `tgkill` (`SI_TKILL`).
fn sender_info(call: &Call<'_>, signal: u32, code: i32) -> SigInfo {
    SigInfo::from_process(signal, code, call.pid(), 0)
}

pub fn kill(call: &mut Call<'_>) -> CallResult {
    let (target, signal) = (call.argument(0) as i32 as i64, check_signal(call.argument(1))?);
    let info = sender_info(call, signal, codes::SI_USER);
    let sent = match target {
        pid if pid > 0 => match process::find(pid as Pid).filter(|found| found.state().exit_status.is_none()) {
            Some(found) if !super::identity::may_signal(call, &found) => return Err(Errno::EPERM),
            Some(found) => {
                send_signal_with(&found, signal, info);
                1
            }
            None => 0,
        },
        0 => {
            // Its own group, read first: the sending locks every member's
            // state, the caller's too (a guard living through the call
            // deadlocked the caller's CPU on its own lock).
            let group = call.process.state().pgid;
            signal_group_with(group, signal, info)
        }
        -1 => {
            let everyone: Vec<Arc<Process>> =
                process::all().into_iter().filter(|other| other.pid != 1 && other.pid != call.pid() && super::identity::may_signal(call, other)).collect();
            for other in &everyone {
                send_signal_with(other, signal, info);
            }
            everyone.len()
        }
        group => signal_group_with((-group) as Pid, signal, info),
    };
    if sent == 0 {
        return Err(Errno::ESRCH);
    }
    value(0)
}

pub fn tgkill(call: &mut Call<'_>) -> CallResult {
    let (group, thread, signal) = (call.argument(0) as i32, call.argument(1) as i32, check_signal(call.argument(2))?);
    if group <= 0 || thread <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = process::owner_of_thread(thread as Pid).filter(|found| found.pid == group as Pid).ok_or(Errno::ESRCH)?;
    send_thread_signal_with(&target, thread as Pid, signal, sender_info(call, signal, codes::SI_TKILL));
    value(0)
}

/// `tkill(tid, signal)`: `SI_TKILL`, to that thread of whichever process.
pub fn tkill(call: &mut Call<'_>) -> CallResult {
    let (thread, signal) = (call.argument(0) as i32, check_signal(call.argument(1))?);
    if thread <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = process::owner_of_thread(thread as Pid).ok_or(Errno::ESRCH)?;
    send_thread_signal_with(&target, thread as Pid, signal, sender_info(call, signal, codes::SI_TKILL));
    value(0)
}

/// `rt_sigqueueinfo(pid, signal, info)`: sends `signal` with the caller's
/// `siginfo` (its code and value; `sigqueue`). Another process may not be
/// sent a code the kernel uses (EPERM, as Linux).
pub fn rt_sigqueueinfo(call: &mut Call<'_>) -> CallResult {
    let (pid, signal) = (call.argument(0) as i32, check_signal(call.argument(1))?);
    let mut bytes = [0u8; linux_abi::signal_frame::SIGINFO_BYTES];
    call.read_in(call.argument(2), &mut bytes)?;
    let given = SigInfo::decode(&bytes);
    if (given.code >= 0 || given.code == codes::SI_TKILL) && pid as Pid != call.pid() {
        return Err(Errno::EPERM);
    }
    let target = process::find(pid as Pid).filter(|found| pid > 0 && found.state().exit_status.is_none()).ok_or(Errno::ESRCH)?;
    send_signal_with(&target, signal, SigInfo { signo: signal, ..given });
    value(0)
}

pub fn getppid(call: &mut Call<'_>) -> CallResult {
    value(u64::from(call.process.state().parent))
}

pub fn getpgid(call: &mut Call<'_>) -> CallResult {
    getpgid_of(call, call.argument(0))
}

pub fn getpgid_of(call: &Call<'_>, pid: u64) -> CallResult {
    if pid == 0 {
        return value(u64::from(call.process.state().pgid));
    }
    let found = process::find(pid as Pid).ok_or(Errno::ESRCH)?;
    let pgid = found.state().pgid;
    value(u64::from(pgid))
}

pub fn getsid(call: &mut Call<'_>) -> CallResult {
    let pid = call.argument(0);
    if pid == 0 {
        return value(u64::from(call.process.state().sid));
    }
    let found = process::find(pid as Pid).ok_or(Errno::ESRCH)?;
    let sid = found.state().sid;
    value(u64::from(sid))
}

pub fn setpgid(call: &mut Call<'_>) -> CallResult {
    let (pid, pgid) = (call.argument(0) as i32, call.argument(1) as i32);
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let pid = if pid == 0 { call.pid() } else { pid as Pid };
    let pgid = if pgid == 0 { pid } else { pgid as Pid };
    let is_child = call.process.state().children.iter().any(|child| child.pid == pid);
    if pid != call.pid() && !is_child {
        return Err(Errno::ESRCH);
    }
    let target = process::find(pid).ok_or(Errno::ESRCH)?;
    {
        let mut state = target.state();
        if state.sid == pid {
            return Err(Errno::EPERM); // a session leader keeps its group
        }
        state.pgid = pgid;
    }
    if is_child {
        if let Some(record) = call.process.state().children.iter_mut().find(|child| child.pid == pid) {
            record.pgid = pgid;
        }
    }
    value(0)
}

pub fn setsid(call: &mut Call<'_>) -> CallResult {
    let pid = call.pid();
    let leads_group = process::all().iter().any(|other| other.pid != pid && other.state().pgid == pid);
    let mut state = call.process.state();
    if state.pgid == pid || leads_group {
        return Err(Errno::EPERM);
    }
    state.pgid = pid;
    state.sid = pid;
    value(u64::from(pid))
}

pub fn umask(call: &mut Call<'_>) -> CallResult {
    let mut state = call.process.state();
    let old = state.umask;
    state.umask = call.argument(0) as u32 & 0o777;
    value(u64::from(old))
}

pub fn arch_prctl(call: &mut Call<'_>) -> CallResult {
    const ARCH_SET_FS: u64 = 0x1002;
    const ARCH_GET_FS: u64 = 0x1003;
    let (code, address) = (call.argument(0), call.argument(1));
    match code {
        ARCH_SET_FS => {
            if address >= vmem::USER_END {
                return Err(Errno::EPERM);
            }
            call.context.registers.fs_base = address;
            value(0)
        }
        ARCH_GET_FS => {
            call.write_out(address, &call.context.registers.fs_base.to_le_bytes())?;
            value(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn set_tid_address(call: &mut Call<'_>) -> CallResult {
    call.thread.clear_tid = call.argument(0);
    value(u64::from(call.thread.tid))
}


