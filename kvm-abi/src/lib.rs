//! Linux's KVM interface (`/dev/kvm`), as the plain logic Lamina's
//! hypervisor needs to speak it, built and tested on the host:
//! - [`ioctls`]: the request numbers a VMM sends;
//! - [`layouts`]: `kvm_regs`, `kvm_sregs` (with `kvm_segment` and the VMCB's
//!   packed segment attributes), `kvm_userspace_memory_region`, and the
//!   exits written into the shared `kvm_run` page;
//! - [`memory_slots`]: a VM's guest-physical memory slots, with the
//!   checks and errno values of Linux's `KVM_SET_USER_MEMORY_REGION`;
//! - [`mmio_decode`] and [`guest_walk`]: the instruction a guest's MMIO
//!   access stopped at, found through the guest's own page tables and
//!   decoded (TCG gives no decode assist);
//! - [`msrs`]: where each guest MSR lives (VMCB state, fixed, or #GP);
//! - [`cpuid`]: the guest's CPUID table (`KVM_SET_CPUID2`);
//! - [`fpu_msrs`]: `kvm_fpu` against FXSAVE's layout, and MSR batches.
//!
//! Relies on nothing but `linux-abi`'s errno values. Must never panic on
//! any bytes or numbers a VMM passes: every decode is of fixed-size
//! arrays, every refusal an errno.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod cpuid;
pub mod fpu_msrs;
pub mod guest_walk;
pub mod ioctls;
pub mod layouts;
pub mod memory_slots;
pub mod mmio_decode;
pub mod msrs;

#[cfg(test)]
mod tests;
