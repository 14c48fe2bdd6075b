//! POSIX message queues: the names (`/name`, a namespace of its own as
//! Linux's mqueue file system is) and the queues behind `mq_open`'s
//! descriptors. A queue's messages are `linux_abi::message_queue`'s; this
//! file adds waiting (for room, for a message, until a deadline or a
//! signal) and `mq_notify`'s one registration.
//!
//! A queue lives while its name or a descriptor holds it. Waiters put
//! their thread in the queue's list before they sleep; every change
//! unparks the list, and each waiter checks again (no lost wake-up: the
//! check and the registration happen under the queue's lock).

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::message_queue::{Messages, QueueRefusal, QueueShape};
use linux_abi::signal_frame::SigInfo;
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use crate::process::{self, Pid};

/// Locks of queues and of the name table (none is held while taking another).
const QUEUE_LEVEL: Level = Level::new(8);

/// `si_code` of a message-queue notification (`SI_MESGQ`).
const SI_MESGQ: i32 = -3;

/// Who `mq_notify` registered and how to tell it.
struct Registration {
    pid: Pid,
    signal: Option<(u32, u64)>,
}

struct QueueState {
    messages: Messages,
    waiting: Vec<Arc<sched::Thread>>,
    receivers_waiting: u32,
    registration: Option<Registration>,
}

/// One queue.
pub struct MessageQueue {
    state: KernelTicketLock<QueueState>,
}

static NAMES: KernelTicketLock<Vec<(Vec<u8>, Arc<MessageQueue>)>> = KernelTicketLock::new(QUEUE_LEVEL, Vec::new());

/// Most queues that may have names at once (Linux's `queues_max`, 256).
const MAX_NAMED: usize = 256;

/// `mq_open`'s lookup: the queue named `name`, made with `shape` when it
/// is missing and `create` (EEXIST with `exclusive` when it is there,
/// ENOENT when it is missing and not `create`).
pub fn open(name: &[u8], create: bool, exclusive: bool, shape: QueueShape) -> Result<Arc<MessageQueue>, Errno> {
    let mut names = NAMES.lock();
    if let Some((_, queue)) = names.iter().find(|(named, _)| named == name) {
        return if create && exclusive { Err(Errno::EEXIST) } else { Ok(queue.clone()) };
    }
    if !create {
        return Err(Errno::ENOENT);
    }
    if names.len() >= MAX_NAMED {
        return Err(Errno::ENOSPC);
    }
    let mut owned = Vec::new();
    owned.try_reserve_exact(name.len()).map_err(|_| Errno::ENOMEM)?;
    owned.extend_from_slice(name);
    names.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    let state = QueueState { messages: Messages::new(shape), waiting: Vec::new(), receivers_waiting: 0, registration: None };
    let queue = Arc::new(MessageQueue { state: KernelTicketLock::new(QUEUE_LEVEL, state) });
    names.push((owned, queue.clone()));
    Ok(queue)
}

/// `mq_unlink`: the name goes; the queue lives on while open.
pub fn unlink(name: &[u8]) -> Result<(), Errno> {
    let mut names = NAMES.lock();
    let index = names.iter().position(|(named, _)| named == name).ok_or(Errno::ENOENT)?;
    names.remove(index);
    Ok(())
}

/// How a wait may end.
pub struct Waiting<'a> {
    pub nonblocking: bool,
    /// When waiting ends (`Limit::NEVER`: it does not).
    pub limit: crate::clock::Limit,
    pub interrupted: &'a dyn Fn() -> bool,
}

impl MessageQueue {
    /// `mq_timedsend` by process `sender`.
    pub fn send(&self, message: &[u8], priority: u32, sender: Pid, waiting: &Waiting<'_>) -> Result<(), Errno> {
        let notification = loop {
            self.wait_until(waiting, false, |state| state.messages.check_send(message.len(), priority))?;
            let mut state = self.state.lock();
            let was_empty = state.messages.is_empty();
            match state.messages.send(message, priority) {
                // Linux tells the registered process only when the message
                // lands in an empty queue no receiver is waiting on.
                Ok(()) => break if was_empty && state.receivers_waiting == 0 { state.registration.take() } else { None },
                // Another sender took the room first: wait again.
                Err(QueueRefusal::WouldBlock) => continue,
                Err(other) => return Err(errno_of(other)),
            }
        };
        self.wake_all();
        if let Some(Registration { pid, signal: Some((signal, value)) }) = notification {
            if let Some(target) = process::find(pid) {
                let info = SigInfo { signo: signal, code: SI_MESGQ, words: [u64::from(sender), value, 0] };
                crate::signal_sending::send_signal_with(&target, signal, info);
            }
        }
        Ok(())
    }

    /// `mq_timedreceive` into a buffer of `capacity` bytes.
    pub fn receive(&self, capacity: usize, waiting: &Waiting<'_>) -> Result<(Vec<u8>, u32), Errno> {
        let taken = loop {
            self.wait_until(waiting, true, |state| state.messages.check_receive(capacity))?;
            match self.state.lock().messages.receive(capacity) {
                Ok(taken) => break taken,
                // Another receiver took it first: wait again.
                Err(QueueRefusal::WouldBlock) => continue,
                Err(other) => return Err(errno_of(other)),
            }
        };
        self.wake_all();
        Ok(taken)
    }

    /// Waits until `check` passes; ERESTARTSYS on a signal, ETIMEDOUT at
    /// the deadline, EAGAIN when not to wait. Between this and the caller's
    /// next lock another thread may take the room or the message: the
    /// caller then waits again.
    fn wait_until(&self, waiting: &Waiting<'_>, receiving: bool, check: impl Fn(&QueueState) -> Result<(), QueueRefusal>) -> Result<(), Errno> {
        let me = sched::current();
        loop {
            {
                let mut state = self.state.lock();
                match check(&state) {
                    Ok(()) => return Ok(()),
                    Err(QueueRefusal::WouldBlock) => {}
                    Err(other) => return Err(errno_of(other)),
                }
                if waiting.nonblocking {
                    return Err(Errno::EAGAIN);
                }
                if (waiting.interrupted)() {
                    return Err(linux_abi::restart::ERESTARTSYS);
                }
                if waiting.limit.passed() {
                    return Err(Errno::ETIMEDOUT);
                }
                state.waiting.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                state.waiting.push(me.clone());
                if receiving {
                    state.receivers_waiting += 1;
                }
            }
            let ready = || !matches!(check(&self.state.lock()), Err(QueueRefusal::WouldBlock)) || (waiting.interrupted)();
            crate::clock::sleep_until(waiting.limit, ready);
            let mut state = self.state.lock();
            if let Some(index) = state.waiting.iter().position(|thread| Arc::ptr_eq(thread, &me)) {
                state.waiting.swap_remove(index);
            }
            if receiving {
                state.receivers_waiting -= 1;
            }
        }
    }

    fn wake_all(&self) {
        let waiting = core::mem::take(&mut self.state.lock().waiting);
        for thread in &waiting {
            sched::unpark(thread);
        }
    }

    /// Its shape and how many messages it holds.
    pub fn attributes(&self) -> (QueueShape, u64) {
        let state = self.state.lock();
        (state.messages.shape(), state.messages.len())
    }

    /// (a receive would not wait, a send would not wait).
    pub fn readiness(&self) -> (bool, bool) {
        let state = self.state.lock();
        (!state.messages.is_empty(), !state.messages.is_full())
    }

    /// `mq_notify`: registers process `pid` (`signal` `None`: told by
    /// nothing, `SIGEV_NONE`), or with `register` false removes its
    /// registration. EBUSY when another process is registered.
    pub fn notify(&self, pid: Pid, register: bool, signal: Option<(u32, u64)>) -> Result<(), Errno> {
        let mut state = self.state.lock();
        // A registration of a process that has ended holds nothing.
        if state.registration.as_ref().is_some_and(|other| process::find(other.pid).is_none_or(|found| found.state().exit_status.is_some())) {
            state.registration = None;
        }
        match (&state.registration, register) {
            (Some(other), true) if other.pid != pid => Err(Errno::EBUSY),
            (Some(other), false) if other.pid != pid => Ok(()),
            (_, true) => {
                state.registration = Some(Registration { pid, signal });
                Ok(())
            }
            (_, false) => {
                state.registration = None;
                Ok(())
            }
        }
    }
}

fn errno_of(refusal: QueueRefusal) -> Errno {
    match refusal {
        QueueRefusal::WouldBlock => Errno::EAGAIN,
        QueueRefusal::Size => Errno::EMSGSIZE,
        QueueRefusal::Priority => Errno::EINVAL,
        QueueRefusal::Memory => Errno::ENOMEM,
    }
}
