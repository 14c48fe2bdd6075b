//! The structures a VMM and KVM exchange, as byte layouts (x86-64,
//! little-endian, `<linux/kvm.h>`), and the VMCB's packed segment
//! attributes they convert to and from.

/// Bytes of `kvm_regs`.
pub const REGS_BYTES: usize = 144;
/// Bytes of `kvm_sregs`.
pub const SREGS_BYTES: usize = 312;
/// Bytes of `kvm_userspace_memory_region`.
pub const MEMORY_REGION_BYTES: usize = 32;
/// Bytes a VMM maps of a vCPU descriptor: the `kvm_run` page, then the
/// page port I/O data is exchanged in.
pub const VCPU_MMAP_BYTES: usize = 2 * 4096;
/// Where in that mapping an exit's port I/O data lies.
pub const IO_DATA_OFFSET: usize = 4096;

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes([bytes[offset], bytes[offset + 1]])
}

/// `kvm_regs`: the general registers, RIP and RFLAGS, in KVM's order
/// (rax rbx rcx rdx rsi rdi rsp rbp r8–r15 rip rflags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regs(pub [u64; 18]);

impl Regs {
    /// Index of RIP.
    pub const RIP: usize = 16;
    /// Index of RFLAGS.
    pub const RFLAGS: usize = 17;

    /// Decodes the VMM's bytes.
    pub fn decode(bytes: &[u8; REGS_BYTES]) -> Regs {
        let mut words = [0u64; 18];
        for (index, word) in words.iter_mut().enumerate() {
            *word = u64_at(bytes, index * 8);
        }
        Regs(words)
    }

    /// The bytes the VMM reads.
    pub fn encode(&self) -> [u8; REGS_BYTES] {
        let mut bytes = [0u8; REGS_BYTES];
        for (index, word) in self.0.iter().enumerate() {
            bytes[index * 8..index * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// `kvm_segment`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    /// Base address.
    pub base: u64,
    /// Limit (in bytes, as the VMCB holds it).
    pub limit: u32,
    /// Selector.
    pub selector: u16,
    /// Descriptor type (4 bits).
    pub kind: u8,
    /// P.
    pub present: bool,
    /// DPL.
    pub dpl: u8,
    /// D/B.
    pub db: bool,
    /// S (code or data, not system).
    pub s: bool,
    /// L (64-bit code).
    pub l: bool,
    /// G.
    pub g: bool,
    /// AVL.
    pub avl: bool,
    /// Not usable (a null selector's segment).
    pub unusable: bool,
}

impl Segment {
    fn decode(bytes: &[u8]) -> Segment {
        Segment {
            base: u64_at(bytes, 0),
            limit: u32_at(bytes, 8),
            selector: u16_at(bytes, 12),
            kind: bytes[14] & 0xF,
            present: bytes[15] != 0,
            dpl: bytes[16] & 3,
            db: bytes[17] != 0,
            s: bytes[18] != 0,
            l: bytes[19] != 0,
            g: bytes[20] != 0,
            avl: bytes[21] != 0,
            unusable: bytes[22] != 0,
        }
    }

    fn encode(&self, bytes: &mut [u8]) {
        bytes[0..8].copy_from_slice(&self.base.to_le_bytes());
        bytes[8..12].copy_from_slice(&self.limit.to_le_bytes());
        bytes[12..14].copy_from_slice(&self.selector.to_le_bytes());
        let flags = [self.kind, u8::from(self.present), self.dpl, u8::from(self.db), u8::from(self.s), u8::from(self.l), u8::from(self.g), u8::from(self.avl), u8::from(self.unusable), 0];
        bytes[14..24].copy_from_slice(&flags);
    }

    /// The segment a VMCB holds (its packed attributes: type, S, DPL, P in
    /// bits 0..8, AVL, L, D/B, G in bits 8..12), as KVM reports it: a
    /// segment that is not present is unusable.
    pub fn from_vmcb(selector: u16, attributes: u16, limit: u32, base: u64) -> Segment {
        let bit = |shift: u16| attributes >> shift & 1 != 0;
        Segment {
            base,
            limit,
            selector,
            kind: (attributes & 0xF) as u8,
            s: bit(4),
            dpl: (attributes >> 5 & 3) as u8,
            present: bit(7),
            avl: bit(8),
            l: bit(9),
            db: bit(10),
            g: bit(11),
            unusable: !bit(7),
        }
    }

    /// The VMCB's packed attributes for this segment (0 when unusable).
    pub fn vmcb_attributes(&self) -> u16 {
        if self.unusable {
            return 0;
        }
        u16::from(self.kind & 0xF)
            | u16::from(self.s) << 4
            | u16::from(self.dpl & 3) << 5
            | u16::from(self.present) << 7
            | u16::from(self.avl) << 8
            | u16::from(self.l) << 9
            | u16::from(self.db) << 10
            | u16::from(self.g) << 11
    }
}

/// `kvm_dtable`: a descriptor-table register.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DescriptorTable {
    /// Base address.
    pub base: u64,
    /// Limit.
    pub limit: u16,
}

/// `kvm_sregs`: segments, descriptor tables, control registers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sregs {
    /// CS, DS, ES, FS, GS, SS, TR, LDT, in that order.
    pub segments: [Segment; 8],
    /// GDTR.
    pub gdt: DescriptorTable,
    /// IDTR.
    pub idt: DescriptorTable,
    /// CR0.
    pub cr0: u64,
    /// CR2.
    pub cr2: u64,
    /// CR3.
    pub cr3: u64,
    /// CR4.
    pub cr4: u64,
    /// CR8.
    pub cr8: u64,
    /// EFER.
    pub efer: u64,
    /// The local APIC's base MSR.
    pub apic_base: u64,
    /// Interrupts pending injection (one bit per vector).
    pub interrupt_bitmap: [u64; 4],
}

/// Where each control register sits in `kvm_sregs`.
const CONTROL_OFFSET: usize = 224;

impl Sregs {
    /// Index of CS in [`Sregs::segments`].
    pub const CS: usize = 0;
    /// Index of SS.
    pub const SS: usize = 5;

    /// Decodes the VMM's bytes.
    pub fn decode(bytes: &[u8; SREGS_BYTES]) -> Sregs {
        let mut segments = [Segment::default(); 8];
        for (index, segment) in segments.iter_mut().enumerate() {
            *segment = Segment::decode(&bytes[index * 24..index * 24 + 24]);
        }
        let table = |offset: usize| DescriptorTable { base: u64_at(bytes, offset), limit: u16_at(bytes, offset + 8) };
        let control = |index: usize| u64_at(bytes, CONTROL_OFFSET + index * 8);
        let mut interrupt_bitmap = [0u64; 4];
        for (index, word) in interrupt_bitmap.iter_mut().enumerate() {
            *word = u64_at(bytes, 280 + index * 8);
        }
        Sregs {
            segments,
            gdt: table(192),
            idt: table(208),
            cr0: control(0),
            cr2: control(1),
            cr3: control(2),
            cr4: control(3),
            cr8: control(4),
            efer: control(5),
            apic_base: control(6),
            interrupt_bitmap,
        }
    }

    /// The bytes the VMM reads.
    pub fn encode(&self) -> [u8; SREGS_BYTES] {
        let mut bytes = [0u8; SREGS_BYTES];
        for (index, segment) in self.segments.iter().enumerate() {
            segment.encode(&mut bytes[index * 24..index * 24 + 24]);
        }
        for (offset, table) in [(192, self.gdt), (208, self.idt)] {
            bytes[offset..offset + 8].copy_from_slice(&table.base.to_le_bytes());
            bytes[offset + 8..offset + 10].copy_from_slice(&table.limit.to_le_bytes());
        }
        for (index, value) in [self.cr0, self.cr2, self.cr3, self.cr4, self.cr8, self.efer, self.apic_base].iter().enumerate() {
            let offset = CONTROL_OFFSET + index * 8;
            bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
        }
        for (index, word) in self.interrupt_bitmap.iter().enumerate() {
            bytes[280 + index * 8..288 + index * 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// `kvm_userspace_memory_region`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Address space (upper 16 bits) and slot number (lower 16).
    pub slot: u32,
    /// `KVM_MEM_*` flags.
    pub flags: u32,
    /// Guest-physical start.
    pub guest_physical: u64,
    /// Bytes (0: delete the slot).
    pub size: u64,
    /// Where the VMM has the memory.
    pub user_address: u64,
}

impl MemoryRegion {
    /// Decodes the VMM's bytes.
    pub fn decode(bytes: &[u8; MEMORY_REGION_BYTES]) -> MemoryRegion {
        MemoryRegion { slot: u32_at(bytes, 0), flags: u32_at(bytes, 4), guest_physical: u64_at(bytes, 8), size: u64_at(bytes, 16), user_address: u64_at(bytes, 24) }
    }
}

/// Why `KVM_RUN` returned, as written into the `kvm_run` page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunExit {
    /// `KVM_EXIT_IO`: port I/O; the data (`size` × `count` bytes) is at
    /// [`IO_DATA_OFFSET`] of the mapping (written by the guest for an
    /// output, to be filled by the VMM for an input).
    Io {
        /// `in` (the VMM supplies the data) rather than `out`.
        input: bool,
        /// Bytes per access (1, 2 or 4).
        size: u8,
        /// The port.
        port: u16,
        /// Accesses (more than one for `rep ins`/`outs`).
        count: u32,
    },
    /// `KVM_EXIT_HLT`.
    Halt,
    /// `KVM_EXIT_MMIO`: an access outside every memory slot.
    Mmio {
        /// Guest-physical address.
        address: u64,
        /// A store's bytes (a load's are filled by the VMM).
        data: [u8; 8],
        /// Bytes accessed.
        length: u32,
        /// A store.
        write: bool,
    },
    /// `KVM_EXIT_SHUTDOWN`: a triple fault.
    Shutdown,
    /// `KVM_EXIT_IRQ_WINDOW_OPEN`: the guest can take an interrupt (the
    /// VMM asked with `request_interrupt_window`).
    InterruptWindowOpen,
    /// `KVM_EXIT_FAIL_ENTRY`: the CPU refused the guest's state.
    FailEntry {
        /// The hardware's reason (the VMCB exit code).
        reason: u64,
    },
    /// `KVM_EXIT_INTERNAL_ERROR` with a suberror (1: an instruction the
    /// hypervisor cannot emulate).
    InternalError {
        /// `KVM_INTERNAL_ERROR_*`.
        suberror: u32,
    },
}

/// Offsets in `kvm_run`.
pub mod run_offsets {
    /// An MMIO exit's data (8 bytes): a load's value, filled by the VMM.
    pub const MMIO_DATA: usize = 40;
    /// `request_interrupt_window` (u8): set by the VMM, the run ends as soon
    /// as the guest can take an interrupt.
    pub const REQUEST_INTERRUPT_WINDOW: usize = 0;
    /// `ready_for_interrupt_injection` (u8): `KVM_INTERRUPT` would be
    /// delivered at once.
    pub const READY_FOR_INTERRUPT_INJECTION: usize = 12;
    /// `immediate_exit` (u8): set by the VMM, `KVM_RUN` returns EINTR.
    pub const IMMEDIATE_EXIT: usize = 1;
    /// `exit_reason` (u32).
    pub const EXIT_REASON: usize = 8;
    /// `if_flag` (u8): the guest's interrupt flag.
    pub const IF_FLAG: usize = 13;
    /// The exit's own fields.
    pub const EXIT_DATA: usize = 32;
}

impl RunExit {
    /// `exit_reason`'s value.
    pub fn reason(&self) -> u32 {
        match self {
            RunExit::Io { .. } => 2,
            RunExit::Halt => 5,
            RunExit::Mmio { .. } => 6,
            RunExit::InterruptWindowOpen => 7,
            RunExit::Shutdown => 8,
            RunExit::FailEntry { .. } => 9,
            RunExit::InternalError { .. } => 17,
        }
    }

    /// Writes the exit into the first bytes of the `kvm_run` page (the
    /// reason, and the exit's fields at their union's offset).
    pub fn encode(&self, run: &mut [u8; 64]) {
        use run_offsets::{EXIT_DATA, EXIT_REASON};
        run[EXIT_REASON..EXIT_REASON + 4].copy_from_slice(&self.reason().to_le_bytes());
        run[EXIT_DATA..].fill(0);
        match *self {
            RunExit::Io { input, size, port, count } => {
                run[EXIT_DATA] = u8::from(!input);
                run[EXIT_DATA + 1] = size;
                run[EXIT_DATA + 2..EXIT_DATA + 4].copy_from_slice(&port.to_le_bytes());
                run[EXIT_DATA + 4..EXIT_DATA + 8].copy_from_slice(&count.to_le_bytes());
                run[EXIT_DATA + 8..EXIT_DATA + 16].copy_from_slice(&(IO_DATA_OFFSET as u64).to_le_bytes());
            }
            RunExit::Mmio { address, data, length, write } => {
                run[EXIT_DATA..EXIT_DATA + 8].copy_from_slice(&address.to_le_bytes());
                run[EXIT_DATA + 8..EXIT_DATA + 16].copy_from_slice(&data);
                run[EXIT_DATA + 16..EXIT_DATA + 20].copy_from_slice(&length.to_le_bytes());
                run[EXIT_DATA + 20] = u8::from(write);
            }
            RunExit::FailEntry { reason } => run[EXIT_DATA..EXIT_DATA + 8].copy_from_slice(&reason.to_le_bytes()),
            RunExit::InternalError { suberror } => run[EXIT_DATA..EXIT_DATA + 4].copy_from_slice(&suberror.to_le_bytes()),
            RunExit::Halt | RunExit::Shutdown | RunExit::InterruptWindowOpen => {}
        }
    }
}
