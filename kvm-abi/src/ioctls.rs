//! KVM's ioctl request numbers (`<linux/kvm.h>`): type 0xAE, with the
//! argument's size and direction encoded as `_IOC` does.

const KVMIO: u64 = 0xAE;

const fn io(number: u64) -> u64 {
    KVMIO << 8 | number
}

/// `_IOW`: the VMM writes `size` bytes the kernel reads.
const fn io_write(number: u64, size: u64) -> u64 {
    1 << 30 | size << 16 | KVMIO << 8 | number
}

/// `_IOR`: the kernel writes `size` bytes back.
const fn io_read(number: u64, size: u64) -> u64 {
    2 << 30 | size << 16 | KVMIO << 8 | number
}

/// The API version every KVM reports (and VMMs insist on).
pub const API_VERSION: u64 = 12;

/// `/dev/kvm`: the API version.
pub const KVM_GET_API_VERSION: u64 = io(0x00);
/// `/dev/kvm`: a new VM (argument: the machine type, 0).
pub const KVM_CREATE_VM: u64 = io(0x01);
/// `/dev/kvm` or a VM: whether a capability is there (and its value).
pub const KVM_CHECK_EXTENSION: u64 = io(0x03);
/// `/dev/kvm`: bytes to map of a vCPU descriptor (`kvm_run` and after).
pub const KVM_GET_VCPU_MMAP_SIZE: u64 = io(0x04);
/// `/dev/kvm`: the CPUID entries this hypervisor offers (`kvm_cpuid2`,
/// read and written: the VMM says how many entries fit).
pub const KVM_GET_SUPPORTED_CPUID: u64 = 3 << 30 | 8 << 16 | KVMIO << 8 | 0x05;
/// A vCPU: its CPUID table (`kvm_cpuid2`).
pub const KVM_SET_CPUID2: u64 = io_write(0x90, 8);
/// A VM: a new vCPU (argument: its id).
pub const KVM_CREATE_VCPU: u64 = io(0x41);
/// A VM: adds, moves or deletes a slot of guest memory.
pub const KVM_SET_USER_MEMORY_REGION: u64 = io_write(0x46, crate::layouts::MEMORY_REGION_BYTES as u64);
/// A vCPU: queues an external interrupt (`struct kvm_interrupt`, a u32
/// vector) for when the guest can take it.
pub const KVM_INTERRUPT: u64 = io_write(0x86, 4);
/// A vCPU: run until an exit the VMM handles.
pub const KVM_RUN: u64 = io(0x80);
/// A vCPU: its general registers.
pub const KVM_GET_REGS: u64 = io_read(0x81, crate::layouts::REGS_BYTES as u64);
/// A vCPU: sets its general registers.
pub const KVM_SET_REGS: u64 = io_write(0x82, crate::layouts::REGS_BYTES as u64);
/// A vCPU: its segment and control registers.
pub const KVM_GET_SREGS: u64 = io_read(0x83, crate::layouts::SREGS_BYTES as u64);
/// A vCPU: sets its segment and control registers.
pub const KVM_SET_SREGS: u64 = io_write(0x84, crate::layouts::SREGS_BYTES as u64);
/// A vCPU: reads a batch of MSRs (`kvm_msrs`, read and written); answers
/// how many were read before the first it could not.
pub const KVM_GET_MSRS: u64 = 3 << 30 | 8 << 16 | KVMIO << 8 | 0x88;
/// A vCPU: writes a batch of MSRs; answers how many were written.
pub const KVM_SET_MSRS: u64 = io_write(0x89, 8);
/// A vCPU: its x87 and SSE state (`kvm_fpu`).
pub const KVM_GET_FPU: u64 = io_read(0x8C, crate::fpu_msrs::FPU_BYTES as u64);
/// A vCPU: sets its x87 and SSE state.
pub const KVM_SET_FPU: u64 = io_write(0x8D, crate::fpu_msrs::FPU_BYTES as u64);

/// Capabilities `KVM_CHECK_EXTENSION` answers with a non-zero value here.
pub mod capabilities {
    /// `KVM_CAP_USER_MEMORY`: `KVM_SET_USER_MEMORY_REGION` works.
    pub const USER_MEMORY: u64 = 3;
    /// `KVM_CAP_NR_MEMSLOTS`: how many slots a VM may have.
    pub const NR_MEMSLOTS: u64 = 10;
    /// `KVM_CAP_IMMEDIATE_EXIT`: `kvm_run.immediate_exit` is honoured.
    pub const IMMEDIATE_EXIT: u64 = 136;
}
