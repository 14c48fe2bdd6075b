//! The KVM interface as this VMM uses it: the ioctl numbers and structure
//! layouts of `<linux/kvm.h>` (x86-64), and thin safe wrappers over the
//! descriptors. Nothing here knows about Linux guests.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const KVMIO: u64 = 0xAE;
const fn io(number: u64) -> u64 {
    KVMIO << 8 | number
}
const fn io_write(number: u64, size: u64) -> u64 {
    1 << 30 | size << 16 | KVMIO << 8 | number
}
const fn io_read(number: u64, size: u64) -> u64 {
    2 << 30 | size << 16 | KVMIO << 8 | number
}

const KVM_GET_API_VERSION: u64 = io(0x00);
const KVM_CREATE_VM: u64 = io(0x01);
const KVM_GET_VCPU_MMAP_SIZE: u64 = io(0x04);
const KVM_GET_SUPPORTED_CPUID: u64 = 3 << 30 | 8 << 16 | KVMIO << 8 | 0x05;
const KVM_SET_CPUID2: u64 = io_write(0x90, 8);
const KVM_CREATE_VCPU: u64 = io(0x41);
/// Entries a CPUID table may hold, and each one's bytes.
const CPUID_ENTRIES: usize = 256;
const CPUID_ENTRY_BYTES: usize = 40;
const KVM_SET_USER_MEMORY_REGION: u64 = io_write(0x46, 32);
const KVM_RUN: u64 = io(0x80);
const KVM_GET_REGS: u64 = io_read(0x81, 144);
const KVM_SET_REGS: u64 = io_write(0x82, 144);
const KVM_GET_SREGS: u64 = io_read(0x83, 312);
const KVM_SET_SREGS: u64 = io_write(0x84, 312);
const KVM_INTERRUPT: u64 = io_write(0x86, 4);

/// `kvm_run.exit_reason` values this VMM tells apart.
pub mod exit {
    pub const IO: u32 = 2;
    pub const HLT: u32 = 5;
    pub const IRQ_WINDOW_OPEN: u32 = 7;
    pub const MMIO: u32 = 6;
    pub const SHUTDOWN: u32 = 8;
    pub const FAIL_ENTRY: u32 = 9;
    pub const INTR: u32 = 10;
    pub const INTERNAL_ERROR: u32 = 17;
}

/// `kvm_regs`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Regs {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rsp: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rip: u64,
    pub rflags: u64,
}

/// `kvm_segment`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Segment {
    pub base: u64,
    pub limit: u32,
    pub selector: u16,
    pub kind: u8,
    pub present: u8,
    pub dpl: u8,
    pub db: u8,
    pub s: u8,
    pub l: u8,
    pub g: u8,
    pub avl: u8,
    pub unusable: u8,
    pub padding: u8,
}

/// `kvm_dtable`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DescriptorTable {
    pub base: u64,
    pub limit: u16,
    pub padding: [u16; 3],
}

/// `kvm_sregs`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Sregs {
    pub cs: Segment,
    pub ds: Segment,
    pub es: Segment,
    pub fs: Segment,
    pub gs: Segment,
    pub ss: Segment,
    pub tr: Segment,
    pub ldt: Segment,
    pub gdt: DescriptorTable,
    pub idt: DescriptorTable,
    pub cr0: u64,
    pub cr2: u64,
    pub cr3: u64,
    pub cr4: u64,
    pub cr8: u64,
    pub efer: u64,
    pub apic_base: u64,
    pub interrupt_bitmap: [u64; 4],
}

#[repr(C)]
struct MemoryRegion {
    slot: u32,
    flags: u32,
    guest_physical: u64,
    size: u64,
    user_address: u64,
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn ioctl(fd: &impl AsRawFd, request: u64, argument: u64) -> io::Result<libc::c_int> {
    // SAFETY: every request here is one of KVM's, with `argument` a plain
    // number or the address of a live value of the layout the request
    // names (the callers below pass exactly those).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), request as _, argument) })
}

/// `/dev/kvm`.
pub struct Kvm(File);

impl Kvm {
    pub fn open() -> io::Result<Kvm> {
        Ok(Kvm(std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm")?))
    }

    pub fn api_version(&self) -> io::Result<i32> {
        ioctl(&self.0, KVM_GET_API_VERSION, 0)
    }

    pub fn create_vm(&self) -> io::Result<Vm> {
        let fd = ioctl(&self.0, KVM_CREATE_VM, 0)?;
        // SAFETY: the kernel just returned this descriptor to us alone.
        Ok(Vm(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// `KVM_GET_SUPPORTED_CPUID`, as the `kvm_cpuid2` buffer the kernel
    /// filled (for `Vcpu::set_cpuid`).
    pub fn supported_cpuid(&self) -> io::Result<Vec<u64>> {
        let mut buffer = vec![0u64; (8 + CPUID_ENTRIES * CPUID_ENTRY_BYTES) / 8];
        buffer[0] = CPUID_ENTRIES as u64;
        ioctl(&self.0, KVM_GET_SUPPORTED_CPUID, buffer.as_mut_ptr() as u64)?;
        Ok(buffer)
    }

    pub fn vcpu_mmap_size(&self) -> io::Result<usize> {
        Ok(ioctl(&self.0, KVM_GET_VCPU_MMAP_SIZE, 0)? as usize)
    }
}

/// A VM.
pub struct Vm(OwnedFd);

/// Anonymous memory the guest uses as its RAM.
pub struct GuestMemory {
    base: *mut u8,
    size: usize,
}

impl GuestMemory {
    pub fn new(size: usize) -> io::Result<GuestMemory> {
        // SAFETY: a fresh anonymous private mapping; nothing else refers to it.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(GuestMemory { base: base.cast(), size })
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The bytes at guest-physical `[at, at + length)`; `None` outside.
    pub fn slice_mut(&mut self, at: u64, length: usize) -> Option<&mut [u8]> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(length)?;
        if end > self.size {
            return None;
        }
        // SAFETY: the range lies inside the mapping, which lives as long as
        // `self`, and the returned borrow is tied to `&mut self`. The guest
        // writes it too, but only while KVM_RUN runs, which the VMM does not
        // do while it holds this slice.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base.add(start), length) })
    }
}

impl Vm {
    pub fn set_memory(&self, slot: u32, guest_physical: u64, memory: &GuestMemory) -> io::Result<()> {
        let region = MemoryRegion { slot, flags: 0, guest_physical, size: memory.size as u64, user_address: memory.base as u64 };
        ioctl(&self.0, KVM_SET_USER_MEMORY_REGION, &region as *const MemoryRegion as u64).map(drop)
    }

    pub fn create_vcpu(&self, id: u64, mmap_size: usize) -> io::Result<Vcpu> {
        let fd = ioctl(&self.0, KVM_CREATE_VCPU, id)?;
        // SAFETY: the kernel just returned this descriptor to us alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: mapping the vCPU's kvm_run area, as KVM defines it.
        let run = unsafe { libc::mmap(std::ptr::null_mut(), mmap_size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if run == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Vcpu { fd, run: run.cast(), mmap_size })
    }
}

/// A vCPU and its `kvm_run` mapping.
pub struct Vcpu {
    fd: OwnedFd,
    run: *mut u8,
    mmap_size: usize,
}

impl Vcpu {
    /// `KVM_SET_CPUID2` with a `kvm_cpuid2` buffer.
    pub fn set_cpuid(&self, table: &[u64]) -> io::Result<()> {
        ioctl(&self.fd, KVM_SET_CPUID2, table.as_ptr() as u64).map(drop)
    }

    pub fn regs(&self) -> io::Result<Regs> {
        let mut regs = Regs::default();
        ioctl(&self.fd, KVM_GET_REGS, &mut regs as *mut Regs as u64)?;
        Ok(regs)
    }

    pub fn set_regs(&self, regs: &Regs) -> io::Result<()> {
        ioctl(&self.fd, KVM_SET_REGS, regs as *const Regs as u64).map(drop)
    }

    pub fn sregs(&self) -> io::Result<Sregs> {
        let mut sregs = Sregs::default();
        ioctl(&self.fd, KVM_GET_SREGS, &mut sregs as *mut Sregs as u64)?;
        Ok(sregs)
    }

    pub fn set_sregs(&self, sregs: &Sregs) -> io::Result<()> {
        ioctl(&self.fd, KVM_SET_SREGS, sregs as *const Sregs as u64).map(drop)
    }

    /// Runs until an exit; its reason.
    pub fn run(&self) -> io::Result<u32> {
        ioctl(&self.fd, KVM_RUN, 0)?;
        Ok(self.read_u32(8))
    }

    /// `KVM_INTERRUPT`: an external interrupt with `vector`, taken when
    /// the guest can.
    pub fn interrupt(&self, vector: u8) -> io::Result<()> {
        let word = u32::from(vector);
        ioctl(&self.fd, KVM_INTERRUPT, &word as *const u32 as u64).map(drop)
    }

    /// Whether the guest can take an interrupt now (`kvm_run`'s
    /// `ready_for_interrupt_injection` and `if_flag`, as of the last exit).
    pub fn can_take_interrupt(&self) -> bool {
        self.byte(12) != 0 && self.byte(13) != 0
    }

    /// `kvm_run.request_interrupt_window`: exit once the guest can take one.
    pub fn request_interrupt_window(&self, wanted: bool) {
        self.set_byte(0, u8::from(wanted));
    }

    /// Byte `offset` of the kvm_run mapping.
    pub fn byte(&self, offset: usize) -> u8 {
        assert!(offset < self.mmap_size);
        // SAFETY: inside the mapping, which lives as long as `self`.
        unsafe { self.run.add(offset).read_volatile() }
    }

    pub fn set_byte(&self, offset: usize, value: u8) {
        assert!(offset < self.mmap_size);
        // SAFETY: as in `byte`.
        unsafe { self.run.add(offset).write_volatile(value) }
    }

    pub fn read_u32(&self, offset: usize) -> u32 {
        u32::from_le_bytes([self.byte(offset), self.byte(offset + 1), self.byte(offset + 2), self.byte(offset + 3)])
    }

    pub fn read_u64(&self, offset: usize) -> u64 {
        u64::from(self.read_u32(offset)) | u64::from(self.read_u32(offset + 4)) << 32
    }

    /// An I/O exit: (input, size, port, count, data offset).
    pub fn io(&self) -> (bool, u8, u16, u32, usize) {
        (self.byte(32) == 0, self.byte(33), u16::from_le_bytes([self.byte(34), self.byte(35)]), self.read_u32(36), self.read_u64(40) as usize)
    }

    /// An MMIO exit: (address, length, is a write).
    pub fn mmio(&self) -> (u64, u32, bool) {
        (self.read_u64(32), self.read_u32(48), self.byte(52) != 0)
    }
}
