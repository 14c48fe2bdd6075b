//! Per-CPU scheduling: spawn, yield, park/unpark, preemption, idle, exit,
//! pinning and migration.
//!
//! Every CPU owns a [`CpuQueues`] (its ReadyQ and PendQ) and a `current`
//! slot. The owner takes threads off its queues, and an idle CPU may take
//! a movable thread waiting on a busy CPU's ReadyQ; any CPU may add to a
//! PendQ. Where a new thread starts and whom an idle CPU takes from are
//! `placement.rs`'s choices. All queue work happens with interrupts off
//! (the queue locks keep them off), and no queue lock is held across
//! `switch_to`.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use machine::context::{self, ThreadContext};
use machine::percpu::{self, MAX_CPUS};
use machine::{apic, cpu, trap};

use containers::ContainerId;

use super::lock::{queue_lock, QueueLock};
use super::stacks::{self, set_source, StackSource, THREAD_PAGES};
use super::thread::Thread;
use super::trace::TraceKind;
use crate::idle_flag::IdleFlag;
use crate::placement::{choose_cpu, choose_victim, Busy, CpuMask};
use crate::queues::{route_wakeup, CpuQueues, WakeDelivery};
use crate::tick_plan::TickPlan;

/// One CPU's scheduling state.
pub(super) struct CpuScheduler {
    pub(super) queues: QueueLock<CpuQueues<Arc<Thread>>>,
    pub(super) current: QueueLock<Option<Arc<Thread>>>,
    idle_thread: QueueLock<Option<Arc<Thread>>>,
    /// Set while the CPU sits in its idle loop (wakers send an IPI then).
    pub(super) idle: IdleFlag,
    pub(super) switches: AtomicU64,
    /// Uptime (ns) of this CPU's last timer tick, for stall reports.
    pub(super) last_tick: AtomicU64,
    /// Wake IPIs other CPUs sent here, and those this CPU took.
    pub(super) wake_ipis_sent: AtomicU64,
    pub(super) wake_ipis_taken: AtomicU64,
    /// Threads this CPU took from busy CPUs' ReadyQs while idle.
    threads_taken: AtomicU64,
    /// The lengths of its ReadyQ and PendQ as of their last change, for
    /// other CPUs' placement and balancing choices without taking the
    /// queues' lock (8 idle vCPUs locking every queue each tick made the
    /// busy CPUs' queue operations wait on them).
    ready_seen: AtomicUsize,
    pending_seen: AtomicUsize,
    /// Uptime (ns) of this CPU's last look for a thread to take.
    last_take_look: AtomicU64,
    /// The CPUs this one takes waiting threads from while idle: its
    /// group's with CPU groups (`set_domain`), every CPU without.
    domain: AtomicU64,
    /// The time-stamp counter reading since which the current thread's
    /// running time is not yet added to its `cpu_cycles`.
    stint_start: AtomicU64,
    /// When this CPU's one-shot timer fires next (only this CPU, with
    /// interrupts off, touches it).
    tick_plan: QueueLock<TickPlan>,
}

impl CpuScheduler {
    const fn new() -> Self {
        Self {
            queues: queue_lock(CpuQueues::new()),
            current: queue_lock(None),
            idle_thread: queue_lock(None),
            idle: IdleFlag::new(),
            switches: AtomicU64::new(0),
            last_tick: AtomicU64::new(0),
            wake_ipis_sent: AtomicU64::new(0),
            wake_ipis_taken: AtomicU64::new(0),
            threads_taken: AtomicU64::new(0),
            ready_seen: AtomicUsize::new(0),
            pending_seen: AtomicUsize::new(0),
            last_take_look: AtomicU64::new(0),
            domain: AtomicU64::new(u64::MAX),
            stint_start: AtomicU64::new(0),
            tick_plan: queue_lock(TickPlan::new(machine::timer::TICK_NANOSECONDS, 0)),
        }
    }
}

pub(super) static CPUS: [CpuScheduler; MAX_CPUS] = [const { CpuScheduler::new() }; MAX_CPUS];
static PREEMPTION: AtomicBool = AtomicBool::new(false);

/// Why spawning failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    /// No memory for the thread's kernel stack.
    OutOfMemory,
    /// The container cannot cover the thread's pages ([`THREAD_PAGES`]).
    OverQuota,
    /// The CPU asked for is not online.
    NoSuchCpu,
}

fn this_cpu() -> (usize, &'static CpuScheduler) {
    let index = percpu::current_index();
    (index, &CPUS[index])
}

/// Makes the code running on this CPU its idle thread. Called once per CPU
/// before it schedules anything; `stacks` is how new threads get stacks
/// and pay for them, `root` the container of the boot and idle threads.
pub fn init_cpu(stacks: &'static StackSource, root: ContainerId) {
    set_source(stacks);
    let (index, this) = this_cpu();
    let idle = Arc::new(Thread::new("idle", context::current(), index, None, true, root));
    *this.idle_thread.lock() = Some(idle.clone());
    *this.current.lock() = Some(idle);
    this.stint_start.store(cpu::read_timestamp_counter(), Ordering::Relaxed);
}

/// Adds `current`'s running time up to the time-stamp counter reading
/// `now` to its CPU time (interrupts off: only this CPU touches its
/// `stint_start`). Kept in cycles: a switch charges without a conversion
/// to nanoseconds (two divisions, ~30 instructions), done when read.
fn charge_stint(this: &CpuScheduler, current: &Thread, now: u64) {
    let started = this.stint_start.swap(now, Ordering::Relaxed);
    current.add_cpu_cycles(now.saturating_sub(started));
}

/// The CPU time (ns) of `me`, the calling thread, its running stint
/// included. Cheap (no lock, no reference count).
pub fn own_cpu_time(me: &Thread) -> u64 {
    let _off = cpu::InterruptsOff::new();
    debug_assert!(Arc::ptr_eq(&context::current(), &me.context), "own_cpu_time of a thread that is not the caller");
    let (_, this) = this_cpu();
    let running = cpu::read_timestamp_counter().saturating_sub(this.stint_start.load(Ordering::Relaxed));
    machine::timer::nanoseconds_of_cycles(me.cpu_cycles() + running)
}

/// `thread`'s CPU time (ns) now: what was charged to it, plus the stint
/// so far when a CPU is running it (so it is exact even when that CPU's
/// ticks come late, as on an overloaded host).
pub fn cpu_time_of(thread: &Arc<Thread>) -> u64 {
    loop {
        let charged = thread.cpu_cycles();
        let now = cpu::read_timestamp_counter();
        let running = CPUS.iter().take(percpu::online_count()).find_map(|cpu| {
            let current = cpu.current.lock();
            current.as_ref().filter(|on_cpu| Arc::ptr_eq(on_cpu, thread)).map(|_| cpu.stint_start.load(Ordering::Relaxed))
        });
        // A charge in between moved time from the stint to `charged`:
        // read again rather than count it twice.
        if thread.cpu_cycles() == charged {
            return machine::timer::nanoseconds_of_cycles(charged + running.map_or(0, |start| now.saturating_sub(start)));
        }
    }
}

/// Turns on timer preemption and the wake-IPI handler (once, at boot).
pub fn enable_preemption() {
    // On before the handler: a tick that finds it off would not re-arm
    // its CPU's one-shot timer.
    PREEMPTION.store(true, Ordering::Release);
    trap::set_handler(trap::VECTOR_TIMER, timer_tick);
    trap::set_handler(trap::VECTOR_WAKE, wake_interrupt);
}

/// Makes sure this CPU's timer fires by `deadline` (uptime ns), for a
/// sleeper that just joined this CPU's list. Interrupts must be off, so
/// the caller is still on the CPU whose list it joined.
pub(super) fn fire_this_cpu_timer_by(deadline: u64) {
    debug_assert!(!cpu::interrupts_enabled(), "arming another CPU's timer");
    let (_, this) = this_cpu();
    let arm_for = this.tick_plan.lock().arm(deadline);
    if let Some(at) = arm_for {
        machine::timer::arm_one_shot(trap::VECTOR_TIMER, at);
    }
}

/// Whether the thread running on this CPU lets allocation-failure
/// injection fail its allocations (false before scheduling starts). No
/// reference is taken: cheap enough for an allocation path.
pub fn current_is_injectable() -> bool {
    let (_, this) = this_cpu();
    this.current.lock().as_ref().is_some_and(|thread| thread.injectable())
}

/// The thread running on this CPU.
pub fn current() -> Arc<Thread> {
    let (_, this) = this_cpu();
    this.current.lock().clone().expect("init_cpu ran on this CPU before scheduling")
}

/// Creates a thread running `body` on CPU `cpu` (pinned when `pin`), in
/// the current thread's container.
pub fn spawn_on(cpu: usize, pin: Pinning, name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, SpawnError> {
    spawn_in(current().container(), cpu, pin, name, body)
}

/// Creates a thread in `container` running `body` on CPU `cpu`: charges
/// [`THREAD_PAGES`] to the container first, so a container at its quota
/// gets [`SpawnError::OverQuota`] and nothing changes.
pub fn spawn_in(
    container: ContainerId,
    cpu: usize,
    pin: Pinning,
    name: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Result<Arc<Thread>, SpawnError> {
    spawn_with(container, cpu, pin, CpuMask::ALL, false, name, body)
}

/// [`spawn_in`] for a thread that may run on the CPUs of `allowed` only,
/// and that idle CPUs may take when `balanced`.
fn spawn_with(
    container: ContainerId,
    cpu: usize,
    pin: Pinning,
    allowed: CpuMask,
    balanced: bool,
    name: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Result<Arc<Thread>, SpawnError> {
    if percpu::cpu(cpu).is_none() {
        return Err(SpawnError::NoSuchCpu);
    }
    let source = stacks::source().ok_or(SpawnError::OutOfMemory)?;
    if !(source.charge)(container, THREAD_PAGES) {
        return Err(SpawnError::OverQuota);
    }
    let Some(stack) = stacks::take_stack(source) else {
        (source.release)(container, THREAD_PAGES);
        return Err(SpawnError::OutOfMemory);
    };
    let context = ThreadContext::new(stack, thread_start, 0);
    let thread = Arc::new(Thread::new(name, context, cpu, Some(Box::new(body)), false, container));
    thread.set_injectable(current_is_injectable());
    thread.set_home(cpu, pin == Pinning::Pinned);
    thread.set_allowed(allowed);
    thread.set_balanced(balanced);
    make_ready(thread.clone());
    Ok(thread)
}

/// Creates a thread on the current CPU.
pub fn spawn(name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, SpawnError> {
    spawn_on(percpu::current_index(), Pinning::Free, name, body)
}

/// Creates a thread that may run on the CPUs of `allowed`, starting on
/// the least loaded of them ([`place`]), and that an idle CPU may take
/// from a busy one: how user threads and processes begin.
pub fn spawn_placed(allowed: CpuMask, name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, SpawnError> {
    let cpu = place(allowed).ok_or(SpawnError::NoSuchCpu)?;
    spawn_with(current().container(), cpu, Pinning::Free, allowed, true, name, body)
}

/// Creates a thread that may run on the CPUs of `allowed`, on this CPU
/// when it is allowed (else the least loaded allowed one), never taken by
/// an idle CPU (how user threads started while placement was off; kept
/// for threads that should stay with their creator).
pub fn spawn_here_allowed(allowed: CpuMask, name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, SpawnError> {
    let here = percpu::current_index();
    let cpu = if allowed.allows(here) { here } else { place(allowed).ok_or(SpawnError::NoSuchCpu)? };
    spawn_with(current().container(), cpu, Pinning::Free, allowed, false, name, body)
}

/// The CPU a new thread allowed on `allowed` should start on: an idle one
/// if any, else the least loaded (a CPU's load: the thread it runs plus
/// those queued on it); None when `allowed` has no online CPU.
pub fn place(allowed: CpuMask) -> Option<usize> {
    let here = percpu::current_index();
    choose_cpu(here, percpu::online_count(), allowed, |cpu| {
        let scheduler = &CPUS[cpu];
        // Relaxed: a snapshot; a stale one costs balance only.
        scheduler.ready_seen.load(Ordering::Relaxed) + scheduler.pending_seen.load(Ordering::Relaxed) + usize::from(!scheduler.idle.is_set())
    })
}

/// Restricts `thread` to the CPUs of `allowed` (which must name an online
/// CPU: `NoSuchCpu` otherwise). The caller, when it is the thread, moves
/// at once if its CPU is not allowed; another thread moves the next time
/// it becomes ready (within a timer tick if it is running).
pub fn set_allowed(thread: &Arc<Thread>, allowed: CpuMask) -> Result<(), SpawnError> {
    allowed.first(percpu::online_count()).ok_or(SpawnError::NoSuchCpu)?;
    thread.set_allowed(allowed);
    let _off = cpu::InterruptsOff::new();
    if Arc::ptr_eq(thread, &current()) && !allowed.allows(percpu::current_index()) {
        schedule(Requeue::Yes);
    } else {
        kick(thread);
    }
    Ok(())
}

/// Whether a thread stays on its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pinning {
    Pinned,
    Free,
}

/// First code of every spawned thread.
fn thread_start(_argument: usize) -> ! {
    let body = current().start.lock().take();
    if let Some(body) = body {
        body();
    }
    exit()
}

/// Ends the current thread.
pub fn exit() -> ! {
    // Interrupts off first: once the context is in the pool, a timer
    // preemption would switch away from it (so it no longer counts as
    // running), let another CPU reuse the stack, and later resume this
    // thread on a stack that is someone else's (seen at 8 vCPUs as a jump
    // into stack memory from `exit`).
    cpu::disable_interrupts();
    let thread = current();
    // The charge goes back before anyone can see the thread exited: a
    // waiter may destroy the container at once (`thread_end.rs`).
    thread.finish(|| {
        if let Some(source) = stacks::source() {
            (source.release)(thread.container(), THREAD_PAGES);
        }
    });
    stacks::retire(thread.context.clone());
    drop(thread);
    schedule(Requeue::No);
    unreachable!("an exited thread was scheduled again")
}

/// Whether `schedule` puts the current thread back on a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requeue {
    Yes,
    No,
}

/// Gives the CPU to the next ready thread, if any.
pub fn yield_now() {
    let _off = cpu::InterruptsOff::new();
    schedule(Requeue::Yes);
}

/// Blocks until [`unpark`] gives a permit (returns at once if one waits).
pub fn park() {
    let thread = current();
    if thread.permit.take_permit() {
        thread.trace.record(TraceKind::TookPermit, percpu::current_index(), 0);
        return;
    }
    let _off = cpu::InterruptsOff::new();
    if thread.permit.begin_park() {
        thread.trace.record(TraceKind::Parked, percpu::current_index(), 0);
        drop(thread);
        schedule(Requeue::No);
        let thread = current();
        thread.permit.finish_park();
        thread.trace.record(TraceKind::Unparked, percpu::current_index(), 0);
    } else {
        thread.trace.record(TraceKind::TookPermit, percpu::current_index(), 1);
    }
}

/// [`unpark`]`(target)` then [`park`], as one step: when `target` was
/// parked and its home is this CPU, the CPU switches straight to it,
/// past the scheduler's queues (the IPC fast path: a caller handing its
/// CPU to the server it wakes, a server handing it back with the answer;
/// L4's direct process switch). Otherwise `target` is made ready as
/// `unpark` does and the caller parks as `park` does. Threads queued
/// before `target` wait one more turn; the next tick shares the CPU again.
/// `me` is the calling thread.
pub fn unpark_and_park(target: &Arc<Thread>, me: &Arc<Thread>) {
    debug_assert!(Arc::ptr_eq(me, &current()), "unpark_and_park names the calling thread as `me`");
    let _off = cpu::InterruptsOff::new();
    let (index, this) = this_cpu();
    let was_parked = target.permit.give_permit();
    target.trace.record(TraceKind::GivenPermit, index, u8::from(was_parked));
    if !was_parked {
        return park();
    }
    let here = target.home_cpu() == index && target.allowed().allows(index) && !me.idle;
    if !here {
        make_ready(target.clone());
        return park();
    }
    // `begin_park` false: a permit came meanwhile, so the caller runs on
    // and `target` waits its turn.
    if !me.permit.begin_park() {
        me.trace.record(TraceKind::TookPermit, index, 1);
        return make_ready(target.clone());
    }
    me.trace.record(TraceKind::Parked, index, 0);
    charge_stint(this, &me, cpu::read_timestamp_counter());
    // The caller's `me` keeps this thread across the switch (a parked
    // thread does not exit), so the CPU's own reference to it goes now,
    // and no second look at this CPU's current thread after it.
    switch_to_thread(this, None, target.clone());
    me.permit.finish_park();
    me.trace.record(TraceKind::Unparked, percpu::current_index(), 0);
}

/// Gives `thread` a permit, waking it if it is parked.
pub fn unpark(thread: &Arc<Thread>) {
    let was_parked = thread.permit.give_permit();
    thread.trace.record(TraceKind::GivenPermit, percpu::current_index(), u8::from(was_parked));
    if was_parked {
        make_ready(thread.clone());
    }
}

/// Makes `thread` look again before it runs user code, for a change the
/// caller has just made (a signal sent, its process ending): raises its
/// kick flag, and if it is running on another CPU sends that CPU a wake
/// IPI — an interrupt taken in user mode returns through the kernel's
/// checks (a signal sent to a thread spinning in user mode is otherwise
/// seen at that CPU's next tick, up to 10 ms later; Linux's
/// `signal_wake_up` kicks the same way). The flag covers a thread in the
/// kernel past its looks or preempted there, which the IPI misses
/// (`kick_flag`, loom `tests/loom_kick.rs`); `unpark` wakes a parked one.
pub fn kick(thread: &Arc<Thread>) {
    thread.kick.raise();
    let _off = cpu::InterruptsOff::new();
    let here = percpu::current_index();
    let running_on = CPUS
        .iter()
        .take(percpu::online_count())
        .position(|cpu| cpu.current.lock().as_ref().is_some_and(|on_cpu| Arc::ptr_eq(on_cpu, thread)));
    if let Some(target) = running_on.filter(|&cpu| cpu != here).and_then(percpu::cpu) {
        apic::send_ipi(target.apic_id, trap::VECTOR_WAKE);
    }
}

/// Moves the current thread to `cpu` (pinned or not) and runs it there.
pub fn migrate_current(cpu: usize, pin: Pinning) -> Result<(), SpawnError> {
    if percpu::cpu(cpu).is_none() {
        return Err(SpawnError::NoSuchCpu);
    }
    current().set_home(cpu, pin == Pinning::Pinned);
    yield_now();
    Ok(())
}

/// Queues a runnable thread on its home CPU: the own ReadyQ when that is
/// this CPU, else the home's PendQ plus an IPI if the home CPU is idle.
fn make_ready(thread: Arc<Thread>) {
    let (index, this) = this_cpu();
    // Only a balanced thread's wait is ever read (`take_waiting_thread`):
    // the others skip the clock read.
    if thread.is_balanced() {
        thread.set_queued_at(machine::timer::uptime_nanoseconds());
    }
    let mut home = thread.home_cpu();
    let allowed = thread.allowed();
    if !allowed.allows(home) {
        // Its affinity changed since it was homed: its first allowed CPU.
        if let Some(cpu) = allowed.first(percpu::online_count()) {
            thread.set_home(cpu, thread.is_pinned());
            home = cpu;
        }
    }
    match route_wakeup(index, home) {
        WakeDelivery::Local => {
            thread.trace.record(TraceKind::QueuedLocal, index, 0);
            let mut queues = this.queues.lock();
            queues.push_ready(thread);
            note_lengths(this, &queues);
        }
        WakeDelivery::Remote { cpu } => {
            // Debug builds trace the push with the IPI decision (an extra
            // reference, which release builds do not pay for).
            #[cfg(debug_assertions)]
            let traced = thread.clone();
            {
                let mut queues = CPUS[cpu].queues.lock();
                queues.push_pending(thread);
                note_lengths(&CPUS[cpu], &queues);
            }
            // After the push: either the idle loop sees it, or we see the
            // flag (`IdleFlag`'s Dekker pair).
            let idle = CPUS[cpu].idle.must_notify();
            #[cfg(debug_assertions)]
            traced.trace.record(TraceKind::QueuedRemote, cpu, u8::from(idle));
            if idle {
                if let Some(target) = percpu::cpu(cpu) {
                    // Relaxed: a statistic for stall reports.
                    CPUS[cpu].wake_ipis_sent.fetch_add(1, Ordering::Relaxed);
                    apic::send_ipi(target.apic_id, trap::VECTOR_WAKE);
                }
            }
        }
    }
}

/// The core: picks the next thread and switches to it. Interrupts must be
/// off. With `Requeue::Yes` the current thread goes back to its home CPU's
/// queue first (so a yield to an empty queue returns at once).
fn schedule(requeue: Requeue) {
    let (_, this) = this_cpu();
    let current = this.current.lock().clone().expect("init_cpu ran on this CPU");
    debug_assert!(
        Arc::ptr_eq(&context::current(), &current.context),
        "CPU {}: the scheduler's current thread {}#{} is not the context this CPU runs",
        percpu::current_index(),
        current.name(),
        current.id()
    );
    charge_stint(this, &current, cpu::read_timestamp_counter());
    if requeue == Requeue::Yes && !current.idle {
        make_ready(current.clone());
    }
    let next = {
        let mut queues = this.queues.lock();
        queues.absorb_pending();
        let next = queues.pop_ready();
        note_lengths(this, &queues);
        next
    };
    let next = match next {
        Some(next) => next,
        None => this.idle_thread.lock().clone().expect("init_cpu ran on this CPU"),
    };
    if Arc::ptr_eq(&next, &current) {
        next.trace.record(TraceKind::KeptRunning, percpu::current_index(), 0);
        return;
    }
    switch_to_thread(this, Some(current), next);
}

/// Makes `next` this CPU's current thread and switches to it; returns when
/// the current thread runs again. Interrupts must be off, the current
/// thread's stint charged. `current`: the caller's reference to it, if it
/// holds one (let go before the switch, as the CPU's own).
fn switch_to_thread(this: &CpuScheduler, current: Option<Arc<Thread>>, next: Arc<Thread>) {
    next.trace.record(TraceKind::Chosen, percpu::current_index(), 0);
    debug_assert!(!next.has_exited(), "CPU {}: chose {}#{}, which has exited", percpu::current_index(), next.name(), next.id());
    let next_context = next.context.clone();
    let previous = this.current.lock().replace(next);
    this.switches.fetch_add(1, Ordering::Relaxed);
    drop(previous);
    drop(current);
    context::switch_to(next_context);
    debug_check_current();
}

/// Debug builds: the thread this CPU's scheduler calls current is the one
/// whose context the CPU runs.
fn debug_check_current() {
    #[cfg(debug_assertions)]
    {
        let (index, this) = this_cpu();
        let current = this.current.lock().clone().expect("init_cpu ran on this CPU");
        assert!(
            Arc::ptr_eq(&context::current(), &current.context),
            "CPU {index}: resumed, but the scheduler's current thread {}#{} is not the context this CPU runs",
            current.name(),
            current.id()
        );
    }
}

/// The wake IPI: its work is done by arriving (it ends a `hlt`).
fn wake_interrupt(_frame: &mut machine::TrapFrame) {
    let (index, this) = this_cpu();
    // Relaxed: a statistic for stall reports.
    this.wake_ipis_taken.fetch_add(1, Ordering::Relaxed);
    // `set_allowed` kicks a thread it moved off this CPU.
    if current_is_misplaced(index, this) {
        schedule(Requeue::Yes);
    }
}

/// Whether the thread running on CPU `index` may no longer run there (its
/// affinity changed): it must go back through `make_ready`, which moves it.
fn current_is_misplaced(index: usize, this: &CpuScheduler) -> bool {
    this.current.lock().as_ref().is_some_and(|current| !current.idle && !current.allowed().allows(index))
}

/// Timer interrupt, a periodic tick or an earlier fire for a sleeper's
/// deadline: wake the sleepers that are due, re-arm the one-shot timer,
/// and preempt the running thread when others wait.
fn timer_tick(frame: &mut machine::TrapFrame) {
    // Release builds do not trace where the tick found a thread.
    #[cfg(not(debug_assertions))]
    let _ = frame;
    if !PREEMPTION.load(Ordering::Acquire) {
        return;
    }
    let (index, this) = this_cpu();
    let now = machine::timer::uptime_nanoseconds();
    let woken = super::sleepers::wake_expired(now);
    // Re-armed on every fire, whatever happens next: a CPU whose timer
    // stopped would never preempt or wake its sleepers again.
    let (tick, arm_for) = {
        let mut plan = this.tick_plan.lock();
        let tick = plan.fired(now);
        (tick, plan.arm(super::sleepers::earliest_deadline()))
    };
    if let Some(at) = arm_for {
        machine::timer::arm_one_shot(trap::VECTOR_TIMER, at);
    }
    if tick {
        if let Some(per_cpu) = percpu::current() {
            per_cpu.ticks.fetch_add(1, Ordering::Relaxed);
        }
        // Relaxed: a statistic for stall reports.
        this.last_tick.store(now, Ordering::Relaxed);
        // A thread that keeps its CPU is charged each tick, so that others
        // read its CPU time at most a tick behind.
        if let Some(current) = this.current.lock().as_ref() {
            charge_stint(this, current, cpu::read_timestamp_counter());
        }
    }
    // Between ticks only a sleeper that just woke may take the CPU.
    let waiting = (tick || woken > 0) && !this.queues.lock().is_empty();
    if waiting || (tick && current_is_misplaced(index, this)) {
        #[cfg(debug_assertions)]
        if let Some(current) = this.current.lock().as_ref() {
            current.trace.record_preemption(frame.rip);
        }
        // The idle loop, interrupted in its halt, is not idle once it
        // switches to a thread from here: its flag goes (it announces again
        // when it runs next, before it looks), so wakers do not IPI a busy
        // CPU and placement does not count it as free.
        this.idle.withdraw();
        schedule(Requeue::Yes);
    }
}

/// The idle loop of a CPU: run ready threads, halt when there are none.
pub fn idle_loop() -> ! {
    let (index, this) = this_cpu();
    loop {
        cpu::disable_interrupts();
        this.idle.announce();
        let empty = this.queues.lock().is_empty();
        if empty {
            match take_waiting_thread(index, this) {
                Some(taken) => {
                    let mut queues = this.queues.lock();
                    queues.push_ready(taken);
                    note_lengths(this, &queues);
                }
                None => {
                    // An idle CPU keeps no user space loaded, so that
                    // space's TLB shootdowns pass it by (they go only to
                    // CPUs that have its root loaded).
                    machine::paging::switch_to_kernel_tables();
                    cpu::enable_interrupts_and_halt();
                    this.idle.withdraw();
                    continue;
                }
            }
        }
        this.idle.withdraw();
        schedule(Requeue::Yes);
        cpu::enable_interrupts();
    }
}

/// How long a thread must have waited on a busy CPU's ReadyQ before an
/// idle CPU takes it: a quarter of a time slice (two threads sharing a
/// CPU trade it every slice, so neither waits a whole one; an idle CPU
/// looking at a random moment of the slice finds the waiting one past a
/// quarter three times in four). A thread woken by a partner it trades
/// with (a producer and its consumer, a pipe's two ends) waits far less
/// and stays with it: taken, every hand-off between the two would cross
/// CPUs (a wake IPI and a halted CPU's wake-up each: the kernel tests'
/// one-slot queue between two threads went from 0.2 s to 14 s on 8 vCPUs
/// when idle CPUs took any waiting thread). Linux's cache-hot test
/// (`sched_migration_cost`, 0.5 ms) has the same purpose.
const TAKE_AFTER_NANOSECONDS: u64 = machine::timer::TICK_NANOSECONDS / 4;

/// For idle CPU `here`: the oldest balanced thread allowed here that has
/// waited [`TAKE_AFTER_NANOSECONDS`] on the ReadyQ of the busiest CPU
/// (`placement::choose_victim`), rehomed here; None when none has. A
/// thread taken while its old CPU still switches away from it is safe:
/// `switch_to` claims a context only once that CPU has left it.
/// It looks at most once per [`TAKE_AFTER_NANOSECONDS`] (every interrupt
/// wakes an idle CPU, and each look reads every CPU).
fn take_waiting_thread(here: usize, this: &CpuScheduler) -> Option<Arc<Thread>> {
    let now = machine::timer::uptime_nanoseconds();
    // Relaxed: only this CPU, with interrupts off, touches it.
    if now.saturating_sub(this.last_take_look.load(Ordering::Relaxed)) < TAKE_AFTER_NANOSECONDS {
        return None;
    }
    this.last_take_look.store(now, Ordering::Relaxed);
    // Relaxed: set once at boot, before this CPU schedules.
    let domain = CpuMask::from_bits(this.domain.load(Ordering::Relaxed));
    let victim = choose_victim(here, percpu::online_count(), |cpu| Busy {
        running: domain.allows(cpu) && !CPUS[cpu].idle.is_set(),
        waiting: CPUS[cpu].ready_seen.load(Ordering::Relaxed),
    })?;
    let movable = |thread: &Arc<Thread>| thread.is_balanced() && thread.allowed().allows(here) && now.saturating_sub(thread.queued_at()) >= TAKE_AFTER_NANOSECONDS;
    let taken = {
        let mut queues = CPUS[victim].queues.lock();
        let taken = queues.take_ready_where(movable);
        note_lengths(&CPUS[victim], &queues);
        taken
    }?;
    taken.set_home(here, false);
    CPUS[here].threads_taken.fetch_add(1, Ordering::Relaxed);
    Some(taken)
}

/// Makes CPU `cpu` take waiting threads, when idle, only from the CPUs
/// of `domain` (its CPU group's: a group's kernel schedules its own CPUs).
/// Set at boot, before the CPU schedules; threads stay where their own
/// affinity allows regardless.
pub fn set_domain(cpu: usize, domain: CpuMask) {
    if let Some(scheduler) = CPUS.get(cpu) {
        // Relaxed: published to the CPU by its start-up (it reads it after).
        scheduler.domain.store(domain.bits(), Ordering::Relaxed);
    }
}

/// Publishes `queues`' lengths (its lock held) for lock-free readers.
fn note_lengths(scheduler: &CpuScheduler, queues: &CpuQueues<Arc<Thread>>) {
    // Relaxed: snapshots for placement and balancing hints.
    scheduler.ready_seen.store(queues.ready_len(), Ordering::Relaxed);
    scheduler.pending_seen.store(queues.pending_len(), Ordering::Relaxed);
}

/// Threads idle CPU `cpu` took from busy ones so far.
pub fn threads_taken(cpu: usize) -> u64 {
    CPUS.get(cpu).map_or(0, |scheduler| scheduler.threads_taken.load(Ordering::Relaxed))
}

/// Wake IPIs CPU `cpu` has taken so far.
pub fn wake_ipis_taken(cpu: usize) -> u64 {
    CPUS.get(cpu).map_or(0, |scheduler| scheduler.wake_ipis_taken.load(Ordering::Relaxed))
}

/// Context switches made on CPU `cpu` so far.
pub fn switch_count(cpu: usize) -> u64 {
    CPUS.get(cpu).map_or(0, |scheduler| scheduler.switches.load(Ordering::Relaxed))
}
