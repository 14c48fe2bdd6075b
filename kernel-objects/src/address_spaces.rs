//! User address spaces in the kernel: the `vmem` layer over the machine
//! layer's frame access, with every frame charged to a container, one
//! owner table for the machine, and TLB flushes carried out by shootdown.
//!
//! Must never hand a `vmem` space a frame that is not charged to its
//! container, nor destroy a space while a CPU still has its root loaded
//! (callers switch to the kernel tables first).


use alloc::boxed::Box;

use containers::ContainerId;
use frames::{FrameNumber, PhysicalAddress};
use machine::set_once::SetOnce;
use machine::tlb::{self, CpuSet, Flush};
use vmem::{AddressSpace, FrameMemory, FrameSource, OwnerTable, TlbFlush, VmError};

use crate::kernel_containers::{allocate_charged_frame, free_charged_frame};

/// A space's page tables and pages, reached through the direct map with
/// the key `untyped_memory` keeps. Made only here, for spaces whose every
/// frame comes from their container's frame source: the space passes only
/// its own frames, which keeps the key's promise.
#[derive(Clone, Copy)]
pub struct DirectMapFrames {
    key: &'static machine::frame_access::DirectMap,
}

impl FrameMemory for DirectMapFrames {
    fn read_word(&self, frame: u64, index: usize) -> u64 {
        // The space only passes its own frames and indexes below 512; a
        // refusal would be a vmem bug and reads as an empty entry.
        self.key.read_word(frame, index).unwrap_or(0)
    }

    fn write_word(&self, frame: u64, index: usize, value: u64) {
        self.key.write_word(frame, index, value);
    }

    fn zero(&self, frame: u64) {
        self.key.zero(frame);
    }

    fn copy(&self, from: u64, to: u64) {
        self.key.copy(from, to);
    }
}

/// Frames charged to one container: the frame source of the spaces this
/// file makes. Made only here (its `free` takes a raw frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerFrames(ContainerId);

impl FrameSource for ContainerFrames {
    type Fresh = crate::untyped_memory::OwnedFrame;
    type Shared = crate::untyped_memory::SharedFrame;

    fn allocate(&self) -> Option<u64> {
        allocate_charged_frame(self.0).ok().map(|frame| frame.start_address().0)
    }

    fn free(&self, frame: u64) {
        if let Err(error) = free_charged_frame(self.0, FrameNumber::containing(PhysicalAddress(frame))) {
            machine::println!("lamina: warning: freeing user frame {frame:#x} refused: {error}");
        }
    }
}

/// A user address space as the kernel keeps it.
pub type KernelSpace = AddressSpace<'static, DirectMapFrames, ContainerFrames>;

static OWNERS: SetOnce<OwnerTable> = SetOnce::new();

/// Builds the owner table for frames below `memory_end` (once, at boot).
pub fn init(memory_end: u64) -> bool {
    let Some(table) = OwnerTable::new(0, (memory_end / vmem::PAGE_SIZE) as usize) else { return false };
    OWNERS.set(Box::leak(Box::new(table))).is_ok()
}

/// The machine's frame owner table (set at boot).
pub(crate) fn owners() -> Option<&'static OwnerTable> {
    OWNERS.get()
}

/// An empty user address space whose frames are charged to `container`.
pub fn new_space(container: ContainerId) -> Result<KernelSpace, VmError> {
    let owners = OWNERS.get().ok_or(VmError::OutOfMemory)?;
    let key = crate::untyped_memory::key().ok_or(VmError::OutOfMemory)?;
    AddressSpace::new(DirectMapFrames { key }, ContainerFrames(container), owners, &machine::paging::kernel_root_entries())
}

/// A copy of `parent` for a child process whose frames are charged to
/// `container`: private writable pages become copy-on-write in both (the
/// flush is for the parent's CPUs).
pub fn fork_space(parent: &mut KernelSpace, container: ContainerId) -> Result<(KernelSpace, TlbFlush), VmError> {
    parent.fork(ContainerFrames(container))
}

/// Destroys `space`: first every CPU that ran it and may still have its
/// root in CR3 switches to the kernel's tables, then its tables and frames
/// are freed (no spinlock may be held).
pub fn destroy_space(space: KernelSpace) {
    let cpus = CpuSet::from_words(space.ran_on().0);
    tlb::shootdown(&cpus, Flush::LeaveRoot(space.root()));
    carry_out(space.destroy());
}

/// Carries out `flush` on the CPUs it names (no spinlock may be held).
pub fn carry_out(flush: TlbFlush) {
    if flush.is_empty() || flush.cpus.is_empty() {
        return;
    }
    let what = if flush.everything { Flush::Everything } else { Flush::Pages { start: flush.start, count: flush.pages } };
    tlb::shootdown(&CpuSet::from_words(flush.cpus.0), what);
}

/// The tables of one user address space, ready to be entered on this CPU:
/// made only from a space (so no one names tables by address), and
/// recorded in the space's CPU set, so its TLB shootdowns reach this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserTables {
    root: u64,
}

/// Marks `space` as run on this CPU and returns its tables.
pub fn prepare_to_enter(space: &mut KernelSpace) -> UserTables {
    space.activate_on(machine::percpu::current_index());
    UserTables { root: space.root() }
}

/// Loads `tables` on this CPU (false: refused, the kernel's stay loaded).
pub fn switch_to(tables: UserTables) -> bool {
    crate::untyped_memory::key().is_some_and(|key| machine::paging::switch_address_space(tables.root, key))
}

/// Loads `tables` and runs `context` in them until it leaves user mode
/// (see `machine::user::run_user_in`).
pub fn run_user_in(tables: UserTables, context: &mut machine::user::UserContext) -> machine::user::UserExit {
    match crate::untyped_memory::key() {
        Some(key) => machine::user::run_user_in(tables.root, key, context),
        None => machine::user::UserExit::Exception { vector: machine::user::vectors::GENERAL_PROTECTION, error_code: 0, address: context.registers.rip },
    }
}
