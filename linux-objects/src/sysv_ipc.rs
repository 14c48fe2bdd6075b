//! System V IPC objects of the running kernel: shared-memory segments
//! (each a memory object, `kernel_objects::capabilities::memory_objects`,
//! mapped shared into every process that attaches it), semaphore sets and
//! message queues, in three registries (`linux_abi::sysv_ipc`) under one
//! lock. Waiting callers (`semop`, `msgsnd` on a full queue, `msgrcv` on
//! an empty one) sleep in steps of at most 10 ms and look again, so no
//! wake-up list is needed; a removed object ends their wait with EIDRM.
//!
//! A process's attachments and semaphore undo adjustments live in its
//! state (`ProcessState::sysv`): fork copies attachments (not undo),
//! execve and exit detach everything and exit applies the undo.
//!
//! **Lock order**: the IPC lock ([`IPC_LEVEL`]) is taken with no process
//! state lock held and held around the memory objects' lock (5); nothing
//! maps into an address space while holding it.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use linux_abi::sysv_ipc::{Registry, MSGMNB};
use spinlock::kernel::{IrqOff, KernelTicketLock, PerCpuLevels};
use spinlock::{Level, SpinLockGuard, TicketLock};

use kernel_objects::capabilities::memory_objects;

/// Above the memory objects' lock (5), below a process's state (10).
const IPC_LEVEL: Level = Level::new(6);

/// One shared-memory segment.
pub struct Segment {
    pub handle: u64,
    pub size: u64,
    pub mode: u32,
    pub attaches: u64,
    /// `IPC_RMID` came while attached: destroyed at the last detach.
    pub removed: bool,
    pub times: [u64; 3],
    pub creator: u32,
    pub last: u32,
}

/// One semaphore set.
pub struct SemaphoreSet {
    pub values: Vec<i32>,
    /// The pid of the last process to change each semaphore.
    pub last_pids: Vec<u32>,
    /// How many wait on each semaphore: (to grow, to reach zero).
    pub waiting: Vec<(u32, u32)>,
    pub mode: u32,
    pub operated: u64,
    pub changed: u64,
}

/// One message: its type and text.
pub struct Message {
    pub kind: i64,
    pub text: Vec<u8>,
}

/// One message queue.
pub struct MessageQueue {
    pub messages: VecDeque<Message>,
    pub bytes: u64,
    pub limit: u64,
    pub mode: u32,
    pub times: [u64; 3],
    pub pids: (u32, u32),
}

impl MessageQueue {
    pub fn new(mode: u32) -> Self {
        Self { messages: VecDeque::new(), bytes: 0, limit: MSGMNB, mode, times: [0, 0, now_seconds()], pids: (0, 0) }
    }
}

/// Every System V IPC object.
#[derive(Default)]
pub struct Objects {
    pub segments: Registry<Segment>,
    pub semaphores: Registry<SemaphoreSet>,
    pub queues: Registry<MessageQueue>,
}

static OBJECTS: KernelTicketLock<Objects> = KernelTicketLock::new(IPC_LEVEL, Objects { segments: Registry::new(), semaphores: Registry::new(), queues: Registry::new() });

/// The objects, locked.
pub fn objects() -> SpinLockGuard<'static, Objects, TicketLock, IrqOff, PerCpuLevels> {
    OBJECTS.lock()
}

/// Seconds since the epoch (the records' times).
pub fn now_seconds() -> u64 {
    crate::clock::realtime_nanoseconds() / 1_000_000_000
}

/// A process's System V state.
#[derive(Clone, Default)]
pub struct ProcessIpc {
    /// Attached segments: (address, identifier, length).
    pub attachments: Vec<(u64, i32, u64)>,
    /// `SEM_UNDO` adjustments: (set, semaphore, adjustment).
    pub undo: Vec<(i32, u16, i32)>,
}

impl ProcessIpc {
    /// What a forked child starts with: the attachments (each counted
    /// again), no undo adjustments.
    pub fn for_child(&self) -> ProcessIpc {
        let mut objects = objects();
        for (_, id, _) in &self.attachments {
            if let Ok(segment) = objects.segments.find(*id) {
                segment.attaches += 1;
            }
        }
        ProcessIpc { attachments: self.attachments.clone(), undo: Vec::new() }
    }
}

/// Counts one attachment of segment `id` gone (the caller unmapped it),
/// destroying a removed segment at its last one.
pub fn detached(id: i32, pid: u32) {
    let mut objects = objects();
    let destroy = match objects.segments.find(id) {
        Ok(segment) => {
            segment.attaches = segment.attaches.saturating_sub(1);
            segment.times[1] = now_seconds();
            segment.last = pid;
            segment.removed && segment.attaches == 0
        }
        Err(_) => false,
    };
    if destroy {
        if let Some(segment) = objects.segments.remove(id) {
            memory_objects::release(segment.handle);
        }
    }
}

/// A process leaves its System V state (execve, exit): the attachments
/// are counted gone (the memory itself goes with the address space) and,
/// at exit, the undo adjustments are applied (clamped to 0..=SEMVMX).
pub fn leave(ipc: ProcessIpc, pid: u32, apply_undo: bool) {
    for (_, id, _) in &ipc.attachments {
        detached(*id, pid);
    }
    if apply_undo {
        let mut objects = objects();
        for (id, number, adjustment) in ipc.undo {
            if let Ok(set) = objects.semaphores.find(id) {
                if let Some(value) = set.values.get_mut(usize::from(number)) {
                    *value = (*value + adjustment).clamp(0, linux_abi::sysv_ipc::SEMVMX);
                    set.last_pids[usize::from(number)] = pid;
                }
            }
        }
    }
}
