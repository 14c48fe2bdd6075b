//! User address spaces in the kernel: the `vmem` layer over the machine
//! layer's frame access, with every frame charged to a container, one
//! owner table for the machine, and TLB flushes carried out by shootdown.
//!
//! Must never hand a `vmem` space a frame that is not charged to its
//! container, nor destroy a space while a CPU still has its root loaded
//! (callers switch to the kernel tables first).


use alloc::boxed::Box;

use containers::ContainerId;
use machine::frame_access::{Frame, RootToken, SpaceTables};
use machine::set_once::SetOnce;
use machine::tlb::{self, CpuSet, Flush};
use vmem::{AddressSpace, FrameMemory, FrameSource, OwnerTable, TlbFlush, VmError};

use crate::kernel_containers::{allocate_charged_frame, free_charged_frame};

/// A space's page tables and pages: the machine's `SpaceTables`, which
/// checks every write and copy against its record of the frames.
pub struct SpaceMemory(SpaceTables);

impl FrameMemory for SpaceMemory {
    type Frame = Frame;

    fn install_root(&mut self, frame: Frame) -> Result<u64, Frame> {
        self.0.install_root(frame)
    }

    fn sibling(&self) -> Self {
        SpaceMemory(SpaceTables::new())
    }

    fn read_word(&self, table: u64, index: usize) -> u64 {
        self.0.read_entry(table, index)
    }

    fn read_words(&self, table: u64, first: usize, out: &mut [u64]) {
        self.0.read_entries(table, first, out);
    }

    fn write_word(&self, table: u64, index: usize, value: u64) -> bool {
        self.0.write_entry(table, index, value)
    }

    fn write_words(&self, table: u64, first: usize, values: &[u64]) -> usize {
        self.0.write_entries(table, first, values)
    }

    fn adopt(&self, frame: Frame) -> u64 {
        self.0.adopt(frame)
    }

    fn reclaim(&self, frame: u64) -> Option<Frame> {
        let taken = self.0.reclaim(frame);
        if taken.is_none() {
            machine::println!("lamina: warning: frame {frame:#x} kept: the machine still records a use of it");
        }
        taken
    }

    fn zero(&self, frame: u64) -> bool {
        self.0.zero(frame)
    }

    fn copy_page(&self, table: u64, index: usize, to: u64) -> bool {
        self.0.copy_page(table, index, to)
    }
}

impl SpaceMemory {
    /// Copies `bytes` to user memory at `address` (inside one page).
    pub(crate) fn write_user(&self, address: u64, bytes: &[u8]) -> bool {
        self.0.write_user(address, bytes)
    }

    /// Copies user memory at `address` (inside one page) into `buffer`.
    pub(crate) fn read_user(&self, address: u64, buffer: &mut [u8]) -> bool {
        self.0.read_user(address, buffer)
    }

    /// The root of the tables (0 before one is installed).
    pub(crate) fn root(&self) -> u64 {
        self.0.root()
    }

    /// Atomically updates the aligned user `u32` at `address`.
    pub(crate) fn update_user_u32(&self, address: u64, change: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
        self.0.update_user_u32(address, change)
    }
}

/// Frames charged to one container: the frame source of the spaces this
/// file makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerFrames(ContainerId);

impl FrameSource for ContainerFrames {
    type Frame = Frame;
    type Fresh = crate::untyped_memory::OwnedFrame;
    type Shared = crate::untyped_memory::SharedFrame;

    fn allocate(&self) -> Option<Frame> {
        allocate_charged_frame(self.0).ok()
    }

    fn free(&self, frame: Frame) {
        free_charged_frame(self.0, frame);
    }
}

/// A user address space as the kernel keeps it.
pub type KernelSpace = AddressSpace<'static, SpaceMemory, ContainerFrames>;

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
    AddressSpace::new(SpaceMemory(SpaceTables::new()), ContainerFrames(container), owners)
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
    tlb::shootdown_space(&CpuSet::from_words(flush.cpus.0), what, flush.root);
}

/// The tables of one user address space, ready to be entered on this CPU:
/// made only from a space (so no one names tables by address), and
/// recorded in the space's CPU set, so its TLB shootdowns reach this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserTables {
    token: RootToken,
}

/// Marks `space` as run on this CPU and returns its tables.
pub fn prepare_to_enter(space: &mut KernelSpace) -> UserTables {
    space.activate_on(machine::percpu::current_index());
    UserTables { token: space.memory().0.token() }
}

/// Loads `tables` on this CPU (false: refused, the kernel's stay loaded).
pub fn switch_to(tables: UserTables) -> bool {
    machine::paging::switch_address_space(tables.token)
}

/// Loads `tables` and runs `context` in them until it leaves user mode,
/// unless `unless` holds with interrupts off (see
/// `machine::user::run_user_in`).
#[inline]
pub fn run_user_in(off: &machine::cpu::InterruptsOff, tables: &UserTables, context: &mut machine::user::UserContext, unless: impl Fn() -> bool) -> machine::user::UserExit {
    machine::user::run_user_in(off, &tables.token, context, unless)
}

/// Runs `vcpu` on this CPU with `tables` (a guest-physical space made
/// ready by [`prepare_to_enter`]) as its nested page tables, until an
/// exit (`None`: the space is gone).
pub fn run_guest(vcpu: &mut machine::svm::Vcpu, tables: &UserTables) -> Option<machine::svm::VmExit> {
    vcpu.run(&tables.token)
}
