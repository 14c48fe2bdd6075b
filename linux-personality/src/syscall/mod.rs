//! The Linux x86-64 system-call table: the number in `rax` decoded into a
//! [`Sysno`] (the numbers and names are `linux-abi`'s), arguments in `rdi,
//! rsi, rdx, r10, r8, r9`, the result or `-errno` in `rax`. Lamina's native
//! capability calls (`0x4c00..`) share the entry. Any other number is
//! ENOSYS, logged once with its name; a bad argument is its errno, never
//! a panic.

mod buffers;
mod capability_sets;
mod file_space;
mod files;
mod futex_calls;
mod inet;
mod inet_control;
mod interface_ioctls;
mod kvm;
mod identity;
mod info;
mod memory;
mod mounts;
mod netlink;
mod paths;
mod permissions;
mod pipe_writes;
mod mqueues;
mod process_control;
mod process_memory;
mod processes;
mod scheduling;
mod signals;
mod user_ptr;
mod vector_cursor;
mod clocks;
mod control_messages;
mod events;
mod sockets;
mod sysv;
mod timers;
mod tracing;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use machine::user::UserContext;

use super::process::{Pid, Process};
use super::run::ThreadSelf;
use linux_abi::{Errno, Sysno};

pub use user_ptr::UserPtr;

/// What the thread does after a system call.
pub enum Flow {
    /// Back to user mode.
    Continue,
    /// This thread ends (`exit`); the process with it if it was the last.
    ExitThread(u32),
    /// The whole process ends with this wait status (`exit_group`).
    Exit(u32),
}

/// What a call returns: a value for `rax`, or registers already set
/// (`rt_sigreturn`, `execve`), or the end of the process.
pub enum Outcome {
    Value(u64),
    Registers,
    ExitThread(u32),
    Exit(u32),
}

type CallResult = Result<Outcome, Errno>;

/// One system call being handled.
pub struct Call<'a> {
    pub process: &'a Arc<Process>,
    pub context: &'a mut UserContext,
    pub arguments: [u64; 6],
    /// The calling thread.
    pub thread: &'a mut ThreadSelf,
}

impl Call<'_> {
    fn argument(&self, index: usize) -> u64 {
        self.arguments[index]
    }

    /// Copies `buffer.len()` bytes in from user memory.
    pub fn read_in(&self, address: u64, buffer: &mut [u8]) -> Result<(), Errno> {
        self.process.native.user_memory().read(address, buffer)
    }

    /// Copies `bytes` out to user memory.
    pub fn write_out(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        self.process.native.user_memory().write(address, bytes)
    }

    /// A NUL-terminated string from user memory, at most `limit` bytes.
    pub fn string_in(&self, address: u64, limit: usize) -> Result<Vec<u8>, Errno> {
        self.process.native.user_memory().read_c_string(address, limit, Errno::ENAMETOOLONG)
    }

    /// A `u64` from user memory.
    pub fn word_in(&self, address: u64) -> Result<u64, Errno> {
        self.process.native.user_memory().read_u64(address)
    }

    /// Whether a signal waits to be delivered or the process is ending
    /// (blocking calls end with EINTR).
    pub fn interrupted(&self) -> bool {
        thread_interrupted(self.process, self.thread.tid)
    }

    /// This process's pid.
    pub fn pid(&self) -> Pid {
        self.process.pid
    }
}

/// Handles the system call `context` stopped at (recorded when the
/// system-call tracer is on: one predictable branch when it is off).
pub fn dispatch(process: &Arc<Process>, context: &mut UserContext, thread: &mut ThreadSelf) -> Flow {
    if crate::syscall_trace::enabled() {
        return tracing::traced(process, context, thread, dispatch_call);
    }
    dispatch_call(process, context, thread)
}

/// [`dispatch`] without the tracer.
fn dispatch_call(process: &Arc<Process>, context: &mut UserContext, thread: &mut ThreadSelf) -> Flow {
    let registers = &context.registers;
    let number = registers.rax;
    let arguments = [registers.rdi, registers.rsi, registers.rdx, registers.r10, registers.r8, registers.r9];
    if (kernel_objects::capabilities::numbers::CREATE_MEMORY..kernel_objects::capabilities::numbers::END).contains(&number) {
        return native_call(process, context, thread);
    }
    let mut call = Call { process, context, arguments, thread };
    let result = handle(&mut call, number);
    match result {
        Ok(Outcome::Value(value)) => call.context.registers.rax = value,
        Ok(Outcome::Registers) => {}
        Ok(Outcome::Exit(status)) => return Flow::Exit(status),
        Ok(Outcome::ExitThread(status)) => return Flow::ExitThread(status),
        Err(errno) => {
            call.context.registers.rax = errno.to_return_value();
            if linux_abi::restart::is_restart_code(errno.to_return_value()) {
                call.thread.interrupted_call = Some(number);
            }
        }
    }
    Flow::Continue
}

/// A Lamina native call: blocking IPC gives up when a signal comes or the
/// process ends, as Linux's blocking calls do. (Not `#[cold]`: IPC is a
/// hot path.)
fn native_call(process: &Arc<Process>, context: &mut UserContext, thread: &mut ThreadSelf) -> Flow {
    let tid = thread.tid;
    let interrupted = || thread_interrupted(process, tid);
    kernel_objects::capabilities::handle_native_call(&process.native, &mut thread.ipc, context, &interrupted);
    Flow::Continue
}

/// Whether thread `tid` has a signal waiting to be delivered or its
/// process is ending (blocking calls end with EINTR).
pub(crate) fn thread_interrupted(process: &Process, tid: Pid) -> bool {
    process.group_exit().is_some()
        || process.must_leave_for_exec(tid)
        // The hint first: a sender raises it before it wakes a sleeper.
        || (process.signals_maybe_pending() && process.state().signals.deliverable(tid))
}

fn value(value: u64) -> CallResult {
    Ok(Outcome::Value(value))
}

/// Runs the call numbered `number`: decoded into a [`Sysno`] first (a
/// number Linux does not have, or one Lamina does not implement, is ENOSYS).
/// The calls that make kernel objects on the heap (processes, threads,
/// open files, sockets, pipes, IPC objects): refused with ENOMEM while the
/// heap is nearly full ([`buffers::heap_admits_new_objects`]), so that
/// the allocations inside them do not meet an empty heap. The calls that
/// free memory (close, exit, munmap, wait) are never refused.
fn makes_kernel_objects(sysno: Sysno) -> bool {
    use Sysno::*;
    matches!(
        sysno,
        fork | vfork | clone | clone3 | execve | execveat | open | openat | openat2 | creat | socket | socketpair
            | accept | accept4 | pipe | pipe2 | epoll_create | epoll_create1 | eventfd | eventfd2 | timerfd_create
            | signalfd | signalfd4 | memfd_create | inotify_init | inotify_init1 | mq_open | shmget | semget | msgget
            | msgsnd | timer_create | dup | dup2 | dup3 | mkdir | mkdirat | mknod | mknodat | symlink | symlinkat
            | link | linkat | pidfd_open
    )
}

fn handle(call: &mut Call<'_>, number: u64) -> CallResult {
    use files::{FinalLink, PipeCall, SelectCall};
    use paths::{AccessCall, RenameCall, XattrTarget};
    use Sysno::*;
    let Some(sysno) = Sysno::from_number(number) else {
        log_unknown(number, None);
        return Err(Errno::ENOSYS);
    };
    if makes_kernel_objects(sysno) && !buffers::heap_admits_new_objects(number) {
        return Err(Errno::ENOMEM);
    }
    match sysno {
        read => files::read(call),
        write => files::write(call),
        open => files::open(call),
        close => files::close(call),
        close_range => files::close_range(call),
        stat => files::stat(call, FinalLink::Follow),
        fstat => files::fstat(call),
        lstat => files::stat(call, FinalLink::DoNotFollow),
        poll => files::poll(call),
        lseek => files::lseek(call),
        mmap => memory::mmap(call),
        mprotect => memory::mprotect(call),
        munmap => memory::munmap(call),
        brk => memory::brk(call),
        rt_sigaction => signals::rt_sigaction(call),
        rt_sigprocmask => signals::rt_sigprocmask(call),
        rt_sigreturn => signals::rt_sigreturn(call),
        ioctl => files::ioctl(call),
        pread64 => files::pread(call),
        pwrite64 => files::pwrite(call),
        readv => files::readv(call),
        writev => files::writev(call),
        preadv => files::positioned_vectors(call, false),
        pwritev => files::positioned_vectors(call, true),
        preadv2 => files::positioned_vectors2(call, false),
        pwritev2 => files::positioned_vectors2(call, true),
        socketpair => sockets::socketpair(call),
        socket => sockets::socket_call(call),
        bind => sockets::bind(call),
        listen => sockets::listen(call),
        connect => sockets::connect(call),
        accept => sockets::accept(call, false),
        accept4 => sockets::accept(call, true),
        shutdown => sockets::shutdown(call),
        sendto => sockets::sendto(call),
        recvfrom => sockets::recvfrom(call),
        sendmsg => sockets::sendmsg(call),
        recvmsg => sockets::recvmsg(call),
        getsockopt => sockets::getsockopt(call),
        setsockopt => sockets::setsockopt(call),
        getsockname => sockets::socket_name(call, false),
        getpeername => sockets::socket_name(call, true),
        eventfd => events::eventfd(call, false),
        eventfd2 => events::eventfd(call, true),
        shmget => sysv::shmget(call),
        shmat => sysv::shmat(call),
        shmdt => sysv::shmdt(call),
        shmctl => sysv::shmctl(call),
        semget => sysv::semget(call),
        semop => sysv::semop(call, false),
        semtimedop => sysv::semop(call, true),
        semctl => sysv::semctl(call),
        msgget => sysv::msgget(call),
        msgsnd => sysv::msgsnd(call),
        msgrcv => sysv::msgrcv(call),
        msgctl => sysv::msgctl(call),
        timerfd_create => events::timerfd_create(call),
        timerfd_settime => events::timerfd_settime(call),
        timerfd_gettime => events::timerfd_gettime(call),
        signalfd => events::signalfd(call, false),
        signalfd4 => events::signalfd(call, true),
        epoll_create => events::epoll_create(call, false),
        epoll_create1 => events::epoll_create(call, true),
        epoll_ctl => events::epoll_ctl(call),
        epoll_wait => events::epoll_wait(call),
        epoll_pwait => signals::wait_mask(call, call.argument(4), call.argument(5)).and_then(|mask| signals::with_wait_mask(call, mask, events::epoll_wait)),
        epoll_pwait2 => signals::wait_mask(call, call.argument(4), call.argument(5)).and_then(|mask| signals::with_wait_mask(call, mask, events::epoll_pwait2)),
        access => paths::access(call, AccessCall::Access),
        pipe => files::pipe(call, PipeCall::Pipe),
        select => files::select(call, SelectCall::Select),
        sched_yield => {
            sched::yield_now();
            value(0)
        }
        madvise => memory::madvise(call),
        dup => files::dup(call),
        dup2 => files::dup2(call),
        nanosleep => clocks::nanosleep(call),
        restart_syscall => clocks::restart_syscall(call),
        alarm => timers::alarm(call),
        msync => memory::msync(call),
        flock => files::flock(call),
        mincore => memory::mincore(call),
        mlock | munlock => memory::mlock(call, 0),
        mlock2 => {
            let flags = call.argument(2);
            memory::mlock(call, flags)
        }
        mlockall => memory::mlockall(call),
        munlockall => value(0), // nothing is ever locked more than anything else
        getxattr => paths::getxattr(call, XattrTarget::Path),
        lgetxattr => paths::getxattr(call, XattrTarget::LinkPath),
        fgetxattr => paths::getxattr(call, XattrTarget::Descriptor),
        listxattr => paths::listxattr(call, XattrTarget::Path),
        llistxattr => paths::listxattr(call, XattrTarget::LinkPath),
        flistxattr => paths::listxattr(call, XattrTarget::Descriptor),
        setxattr | removexattr => paths::setxattr(call, XattrTarget::Path),
        lsetxattr | lremovexattr => paths::setxattr(call, XattrTarget::LinkPath),
        fsetxattr | fremovexattr => paths::setxattr(call, XattrTarget::Descriptor),
        setitimer => timers::setitimer(call),
        getitimer => timers::getitimer(call),
        mq_open => mqueues::mq_open(call),
        mq_unlink => mqueues::mq_unlink(call),
        mq_timedsend => mqueues::mq_timedsend(call),
        mq_timedreceive => mqueues::mq_timedreceive(call),
        mq_notify => mqueues::mq_notify(call),
        mq_getsetattr => mqueues::mq_getsetattr(call),
        timer_create => timers::timer_create(call),
        timer_settime => timers::timer_settime(call),
        timer_gettime => timers::timer_gettime(call),
        timer_getoverrun => timers::timer_getoverrun(call),
        timer_delete => timers::timer_delete(call),
        sendfile => files::sendfile(call),
        getpid => value(u64::from(call.pid())),
        clone => processes::clone(call),
        fork | vfork => processes::fork(call),
        execve => processes::execve(call),
        exit => processes::exit_thread(call),
        exit_group => processes::exit(call),
        wait4 => processes::wait4(call),
        kill => processes::kill(call),
        uname => info::uname(call),
        sethostname => info::set_uts_name(call, crate::uts_names::Which::Host),
        setdomainname => info::set_uts_name(call, crate::uts_names::Which::Domain),
        fcntl => files::fcntl(call),
        fsync | fdatasync => files::fsync(call),
        truncate => paths::truncate(call),
        ftruncate => files::ftruncate(call),
        getdents => files::getdents(call, linux_abi::DirentFormat::Dirent),
        getdents64 => files::getdents(call, linux_abi::DirentFormat::Dirent64),
        getcwd => paths::getcwd(call),
        chdir => paths::chdir(call),
        fchdir => paths::fchdir(call),
        rename => paths::rename(call),
        mkdir => paths::mkdir(call),
        rmdir => paths::rmdir(call),
        link => paths::link(call),
        unlink => paths::unlink(call),
        symlink => paths::symlink(call),
        readlink => paths::readlink(call),
        chmod => paths::chmod(call),
        fchmod => files::fchmod(call),
        chown => paths::chown(call, false, true),
        lchown => paths::chown(call, false, false),
        fchownat => paths::chown(call, true, true),
        fchown => files::descriptor(call, call.argument(0))
            .and_then(|file| file.inode().ok_or(Errno::EBADF))
            .and_then(|inode| permissions::change_owner(call, inode, call.argument(1) as u32, call.argument(2) as u32))
            .and_then(|()| value(0)),
        umask => processes::umask(call),
        gettimeofday => clocks::gettimeofday(call),
        getrlimit => info::getrlimit(call),
        getrusage => info::getrusage(call),
        sysinfo => info::sysinfo(call),
        times => info::times(call),
        getuid => identity::get_id(call, identity::Which::User, false),
        geteuid => identity::get_id(call, identity::Which::User, true),
        getgid => identity::get_id(call, identity::Which::Group, false),
        getegid => identity::get_id(call, identity::Which::Group, true),
        syslog => info::syslog(call),
        setuid => identity::set_ids(call, |ids, [id, ..]| ids.setuid(id).map(|()| 0)),
        setgid => identity::set_ids(call, |ids, [id, ..]| ids.setgid(id).map(|()| 0)),
        setreuid => identity::set_ids(call, |ids, [real, effective, _]| ids.setreuid(real, effective).map(|()| 0)),
        setregid => identity::set_ids(call, |ids, [real, effective, _]| ids.setregid(real, effective).map(|()| 0)),
        setresuid => identity::set_ids(call, |ids, [real, effective, saved]| ids.setresuid(real, effective, saved).map(|()| 0)),
        setresgid => identity::set_ids(call, |ids, [real, effective, saved]| ids.setresgid(real, effective, saved).map(|()| 0)),
        setfsuid => identity::set_ids(call, |ids, [id, ..]| Ok(u64::from(ids.setfsuid(id)))),
        setfsgid => identity::set_ids(call, |ids, [id, ..]| Ok(u64::from(ids.setfsgid(id)))),
        setgroups => identity::setgroups(call),
        getpriority => identity::getpriority(call),
        setpriority => identity::setpriority(call),
        fadvise64 => file_space::fadvise(call),
        fallocate => file_space::fallocate(call),
        memfd_create => file_space::memfd_create(call),
        setpgid => processes::setpgid(call),
        getppid => processes::getppid(call),
        getpgrp => processes::getpgid_of(call, 0),
        setsid => processes::setsid(call),
        getgroups => identity::getgroups(call),
        process_vm_readv => process_memory::process_vm(call, process_memory::Direction::Read),
        process_vm_writev => process_memory::process_vm(call, process_memory::Direction::Write),
        getresuid => identity::get_all_ids(call, identity::Which::User),
        capget => capability_sets::capget(call),
        getresgid => identity::get_all_ids(call, identity::Which::Group),
        getpgid => processes::getpgid(call),
        getsid => processes::getsid(call),
        rt_sigpending => signals::rt_sigpending(call),
        rt_sigsuspend => signals::rt_sigsuspend(call),
        rt_sigtimedwait => signals::rt_sigtimedwait(call),
        pause => signals::pause(call),
        sigaltstack => signals::sigaltstack(call),
        statfs => mounts::statfs(call, false),
        fstatfs => mounts::statfs(call, true),
        prctl => process_control::prctl(call),
        personality => process_control::personality(call),
        sync => mounts::sync(),
        syncfs => mounts::syncfs(call),
        mount => mounts::mount(call),
        umount2 => mounts::umount2(call),
        reboot => info::reboot(call),
        arch_prctl => processes::arch_prctl(call),
        setrlimit => info::setrlimit(call),
        gettid => value(u64::from(call.thread.tid)),
        tkill => processes::tkill(call),
        rt_sigqueueinfo => processes::rt_sigqueueinfo(call),
        time => clocks::time(call),
        futex => futex_calls::futex(call),
        sched_setaffinity => scheduling::sched_setaffinity(call),
        sched_setscheduler => scheduling::sched_setscheduler(call),
        sched_getscheduler => scheduling::sched_getscheduler(call),
        sched_setparam => scheduling::sched_setparam(call),
        sched_getparam => scheduling::sched_getparam(call),
        sched_get_priority_max => scheduling::sched_get_priority_max(call),
        sched_get_priority_min => scheduling::sched_get_priority_min(call),
        sched_rr_get_interval => scheduling::sched_rr_get_interval(call),
        sched_getaffinity => scheduling::sched_getaffinity(call),
        getcpu => scheduling::getcpu(call),
        set_tid_address => processes::set_tid_address(call),
        clock_gettime => clocks::clock_gettime(call),
        clock_getres => clocks::clock_getres(call),
        clock_settime => clocks::clock_settime(call),
        settimeofday => clocks::settimeofday(call),
        clock_nanosleep => clocks::clock_nanosleep(call),
        tgkill => processes::tgkill(call),
        waitid => processes::waitid(call),
        openat => files::openat(call),
        mkdirat => paths::mkdirat(call),
        mremap => memory::mremap(call),
        mknod => paths::mknod(call, false),
        mknodat => paths::mknod(call, true),
        newfstatat => files::newfstatat(call),
        unlinkat => paths::unlinkat(call),
        renameat => paths::renameat(call, RenameCall::Renameat),
        renameat2 => paths::renameat(call, RenameCall::Renameat2),
        linkat => paths::linkat(call),
        symlinkat => paths::symlinkat(call),
        readlinkat => paths::readlinkat(call),
        fchmodat => paths::fchmodat(call),
        faccessat => paths::access(call, AccessCall::Faccessat),
        faccessat2 => paths::access(call, AccessCall::Faccessat2),
        pselect6 => {
            // The sixth argument points to { const sigset_t *mask; size_t size; }.
            let pair = call.argument(5);
            let (pointer, size) = if pair == 0 { (0, 0) } else { (call.word_in(pair)?, call.word_in(pair + 8)?) };
            signals::wait_mask(call, pointer, size).and_then(|mask| signals::with_wait_mask(call, mask, |call| files::select(call, SelectCall::Pselect6)))
        }
        ppoll => signals::wait_mask(call, call.argument(3), call.argument(4)).and_then(|mask| signals::with_wait_mask(call, mask, files::ppoll)),
        set_robust_list => futex_calls::set_robust_list(call),
        get_robust_list => futex_calls::get_robust_list(call),
        utimensat => paths::utimensat(call),
        dup3 => files::dup3(call),
        pipe2 => files::pipe(call, PipeCall::Pipe2),
        prlimit64 => info::prlimit64(call),
        getrandom => info::getrandom(call),
        statx => files::statx(call),
        rseq => value(0), // not supported, accepted as if registered
        _ => {
            log_unknown(number, Some(sysno));
            Err(Errno::ENOSYS)
        }
    }
}

/// Numbers already reported (one bit each below 512).
static REPORTED: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

fn log_unknown(number: u64, sysno: Option<Sysno>) {
    let (word, bit) = ((number / 64) as usize, 1u64 << (number % 64));
    let first_time = REPORTED.get(word).is_none_or(|bits| bits.fetch_or(bit, Ordering::Relaxed) & bit == 0);
    if first_time {
        crate::kernel_log::note(format_args!("system call {} ({number}) is not supported: ENOSYS", sysno.map_or("unknown", Sysno::name)));
    }
}
