//! Processes as the capability layer sees them: a capability space, a user
//! address space and the container their memory is charged to. A registry
//! finds a process by its space id, which is what a process capability's
//! handle and a mapping's use site name.
//!
//! This is the minimum the native calls need; the user-space layer grows
//! it into full processes (threads, files, signals). Must never destroy a
//! process's address space while a CPU may still run it (the caller
//! switches every CPU that ran it to the kernel tables first).

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use alloc::vec::Vec;

use caps::{ObjectKind, Placement, Rights, Slot, SpaceId};
use containers::ContainerId;
use spinlock::kernel::KernelTicketLock;
use vmem::VmError;

use super::{caps, effects, ADDRESS_SPACE_LEVEL, PROCESS_TABLE_LEVEL};
use crate::address_spaces::{carry_out, destroy_space, new_space, KernelSpace};
use linux_abi::Errno;

/// Slots in a process's capability space. Slots are also file-descriptor
/// numbers (a file descriptor is a file or pipe capability).
pub const SLOT_LIMIT: Slot = 4096;
/// The slot of a process's capability to itself: the last one, so that
/// file descriptors start at 0 as Linux programs expect.
pub const SELF_SLOT: Slot = SLOT_LIMIT - 1;

/// A process: its capability space, address space and container.
pub struct NativeProcess {
    space: SpaceId,
    container: ContainerId,
    /// `None` once the process is destroyed.
    memory: KernelTicketLock<Option<KernelSpace>>,
    /// Advances (under `memory`'s lock) whenever `memory` is replaced or
    /// taken, so that an [`EntryCache`] made before knows it is stale
    /// (`sync::Generation`: the protocol and its loom model).
    memory_generation: sync::Generation,
    /// The root of `memory`'s tables (0 once destroyed), for user copies
    /// through this CPU's translation without the lock
    /// (`machine::frame_access::read_user_on_root`, which checks that CR3
    /// holds it). Relaxed: a stale value only sends a copy to the walk.
    root: AtomicU64,
}

/// What a thread remembers of its last entry to user mode: on the same
/// CPU, with the same address space, the next entry needs neither the
/// space's lock nor its CPU set (a space's CPU set only grows), only the
/// tables — which the machine layer checks at every load anyway, so a
/// stale entry here can never load a root its space gave up.
/// Keyed by the CPU.
#[derive(Default)]
pub struct EntryCache(sync::GenerationCache<crate::address_spaces::UserTables>);

static REGISTRY: KernelTicketLock<Vec<Arc<NativeProcess>>> = KernelTicketLock::new(PROCESS_TABLE_LEVEL, Vec::new());

impl NativeProcess {
    /// A new process charged to `container`, holding a capability to itself
    /// (all rights) in slot [`SELF_SLOT`].
    pub fn create(container: ContainerId) -> Result<Arc<Self>, Errno> {
        let memory = new_space(container).map_err(|error: VmError| Errno::from(error))?;
        Self::create_with(container, memory)
    }

    /// A new process around an address space already built (a fork's copy).
    pub fn create_with(container: ContainerId, memory: KernelSpace) -> Result<Arc<Self>, Errno> {
        let space = caps().with(|database| -> Result<SpaceId, caps::CapError> {
            let space = database.create_space(SLOT_LIMIT)?;
            let made = database.create_object(space, ObjectKind::Process, space.to_bits(), 0, Rights::ALL, Placement::At(SELF_SLOT));
            if let Err(error) = made {
                let _ = database.destroy_space_step(space, &mut caps::RemovedBatch::new());
                return Err(error);
            }
            Ok(space)
        });
        let space = match space {
            Ok(space) => space,
            Err(error) => {
                carry_out(memory.destroy());
                return Err(Errno::from(error));
            }
        };
        let root = AtomicU64::new(memory.memory().root());
        let process = Arc::new(Self { space, container, memory: KernelTicketLock::new(ADDRESS_SPACE_LEVEL, Some(memory)), memory_generation: sync::Generation::new(), root });
        let mut registry = REGISTRY.lock();
        if registry.try_reserve(1).is_err() {
            drop(registry);
            process.destroy();
            return Err(Errno::ENOMEM);
        }
        registry.push(process.clone());
        Ok(process)
    }

    /// The process's capability space.
    pub fn space(&self) -> SpaceId {
        self.space
    }

    /// The container its memory is charged to.
    pub fn container(&self) -> ContainerId {
        self.container
    }

    /// Runs `operation` on the process's address space under its lock
    /// (ESRCH once the process is destroyed). Frames an earlier change let
    /// go are freed first if its flush is done (`vmem`'s limbo).
    pub fn with_memory<R>(&self, operation: impl FnOnce(&mut KernelSpace) -> R) -> Result<R, Errno> {
        self.memory.lock().as_mut().map(|memory| {
            memory.settle();
            operation(memory)
        }).ok_or(Errno::ESRCH)
    }

    /// Carries out `flush`, which a change of this process's memory
    /// handed out, then frees the frames that change let go.
    pub fn carry_out(&self, flush: vmem::TlbFlush) {
        carry_out(flush);
        let _ = self.with_memory(KernelSpace::settle);
    }

    /// Marks the process's space as run on this CPU and returns its tables
    /// (`Err(ESRCH)` once the process is destroyed).
    pub fn prepare_to_enter(&self) -> Result<crate::address_spaces::UserTables, Errno> {
        self.with_memory(crate::address_spaces::prepare_to_enter)
    }

    /// Runs `context` in the process's address space until it leaves user
    /// mode (`Err(ESRCH)` once the process is destroyed), unless `unless`
    /// holds with interrupts off (`UserExit::Kicked`). Interrupts stay
    /// off from recording this CPU in the space's CPU set until its tables
    /// are loaded: a thread moved to another CPU in between (a preemption,
    /// an idle CPU taking it) would run the space on a CPU its TLB
    /// shootdowns and its destruction never reach — seen as "frame kept:
    /// the machine still records a use of it" once threads moved.
    ///
    /// `cache` is the calling thread's: on the CPU and with the address
    /// space of its last entry, the lock is skipped (about 50 instructions
    /// of every system call).
    #[inline(always)]
    pub fn run_user(&self, cache: &mut EntryCache, context: &mut machine::user::UserContext, unless: impl Fn() -> bool) -> Result<machine::user::UserExit, Errno> {
        let off = machine::cpu::InterruptsOff::new();
        let cpu = machine::percpu::current_index() as u64;
        cache.0.with(cpu, &self.memory_generation, || self.prepare_to_enter(), |tables| crate::address_spaces::run_user_in(&off, tables, context, unless))
    }

    /// The root of the process's page tables (0 once destroyed).
    pub(crate) fn root(&self) -> u64 {
        self.root.load(Ordering::Relaxed)
    }

    /// The process's memory, for copies in and out (see [`super::UserMemory`]).
    pub fn user_memory(&self) -> super::UserMemory<'_> {
        super::UserMemory::of(self)
    }

    /// Puts `memory` in place of the process's address space (exec) and
    /// returns the old one, for the caller to destroy once no CPU runs it.
    pub fn replace_memory(&self, memory: KernelSpace) -> Option<KernelSpace> {
        let mut held = self.memory.lock();
        self.root.store(memory.memory().root(), Ordering::Relaxed);
        let old = held.replace(memory);
        self.memory_generation.advance();
        old
    }

    /// Gives `holder` a capability with `rights` to this process, derived
    /// from the process's own (as a parent introduces two processes it
    /// made). Returns the slot in `holder`.
    pub fn introduce_to(&self, holder: &NativeProcess, rights: Rights) -> Result<Slot, Errno> {
        let placement = Placement::LowestFrom(0);
        caps()
            .with(|database| database.grant(self.space, SELF_SLOT, holder.space, rights, placement))
            .map_err(Errno::from)
    }

    /// Ends the process: drops every capability it holds (undoing their
    /// effects) and frees its address space. No CPU may be running it.
    pub fn destroy(&self) {
        REGISTRY.lock().retain(|process| process.space != self.space);
        if let Err(error) = caps().destroy_space(self.space, effects::undo) {
            machine::println!("lamina: warning: destroying capability space {:?}: {error:?}", self.space);
        }
        let memory = {
            let mut held = self.memory.lock();
            self.root.store(0, Ordering::Relaxed);
            let taken = held.take();
            self.memory_generation.advance();
            taken
        };
        if let Some(memory) = memory {
            destroy_space(memory);
        }
    }
}

/// The process whose capability space is `space`, if it still exists.
pub fn find(space: SpaceId) -> Option<Arc<NativeProcess>> {
    REGISTRY.lock().iter().find(|process| process.space == space).cloned()
}
