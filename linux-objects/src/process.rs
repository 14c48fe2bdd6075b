//! Linux processes on top of the capability layer's processes: a process
//! id, the parent and its children's exit statuses, process group and
//! session, working directory, umask, program break, close-on-exec
//! descriptors and signal state; its threads (a `clone` with
//! `CLONE_THREAD` adds one; they share everything here).
//!
//! **Lock order**: a process's state lock ([`STATE_LEVEL`]) may be held
//! while taking the process table (5) but never another process's state
//! lock; the parent is told of an exit after the child's own lock is
//! released.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use spinlock::kernel::{KernelTicketLock, IrqOff, PerCpuLevels};
use spinlock::{Level, SpinLockGuard, TicketLock};
use sync::{Condvar, KernelBlocking};

use crate::sleep_lock::SleepLock;
use vfs::InodeId;

use super::signals::SignalState;
use kernel_objects::capabilities::NativeProcess;
use linux_abi::Errno;
use linux_abi::cpu_times::CpuTimes;
use linux_abi::scheduling::Scheduling;

/// A process id.
pub type Pid = u32;

/// Level of each process's state lock (outermost of this layer).
pub const STATE_LEVEL: Level = Level::new(10);
const TABLE_LEVEL: Level = Level::new(5);

/// The highest top of the area where `mmap` places regions, growing down
/// (a program's own top is at most this: `linux_abi::address_layout`).
pub const MMAP_TOP: u64 = linux_abi::address_layout::MMAP_TOP;

/// What the parent knows of a child.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Child {
    /// Its pid.
    pub pid: Pid,
    /// Its process group (for `waitpid(-pgid)`).
    pub pgid: Pid,
    /// Its wait status once it has exited, not yet collected.
    pub status: Option<u32>,
    /// Once it has exited: its CPU time and its own waited-for children's.
    pub times: CpuTimes,
    /// A stop not yet reported (`WUNTRACED`): its wait status.
    pub stopped: Option<u32>,
}

/// The mutable part of a process.
pub struct ProcessState {
    pub parent: Pid,
    pub pgid: Pid,
    pub sid: Pid,
    pub cwd: InodeId,
    pub umask: u32,
    pub break_start: u64,
    pub program_break: u64,
    pub mmap_next: u64,
    pub children: Vec<Child>,
    /// Descriptors closed by `execve` (bit per descriptor).
    pub close_on_exec: Vec<u64>,
    pub signals: SignalState,
    /// The program's name (`comm`, 15 bytes) and its arguments, NUL-separated.
    pub command: Vec<u8>,
    pub arguments: Vec<u8>,
    /// The absolute path of the running program (`/proc/self/exe`).
    pub executable: Vec<u8>,
    /// Set once it has exited: its wait status.
    pub exit_status: Option<u32>,
    /// Stopped by SIGSTOP/SIGTSTP/SIGTTIN/SIGTTOU until SIGCONT.
    pub stopped: bool,
    /// `ITIMER_REAL` (`alarm`, `setitimer`); a fork starts disarmed.
    pub real_timer: crate::itimers::TimerSlot,
    /// `ITIMER_VIRTUAL` and `ITIMER_PROF` (`crate::cpu_itimers`); a fork
    /// starts disarmed.
    pub cpu_timers: [linux_abi::cpu_times::CpuIntervalTimer; 2],
    /// `timer_create`'s timers; a fork starts with none.
    pub posix_timers: Vec<crate::posix_timers::PosixTimer>,
    /// Resource limits; fork and execve keep them.
    pub limits: linux_abi::resource_limits::ResourceLimits,
    /// Threads whose scheduling policy is not the default, by thread id.
    pub scheduling: Vec<(Pid, Scheduling)>,
    /// Threads whose CPU affinity is not every CPU, by thread id (bit n:
    /// CPU n). Kept and reported; the scheduler does not pin yet.
    pub affinity: Vec<(Pid, u64)>,
    /// Its users and groups (fork and execve keep them).
    pub credentials: linux_abi::credentials::Credentials,
    /// What `prctl` set (`linux-personality`'s `syscall/process_control.rs`).
    pub control: ProcessControl,
    /// Its nice value (-20..=19; fork and execve keep it).
    pub nice: i32,
    /// Its supplementary groups (fork and execve keep them). Shared, not
    /// copied, by every path lookup's permission check and by fork: a list
    /// of up to 65,536 groups copied per lookup emptied the heap under the
    /// fuzzer and panicked the kernel.
    pub groups: Arc<Vec<u32>>,
    /// Its System V IPC attachments and semaphore undo adjustments.
    pub sysv: crate::sysv_ipc::ProcessIpc,
    /// The CPU second SIGXCPU was last sent at (`RLIMIT_CPU`).
    pub cpu_warned: u64,
    /// The CPU time of its threads that have ended.
    pub ended_threads: CpuTimes,
    /// The CPU time of the children it waited for (and of theirs).
    pub reaped_children: CpuTimes,
}

impl ProcessState {
    /// Marks descriptor `fd` close-on-exec or not.
    pub fn set_close_on_exec(&mut self, fd: u32, on: bool) -> Result<(), Errno> {
        let word = fd as usize / 64;
        if word >= self.close_on_exec.len() {
            if !on {
                return Ok(());
            }
            self.close_on_exec.try_reserve(word + 1 - self.close_on_exec.len()).map_err(|_| Errno::ENOMEM)?;
            self.close_on_exec.resize(word + 1, 0);
        }
        let bit = 1u64 << (fd % 64);
        if on { self.close_on_exec[word] |= bit } else { self.close_on_exec[word] &= !bit }
        Ok(())
    }

    /// Thread `tid`'s scheduling policy and priority.
    pub fn scheduling_of(&self, tid: Pid) -> Scheduling {
        self.scheduling.iter().find(|(thread, _)| *thread == tid).map_or_else(Scheduling::default, |(_, setting)| *setting)
    }

    /// Sets thread `tid`'s (ENOMEM when the table cannot grow).
    pub fn set_scheduling(&mut self, tid: Pid, setting: Scheduling) -> Result<(), Errno> {
        set_thread_entry(&mut self.scheduling, tid, (setting != Scheduling::default()).then_some(setting))
    }

    /// Thread `tid`'s CPU affinity (`None`: every CPU).
    pub fn affinity_of(&self, tid: Pid) -> Option<u64> {
        self.affinity.iter().find(|(thread, _)| *thread == tid).map(|(_, mask)| *mask)
    }

    /// Sets thread `tid`'s (`None`: every CPU; ENOMEM when the table cannot grow).
    pub fn set_affinity(&mut self, tid: Pid, mask: Option<u64>) -> Result<(), Errno> {
        set_thread_entry(&mut self.affinity, tid, mask)
    }

    /// Whether descriptor `fd` is close-on-exec.
    pub fn close_on_exec(&self, fd: u32) -> bool {
        self.close_on_exec.get(fd as usize / 64).is_some_and(|word| word & (1 << (fd % 64)) != 0)
    }
}

/// Sets thread `tid`'s entry of a per-thread table that lists only the
/// threads not at the default (`None`: back to the default, no entry).
fn set_thread_entry<T>(table: &mut Vec<(Pid, T)>, tid: Pid, value: Option<T>) -> Result<(), Errno> {
    table.retain(|(thread, _)| *thread != tid);
    if let Some(value) = value {
        table.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        table.push((tid, value));
    }
    Ok(())
}

type StateGuard<'a> = SpinLockGuard<'a, ProcessState, TicketLock, IrqOff, PerCpuLevels>;

/// A process.
pub struct Process {
    pub pid: Pid,
    pub native: Arc<NativeProcess>,
    state: KernelTicketLock<ProcessState>,
    /// Signalled when a child changes state or a signal arrives.
    events: Condvar<KernelBlocking>,
    /// The kernel threads running its user threads, by thread id, to wake
    /// on signals and to count: the last one out ends the process.
    threads: KernelTicketLock<Vec<(Pid, Arc<sched::Thread>)>>,
    /// Set by `exit_group` (or a fatal signal): the wait status every
    /// thread leaves with ([`NOBODY`] until then; the first one counts).
    /// One word each, read on every system call: atomics, not locks.
    group_exit: AtomicU64,
    /// Set while thread `tid` runs `execve`: every other thread leaves (as
    /// Linux's `de_thread`), the process goes on ([`NOBODY`]: none).
    exec_by: AtomicU64,
    /// Whether a CPU interval timer is armed (`crate::cpu_itimers` checks
    /// them only then).
    pub cpu_timers_armed: AtomicBool,
    /// The signal state's hint (`SignalState::hint`), read without the
    /// state's lock on every return to user mode.
    signal_hint: Arc<sched::pending_hint::PendingHint>,
    /// The CPU group (kernel instance, issue 20) it lives in: its threads
    /// run only on that group's CPUs. Changed by [`Process::move_to_group`].
    group: AtomicU32,
    /// Whether the process has ended, behind a lock its holder may sleep
    /// under: a move to another group (which waits for group kernels) and
    /// the exit's clean-up of copies in other groups run one at a time,
    /// and no move starts after the exit's (see [`Process::while_placed`]).
    placement: SleepLock<Placement>,
}

/// What [`Process::placement`] guards.
struct Placement {
    ended: bool,
}

/// The placement lock's inner spinlock (taken with no other lock held).
const PLACEMENT_LEVEL: Level = Level::new(9);

/// The value of `group_exit` and `exec_by` while not set.
const NOBODY: u64 = u64::MAX;

static TABLE: KernelTicketLock<Vec<Arc<Process>>> = KernelTicketLock::new(TABLE_LEVEL, Vec::new());
static NEXT_PID: AtomicU32 = AtomicU32::new(1);

impl Process {
    /// A new process with the next pid, entered in the process table.
    pub fn create(native: Arc<NativeProcess>, mut state: ProcessState) -> Result<Arc<Self>, Errno> {
        let mut table = TABLE.lock();
        table.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
        let pid = NEXT_PID.fetch_add(1, Ordering::Relaxed);
        state.signals.name_main_thread(pid);
        let cpu_limited = state.limits.get(linux_abi::resource_limits::RLIMIT_CPU).is_ok_and(|limit| limit != [u64::MAX; 2]);
        let signal_hint = state.signals.hint();
        let process = Arc::new(Self {
            pid,
            native,
            state: KernelTicketLock::new(STATE_LEVEL, state),
            events: Condvar::new(),
            threads: KernelTicketLock::new(TABLE_LEVEL, Vec::new()),
            group_exit: AtomicU64::new(NOBODY),
            exec_by: AtomicU64::new(NOBODY),
            cpu_timers_armed: AtomicBool::new(cpu_limited),
            signal_hint,
            group: AtomicU32::new(0),
            placement: SleepLock::new(PLACEMENT_LEVEL, Placement { ended: false }),
        });
        table.push(process.clone());
        kernel_objects::groups::process_joined(0);
        Ok(process)
    }

    /// Whether a signal may be pending (or an `rt_sigsuspend` mask wait to
    /// be put back) for some thread; false means the caller, having taken
    /// its kick flag, need not look under the lock.
    #[inline]
    pub fn signals_maybe_pending(&self) -> bool {
        self.signal_hint.maybe_pending()
    }

    /// Locks the process's state.
    pub fn state(&self) -> StateGuard<'_> {
        self.state.lock()
    }

    /// Thread `tid` waits on the process's event condition until `ready`
    /// holds or a signal it does not block is pending; returns the guard.
    pub fn wait_for<'a>(&'a self, mut guard: StateGuard<'a>, tid: Pid, ready: impl Fn(&ProcessState) -> bool) -> StateGuard<'a> {
        while !ready(&guard) && !guard.signals.deliverable(tid) && self.group_exit().is_none() && self.exec_by.load(Ordering::Acquire) == NOBODY {
            guard = self.events.wait(guard, &self.state);
        }
        guard
    }

    /// Wakes the process's threads if they wait for an event.
    pub fn notify(&self) {
        self.wake_threads(false);
    }

    /// For a signal, a group exit or an `execve`: wakes the threads as
    /// `notify` does, and kicks them (`sched::kick`): those running user
    /// code on other CPUs enter the kernel, and those on their way back to
    /// user mode look again first.
    pub fn notify_signal(&self) {
        self.wake_threads(true);
    }

    fn wake_threads(&self, kick: bool) {
        self.events.broadcast();
        // Under the lock (the scheduler's locks are below it): no copy.
        let threads = self.threads.lock();
        for (_, thread) in threads.iter() {
            sched::unpark(thread);
            if kick {
                sched::kick(thread);
            }
        }
    }

    /// Its user threads as the scheduler sees them (park state, home CPU,
    /// whether on a CPU), for `/proc/lamina/sched`.
    pub fn thread_summaries(&self) -> Vec<(Pid, sched::ThreadSummary)> {
        self.threads.lock().iter().map(|(tid, thread)| (*tid, sched::ThreadSummary::traced(thread))).collect()
    }

    /// Records a user thread `tid` run by kernel thread `thread`.
    pub fn add_thread(&self, tid: Pid, thread: Arc<sched::Thread>) -> Result<(), Errno> {
        let mut threads = self.threads.lock();
        threads.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
        threads.push((tid, thread));
        Ok(())
    }

    /// The CPU group it lives in.
    pub fn group(&self) -> usize {
        // Relaxed: a process's group is a placement fact; a thread that
        // reads a stale one is moved by `move_to_group` itself.
        self.group.load(Ordering::Relaxed) as usize
    }

    /// The CPUs thread `tid` may run on: its affinity within the CPUs of
    /// the process's group, the whole group when its affinity names none
    /// of them (every CPU without groups and without affinity).
    pub fn cpus_for(&self, tid: Pid) -> sched::placement::CpuMask {
        use sched::placement::CpuMask;
        let group = kernel_objects::groups::cpus_of(self.group());
        let affinity = self.state().affinity_of(tid).map_or(CpuMask::ALL, CpuMask::from_bits);
        match affinity.bits() & group.bits() {
            0 => group,
            both if both == u64::MAX => CpuMask::ALL,
            both => CpuMask::from_bits(both),
        }
    }

    /// [`Process::cpus_for`] as the CPUs that exist (what
    /// `sched_getaffinity` and `/proc/<pid>/status` report).
    pub fn allowed_cpu_mask(&self, tid: Pid) -> u64 {
        self.cpus_for(tid).bits() & online_cpu_mask()
    }

    /// Runs `operation`, which may move the process to another group,
    /// while no other such operation and no exit's clean-up runs for it;
    /// ESRCH once the process has ended (a move then would leave copies
    /// and counts behind that nobody takes back). The caller may sleep
    /// and must hold no spinlock.
    pub fn while_placed<R>(&self, operation: impl FnOnce() -> Result<R, Errno>) -> Result<R, Errno> {
        self.placement.with(|placement| if placement.ended { Err(Errno::ESRCH) } else { operation() })
    }

    /// Marks the process ended and runs `clean_up` (its copies in other
    /// groups going) after any move in progress and before any later
    /// one is refused. The caller may sleep and must hold no spinlock.
    pub fn end_placement(&self, clean_up: impl FnOnce()) {
        self.placement.with(|placement| {
            placement.ended = true;
            clean_up();
        });
    }

    /// Moves the process to CPU group `group`: counted there, and every
    /// thread confined to that group's CPUs (the caller, if it is one of
    /// them, moves before this returns; the others at once if they wait,
    /// within a tick if they run). Call it inside [`Process::while_placed`]
    /// or before the process is seen by anyone else (a new child).
    pub fn move_to_group(&self, group: usize) {
        let old = self.group.swap(group as u32, Ordering::Relaxed) as usize;
        if old == group {
            return;
        }
        kernel_objects::groups::process_left(old);
        kernel_objects::groups::process_joined(group);
        // Copies, so that no lock is held while a thread moves (the caller
        // may switch CPUs inside `set_allowed`).
        let threads: Vec<(Pid, Arc<sched::Thread>)> = {
            let held = self.threads.lock();
            let mut copy = Vec::new();
            if copy.try_reserve_exact(held.len()).is_ok() {
                copy.extend(held.iter().cloned());
            }
            copy
        };
        // With no memory for the copy, none moves now: each is confined to
        // the new group the next time it starts a thread or is moved (the
        // group is already set).
        for (tid, thread) in threads {
            // A mask inside the group is never empty: cannot fail.
            let _ = sched::set_allowed(&thread, self.cpus_for(tid));
        }
    }

    /// Forgets user thread `tid`; returns how many remain.
    pub fn remove_thread(&self, tid: Pid) -> usize {
        let mut threads = self.threads.lock();
        threads.retain(|(id, _)| *id != tid);
        threads.len()
    }

    /// The CPU time of its live threads (the caller's exactly, the others'
    /// up to their CPU's last tick) and of those that ended.
    pub fn cpu_times(&self) -> CpuTimes {
        let me = sched::current();
        let live = self.threads.lock().iter().fold(CpuTimes::default(), |sum, (_, thread)| sum.plus(thread_times(thread, &me)));
        live.plus(self.state().ended_threads)
    }

    /// Thread `tid`'s CPU time, if it is one of this process's.
    pub fn thread_cpu_times(&self, tid: Pid) -> Option<CpuTimes> {
        let me = sched::current();
        self.threads.lock().iter().find(|(id, _)| *id == tid).map(|(_, thread)| thread_times(thread, &me))
    }

    /// How many threads it has.
    pub fn thread_count(&self) -> usize {
        self.threads.lock().len()
    }

    /// The kernel thread that runs user thread `tid`, if it is recorded.
    pub fn kernel_thread(&self, tid: Pid) -> Option<Arc<sched::Thread>> {
        self.threads.lock().iter().find(|(id, _)| *id == tid).map(|(_, thread)| thread.clone())
    }

    /// Whether user thread `tid` is recorded.
    pub fn has_thread(&self, tid: Pid) -> bool {
        self.threads.lock().iter().any(|(id, _)| *id == tid)
    }


    /// Starts a group exit with `status` (the first one counts).
    pub fn begin_group_exit(&self, status: u32) {
        // AcqRel: later readers see what the exiting thread did before.
        let _ = self.group_exit.compare_exchange(NOBODY, u64::from(status), Ordering::AcqRel, Ordering::Acquire);
        self.notify_signal();
    }

    /// The status of a group exit under way.
    #[inline]
    pub fn group_exit(&self) -> Option<u32> {
        let status = self.group_exit.load(Ordering::Acquire);
        (status != NOBODY).then_some(status as u32)
    }

    /// Whether thread `tid` must leave because another thread runs
    /// `execve`.
    #[inline]
    pub fn must_leave_for_exec(&self, tid: Pid) -> bool {
        let execing = self.exec_by.load(Ordering::Acquire);
        execing != NOBODY && execing != u64::from(tid)
    }

    /// Makes every thread but `tid` leave and waits until they have; then
    /// `tid` is the process's only thread and takes the process's id as its
    /// own (the thread group leader's, as on Linux). Fails (ESRCH) if the
    /// process is ending meanwhile or SIGKILL arrives. One `execve` at a
    /// time: a thread that finds another's under way fails (EAGAIN) and
    /// leaves on its way out like the other threads (as Linux's
    /// `de_thread`); two that both waited for the other to leave hung the
    /// process beyond SIGKILL (found by the fuzzer).
    pub fn become_single_threaded(&self, tid: Pid) -> Result<(), Errno> {
        if self.exec_by.compare_exchange(NOBODY, u64::from(tid), Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(Errno::EAGAIN);
        }
        self.notify_signal();
        let alone = || self.threads.lock().len() <= 1 || self.group_exit().is_some();
        let mut killed = false;
        while !alone() && !killed {
            let soon = machine::timer::uptime_nanoseconds().saturating_add(1_000_000);
            sched::sleep_until(soon, alone);
            killed = self.signals_maybe_pending() && self.state().signals.kill_pending();
        }
        self.exec_by.store(NOBODY, Ordering::Release);
        if self.group_exit().is_some() || killed {
            return Err(Errno::ESRCH);
        }
        for (thread_id, _) in self.threads.lock().iter_mut() {
            *thread_id = self.pid;
        }
        Ok(())
    }
}

/// The process with `pid`, if it exists (zombies included).
pub fn find(pid: Pid) -> Option<Arc<Process>> {
    TABLE.lock().iter().find(|process| process.pid == pid).cloned()
}

/// The live process one of whose threads is `tid` (`tgkill`, `tkill`).
pub fn owner_of_thread(tid: Pid) -> Option<Arc<Process>> {
    let live = |process: &Arc<Process>| process.state().exit_status.is_none();
    if let Some(process) = find(tid).filter(|process| live(process) && process.has_thread(tid)) {
        return Some(process);
    }
    all().into_iter().find(|process| process.pid != tid && process.has_thread(tid) && live(process))
}

/// Every process (for `kill(-1)`, process groups and `/proc`).
pub fn all() -> Vec<Arc<Process>> {
    TABLE.lock().clone()
}

/// Every process, or ENOMEM when the kernel heap has no room for the list
/// (for calls that must fail cleanly when memory runs out: `/proc`).
pub fn try_all() -> Result<Vec<Arc<Process>>, Errno> {
    let table = TABLE.lock();
    let mut copy = Vec::new();
    copy.try_reserve_exact(table.len()).map_err(|_| Errno::ENOMEM)?;
    copy.extend(table.iter().cloned());
    Ok(copy)
}

/// Every online CPU as an affinity mask (bit n: CPU n; at most 64).
pub fn online_cpu_mask() -> u64 {
    match machine::percpu::online_count() {
        count if count >= 64 => u64::MAX,
        count => (1u64 << count) - 1,
    }
}

/// Forgets a reaped zombie.
pub fn remove(pid: Pid) {
    let mut table = TABLE.lock();
    if let Some(index) = table.iter().position(|process| process.pid == pid) {
        let process = table.remove(index);
        kernel_objects::groups::process_left(process.group());
    }
}

/// A new thread or process id (one number space, as on Linux).
pub fn new_id() -> Pid {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
}

/// A fresh state for a process whose working directory is `cwd`.
pub fn initial_state(parent: Pid, cwd: InodeId) -> ProcessState {
    ProcessState {
        parent,
        pgid: 0,
        sid: 0,
        cwd,
        umask: 0o022,
        break_start: 0,
        program_break: 0,
        mmap_next: MMAP_TOP,
        children: Vec::new(),
        close_on_exec: Vec::new(),
        signals: SignalState::new(),
        command: Vec::new(),
        arguments: Vec::new(),
        executable: Vec::new(),
        exit_status: None,
        stopped: false,
        real_timer: Default::default(),
        cpu_timers: Default::default(),
        posix_timers: Vec::new(),
        limits: Default::default(),
        scheduling: Vec::new(),
        affinity: Vec::new(),
        credentials: linux_abi::credentials::Credentials::root(),
        control: Default::default(),
        nice: 0,
        cpu_warned: 0,
        groups: Arc::new(Vec::new()),
        sysv: Default::default(),
        ended_threads: CpuTimes::default(),
        reaped_children: CpuTimes::default(),
    }
}

/// `thread`'s CPU time now (the caller's own read without looking at
/// other CPUs).
pub fn thread_times(thread: &Arc<sched::Thread>, me: &Arc<sched::Thread>) -> CpuTimes {
    let running = if Arc::ptr_eq(thread, me) { sched::own_cpu_time(me) } else { sched::cpu_time_of(thread) };
    CpuTimes::from_running_user(running, thread.user_time())
}

/// What `prctl` and `personality` keep for a process (fork copies it, but
/// not the parent-death signal; execve keeps it).
#[derive(Clone, Copy, Default)]
pub struct ProcessControl {
    pub death_signal: u32,
    pub not_dumpable: bool,
    pub no_new_privileges: bool,
    pub child_subreaper: bool,
    /// `personality(2)`'s value: `PER_LINUX` (0) with flags, of which
    /// Lamina acts on `ADDR_NO_RANDOMIZE` (the next execve's layout).
    pub personality: u32,
}
