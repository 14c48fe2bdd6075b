//! The objects behind KVM's descriptors: a virtual machine (its
//! guest-physical memory as a `vmem` space, whose tables are the nested
//! page tables, and its memory slots) and its virtual CPUs (a
//! `machine::svm::Vcpu` each, and the two-page `kvm_run` area the VMM
//! maps). Everything is charged to the container of the process that
//! made the VM.
//!
//! Guest memory is the VMM's own: a nested page fault inside a slot makes
//! the VMM's page ready for a store (as the VMM's own store would) and
//! lends that frame to the guest space as a shared page, one more owner
//! of it, while the VMM's space is held, so the frame cannot be freed in
//! between. A guest page therefore outlives the VMM's mapping of it.
//!
//! Lock order: a VM's lock (level 4) is taken inside the VMM's address
//! space lock (level 5) and takes only the container and frame locks below
//! it; a vCPU's lock (level 4) is never held with the VM's. Must never
//! run a vCPU outside its VM's space, nor lend a guest a frame the VMM
//! does not map for storing.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::SpaceId;
use containers::ContainerId;
use kvm_abi::layouts::MemoryRegion;
use kvm_abi::memory_slots::{MemorySlots, SlotChange};
use linux_abi::Errno;
use machine::svm::Vcpu;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vmem::{Rights, VmError, PAGE_SIZE};

use crate::address_spaces::{self, KernelSpace, UserTables};
use crate::capabilities::NativeProcess;
use crate::kernel_containers::{allocate_charged_frame, free_charged_frame};
use crate::user_memory::PendingFlush;

const VM_LEVEL: Level = Level::new(4);

/// vCPU ids a VM may use (Linux x86's `KVM_MAX_VCPU_IDS`).
pub const MAX_VCPU_IDS: u32 = 4096;

struct MachineState {
    space: Option<KernelSpace>,
    slots: MemorySlots,
    vcpu_ids: Vec<u32>,
}

/// A virtual machine.
pub struct VirtualMachine {
    container: ContainerId,
    /// The capability space of the process that made it: its memory is
    /// the guest's, so only it may drive the VM (Linux: `kvm->mm`).
    owner: SpaceId,
    state: KernelTicketLock<MachineState>,
}

/// What a nested page fault came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestFault {
    /// The page is mapped now: run the guest again.
    Mapped,
    /// No slot holds the address (the guest reached for a device).
    NoSlot,
    /// The slot is read-only and the guest wrote.
    ReadOnly,
}

impl VirtualMachine {
    /// A VM with no memory and no vCPUs, charged to `container`, driven
    /// by the process whose capability space is `owner`.
    pub fn new(container: ContainerId, owner: SpaceId) -> Result<Arc<VirtualMachine>, Errno> {
        if !machine::svm::available() {
            return Err(Errno::ENODEV);
        }
        let space = address_spaces::new_space(container).map_err(|_| Errno::ENOMEM)?;
        let state = MachineState { space: Some(space), slots: MemorySlots::new(), vcpu_ids: Vec::new() };
        Ok(Arc::new(VirtualMachine { container, owner, state: KernelTicketLock::new(VM_LEVEL, state) }))
    }

    /// Whether the process with capability space `space` made this VM.
    /// Another (a forked child, or one handed the descriptor) gets EIO
    /// from its ioctls, as from Linux's: its memory is not the guest's.
    pub fn driven_by(&self, space: SpaceId) -> bool {
        self.owner == space
    }

    /// `KVM_SET_USER_MEMORY_REGION`: a deleted or moved slot's pages leave
    /// the guest's tables.
    pub fn set_memory_region(&self, region: MemoryRegion) -> Result<(), Errno> {
        let flush = {
            let mut state = self.state.lock();
            let change = state.slots.set(region)?;
            let gone = match change {
                SlotChange::Deleted(old) | SlotChange::Moved(old) => Some(old),
                SlotChange::Created | SlotChange::FlagsChanged | SlotChange::Unchanged => None,
            };
            match (gone, state.space.as_mut()) {
                (Some(old), Some(space)) => Some(space.unmap(old.guest_physical, old.size).map_err(|_| Errno::ENOMEM)?),
                _ => None,
            }
        };
        if let Some(flush) = flush {
            address_spaces::carry_out(flush);
        }
        Ok(())
    }

    /// Where the VMM has guest-physical `address` (`None`: no slot).
    pub fn user_address_of(&self, address: u64) -> Option<u64> {
        self.state.lock().slots.find(address).map(|(_, user_address)| user_address)
    }

    /// Records a new vCPU id: EEXIST if taken, EINVAL past the limit.
    fn add_vcpu_id(&self, id: u32) -> Result<(), Errno> {
        if id >= MAX_VCPU_IDS {
            return Err(Errno::EINVAL);
        }
        let mut state = self.state.lock();
        if state.vcpu_ids.contains(&id) {
            return Err(Errno::EEXIST);
        }
        state.vcpu_ids.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        state.vcpu_ids.push(id);
        Ok(())
    }

    fn remove_vcpu_id(&self, id: u32) {
        self.state.lock().vcpu_ids.retain(|&taken| taken != id);
    }

    /// The guest space's tables, recorded as used on this CPU.
    fn tables(&self) -> Result<UserTables, Errno> {
        let mut state = self.state.lock();
        state.space.as_mut().map(address_spaces::prepare_to_enter).ok_or(Errno::EIO)
    }

    /// Resolves a nested page fault at guest-physical `address` for the
    /// VMM `vmm`: the page of the slot holding it, lent to the guest.
    pub fn resolve(&self, vmm: &NativeProcess, address: u64, write: bool) -> Result<GuestFault, Errno> {
        let page = address & !(PAGE_SIZE - 1);
        let Some((slot, user_address)) = self.state.lock().slots.find(page) else { return Ok(GuestFault::NoSlot) };
        if write && !slot.writable() {
            return Ok(GuestFault::ReadOnly);
        }
        loop {
            let mut pending = PendingFlush::default();
            let lent = vmm.with_memory(|memory| -> Result<(), Errno> {
                let frame = crate::user_memory::writable_frame(memory, user_address, &mut pending)?;
                let mut state = self.state.lock();
                // The slot may have changed while the lock was free.
                if state.slots.find(page) != Some((slot, user_address)) {
                    return Ok(());
                }
                let rights = if slot.writable() { Rights::GUEST_MEMORY } else { Rights::READ_EXECUTE };
                match state.space.as_mut().ok_or(Errno::EIO)?.map_lent(page, frame, rights) {
                    Ok(()) | Err(VmError::AlreadyMapped) => Ok(()),
                    Err(_) => Err(Errno::ENOMEM),
                }
            })?;
            let again = pending.carry_out();
            match lent {
                Err(Errno::EAGAIN) if again => continue,
                Err(error) => return Err(error),
                Ok(()) => return Ok(GuestFault::Mapped),
            }
        }
    }
}

impl Drop for VirtualMachine {
    fn drop(&mut self) {
        // Taken first: destroying waits for other CPUs, never under a lock.
        let space = self.state.lock().space.take();
        if let Some(space) = space {
            address_spaces::destroy_space(space);
        }
    }
}

/// An instruction the VMM completes: its data arrives in `kvm_run`
/// before the next run, which finishes the instruction first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// An `in` of `size` bytes.
    Input { size: u8, next_rip: u64 },
    /// A load from a device.
    MmioLoad { access: kvm_abi::mmio_decode::MmioAccess, next_rip: u64 },
}

struct ProcessorState {
    /// Boxed: a run takes it out and puts it back, a pointer's move
    /// (the vCPU's FPU area alone is 1 KiB).
    vcpu: Option<Box<Vcpu>>,
    pending: Option<Completion>,
    /// A vector `KVM_INTERRUPT` queued, not yet delivered.
    interrupt: Option<u8>,
    /// The guest's CPUID table (`KVM_SET_CPUID2`); the host's, filtered,
    /// until the VMM gives one.
    cpuid: Option<Vec<kvm_abi::cpuid::CpuidEntry>>,
}

/// A virtual CPU of a VM.
pub struct VirtualCpu {
    /// Its VM.
    pub vm: Arc<VirtualMachine>,
    /// Its id in the VM.
    pub id: u32,
    /// The memory object the VMM maps: `kvm_run`, then the I/O data page.
    pub run_area: u64,
    state: KernelTicketLock<ProcessorState>,
}

impl VirtualCpu {
    /// vCPU `id` of `vm` (EEXIST if the VM has it already).
    pub fn new(vm: Arc<VirtualMachine>, id: u32) -> Result<Arc<VirtualCpu>, Errno> {
        vm.add_vcpu_id(id)?;
        let made = Self::make(&vm, id);
        if made.is_err() {
            vm.remove_vcpu_id(id);
        }
        made.map(|(vcpu, run_area)| Arc::new(VirtualCpu { vm, id, run_area, state: KernelTicketLock::new(VM_LEVEL, ProcessorState { vcpu: Some(vcpu), pending: None, interrupt: None, cpuid: None }) }))
    }

    fn make(vm: &VirtualMachine, _id: u32) -> Result<(Box<Vcpu>, u64), Errno> {
        let pages = (kvm_abi::layouts::VCPU_MMAP_BYTES as u64).div_ceil(PAGE_SIZE);
        let run_area = crate::capabilities::memory_objects::create(vm.container, pages)?;
        let frame = match allocate_charged_frame(vm.container) {
            Ok(frame) => frame,
            Err(_) => {
                crate::capabilities::memory_objects::release(run_area);
                return Err(Errno::ENOMEM);
            }
        };
        match Vcpu::new(frame) {
            Ok(vcpu) => Ok((Box::new(vcpu), run_area)),
            Err(frame) => {
                free_charged_frame(vm.container, frame);
                crate::capabilities::memory_objects::release(run_area);
                Err(Errno::ENODEV)
            }
        }
    }

    /// Runs `operation` on the vCPU (EBUSY while a run has it).
    pub fn with<R>(&self, operation: impl FnOnce(&mut Vcpu) -> R) -> Result<R, Errno> {
        self.state.lock().vcpu.as_deref_mut().map(operation).ok_or(Errno::EBUSY)
    }

    /// Runs `operation` on the instruction the VMM completes, which stays
    /// reachable while a run has the vCPU.
    pub fn with_pending<R>(&self, operation: impl FnOnce(&mut Option<Completion>) -> R) -> R {
        operation(&mut self.state.lock().pending)
    }

    /// Queues external interrupt `vector` (`KVM_INTERRUPT`), replacing one
    /// not yet delivered, as Linux does without an in-kernel irqchip.
    pub fn queue_interrupt(&self, vector: u8) {
        self.state.lock().interrupt = Some(vector);
    }

    /// Whether a queued interrupt waits to be delivered.
    pub fn has_queued_interrupt(&self) -> bool {
        self.state.lock().interrupt.is_some()
    }

    /// Before an entry, in one look: the queued vector to deliver now (taken
    /// when the guest is `interruptible`), and whether one still waits.
    pub fn interrupt_to_deliver(&self, interruptible: bool) -> (Option<u8>, bool) {
        let mut state = self.state.lock();
        match state.interrupt {
            Some(_) if interruptible => (state.interrupt.take(), false),
            Some(_) => (None, true),
            None => (None, false),
        }
    }

    /// Gives the vCPU its CPUID table.
    pub fn set_cpuid(&self, table: Vec<kvm_abi::cpuid::CpuidEntry>) {
        let old = self.state.lock().cpuid.replace(table);
        drop(old);
    }

    /// The guest's CPUID answer from its table (`None`: no table given).
    pub fn cpuid_answer(&self, function: u32, index: u32) -> Option<[u32; 4]> {
        self.state.lock().cpuid.as_deref().map(|table| kvm_abi::cpuid::answer(table, function, index))
    }

    /// Takes the vCPU out for a run (EBUSY if another run has it); give it
    /// back with [`VirtualCpu::put_back`].
    pub fn take(&self) -> Result<Box<Vcpu>, Errno> {
        self.state.lock().vcpu.take().ok_or(Errno::EBUSY)
    }

    /// Gives back what [`VirtualCpu::take`] took.
    pub fn put_back(&self, vcpu: Box<Vcpu>) {
        self.state.lock().vcpu = Some(vcpu);
    }

    /// Runs the taken `vcpu` on this CPU until an exit. Recording this
    /// CPU in the guest space's CPU set and entering the guest are one step
    /// with interrupts off: a thread moved in between would run the guest
    /// on a CPU the space's TLB shootdowns never ask.
    pub fn run(&self, vcpu: &mut Vcpu) -> Result<machine::svm::VmExit, Errno> {
        let _here = machine::cpu::InterruptsOff::new();
        let tables = self.vm.tables()?;
        address_spaces::run_guest(vcpu, &tables).ok_or(Errno::EIO)
    }
}

impl Drop for VirtualCpu {
    fn drop(&mut self) {
        let vcpu = self.state.lock().vcpu.take();
        if let Some(vcpu) = vcpu {
            free_charged_frame(self.vm.container, vcpu.into_frame());
        }
        crate::capabilities::memory_objects::release(self.run_area);
        self.vm.remove_vcpu_id(self.id);
    }
}
