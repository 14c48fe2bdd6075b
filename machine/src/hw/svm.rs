//! AMD SVM: running a guest virtual machine's CPU (a vCPU) on this CPU
//! until something needs the host, with nested paging.
//!
//! The model is [`super::user`]'s "run until something happens":
//! [`Vcpu::run`] enters the guest with the state of its VMCB and its
//! general registers, and returns to the caller, on the caller's own
//! kernel stack, at the next intercepted event, with the guest's state
//! saved back and a [`VmExit`] saying why. Everything a VMM does with an
//! exit is then ordinary safe code above.
//!
//! What the machine keeps for itself, so that nothing above can reach host
//! memory or host state through a guest:
//! - the **intercepts** are fixed here: every I/O port, every MSR, CPUID,
//!   HLT, XSETBV, shutdown (a triple fault), physical interrupts and NMIs,
//!   and every SVM instruction; the I/O and MSR permission maps are one
//!   machine-owned all-ones run of frames;
//! - **nested paging is always on**, and its root is a live user address
//!   space's root ([`RootToken`], checked and recorded at each run like a
//!   CR3 load, so TLB shootdowns of that space reach this CPU and the root
//!   is not given back while a guest uses it); guest-physical accesses are
//!   user accesses, so the kernel half of that root (supervisor entries)
//!   is out of the guest's reach;
//! - the guest's TLB is flushed at every entry, so a translation the
//!   space withdrew (and whose shootdown this CPU served after the exit)
//!   is never used again;
//! - the guest's view of EFER always has SVME (VMRUN requires it), and the
//!   fields above the guest's own state (intercepts, maps, nested root,
//!   ASID, clean bits) are not writable through [`Vcpu::set`].
//!
//! How: the host's state that VMRUN does not switch (FS/GS/TR/LDTR and
//! the system-call MSRs) is kept with VMSAVE/VMLOAD in a per-CPU frame;
//! GIF is cleared around the switch so no interrupt or NMI lands while
//! the guest's GS base is loaded; the host's interrupt flag is on at VMRUN
//! so a physical interrupt ends the guest (and is taken by the host once
//! the caller turns interrupts on again; QEMU 7.2's TCG differs here: it
//! lets a host interrupt end the guest only while the *guest's* IF is on,
//! so under TCG a guest spinning with interrupts off keeps its CPU until
//! it stops by itself — on hardware, the host's IF decides). The
//! FPU/SSE/AVX state is the
//! guest's own, swapped in and out around each run.
//!
//! Must never run a guest without the intercepts above, nor with a nested
//! root that is not a live space's.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::boot_frames::BootFrames;
use super::cpu;
use super::frame_access::{Frame, RootToken};
use super::layout::PAGE_SIZE;
use super::percpu::MAX_CPUS;
use super::user::FpuArea;

/// CPUID 0x8000_0001 ECX: SVM.
const CPUID_SVM: u32 = 1 << 2;
/// CPUID 0x8000_000A EDX: nested paging.
const CPUID_NESTED_PAGING: u32 = 1;
/// VM_CR: SVM disabled by the firmware.
const MSR_VM_CR: u32 = 0xC001_0114;
const VM_CR_SVM_DISABLED: u64 = 1 << 4;
/// Where VMRUN saves the host's state.
const MSR_VM_HOST_SAVE_AREA: u32 = 0xC001_0117;
const EFER_SVME: u64 = 1 << 12;

/// The I/O permission map is 12 KiB, the MSR permission map 8 KiB.
const IO_MAP_FRAMES: u64 = 3;
const MSR_MAP_FRAMES: u64 = 2;

static AVAILABLE: AtomicBool = AtomicBool::new(false);
/// The all-ones I/O map (3 frames) followed by the MSR map (2 frames).
static PERMISSION_MAPS: AtomicU64 = AtomicU64::new(0);
/// Per CPU: the VMRUN host save area, and the VMSAVE area of the host's
/// other state (0: SVM not enabled on that CPU).
static HOST_SAVE_AREA: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
static HOST_VMSAVE_AREA: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Whether this machine's CPUs offer SVM with nested paging (and the
/// firmware left it enabled).
pub fn offered() -> bool {
    let highest = cpu::cpuid(0x8000_0000, 0).eax;
    if highest < 0x8000_000A || cpu::cpuid(0x8000_0001, 0).ecx & CPUID_SVM == 0 {
        return false;
    }
    cpu::cpuid(0x8000_000A, 0).edx & CPUID_NESTED_PAGING != 0 && cpu::read_msr(MSR_VM_CR) & VM_CR_SVM_DISABLED == 0
}

/// Whether guests can run (SVM was prepared on the boot CPU).
pub fn available() -> bool {
    AVAILABLE.load(Ordering::Relaxed)
}

/// Prepares SVM on this CPU (index `me`) if offered: a host save area,
/// and (first CPU) the permission maps, all from boot frames the machine
/// keeps. Called once per CPU at start-up. EFER.SVME itself is set only
/// while a guest is entered and left ([`Vcpu::run`]): under QEMU's TCG a
/// CPU with SVME set stopped enforcing SMAP on the kernel's reads of user
/// pages (ktest `protection_faults` failed), and the host needs it for
/// nothing else.
pub(crate) fn init_cpu(me: usize, frames: &mut BootFrames) {
    if me >= MAX_CPUS || !offered() {
        return;
    }
    if PERMISSION_MAPS.load(Ordering::Relaxed) == 0 {
        let Some(maps) = frames.allocate_contiguous(IO_MAP_FRAMES + MSR_MAP_FRAMES) else { return };
        for index in 0..IO_MAP_FRAMES + MSR_MAP_FRAMES {
            let mut frame = Frame::of_machine(maps + index * PAGE_SIZE);
            frame.write_bytes(0, &[0xFF; PAGE_SIZE as usize]);
            frame.into_machine();
        }
        PERMISSION_MAPS.store(maps, Ordering::Relaxed);
    }
    let (Some(host_save), Some(host_vmsave)) = (frames.allocate_zeroed(), frames.allocate_zeroed()) else { return };
    cpu::write_msr(MSR_VM_HOST_SAVE_AREA, host_save);
    HOST_SAVE_AREA[me].store(host_save, Ordering::Relaxed);
    HOST_VMSAVE_AREA[me].store(host_vmsave, Ordering::Relaxed);
    if me == 0 {
        AVAILABLE.store(true, Ordering::Relaxed);
    }
}

/// A guest's general registers (KVM's `kvm_regs` order). RAX, RSP, RIP and
/// RFLAGS live in the VMCB while the guest runs; [`Vcpu::run`] moves them.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuestRegisters {
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

/// A segment register as the VMCB holds it (`attributes`: the descriptor's
/// type, S, DPL, P in bits 0..8, AVL, L, D/B, G in bits 8..12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentState {
    pub selector: u16,
    pub attributes: u16,
    pub limit: u32,
    pub base: u64,
}

/// The VMCB's segment registers (and descriptor-table registers, which
/// use the base and limit only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Es,
    Cs,
    Ss,
    Ds,
    Fs,
    Gs,
    Gdtr,
    Ldtr,
    Idtr,
    Tr,
}

impl Segment {
    fn offset(self) -> usize {
        SAVE + 16 * self as usize
    }
}

/// Guest-state fields of the VMCB (64-bit each) the layers above read and
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestField {
    Efer,
    Cr0,
    Cr2,
    Cr3,
    Cr4,
    Dr6,
    Dr7,
    Star,
    Lstar,
    Cstar,
    Sfmask,
    KernelGsBase,
    SysenterCs,
    SysenterEsp,
    SysenterEip,
    GuestPat,
}

impl GuestField {
    fn offset(self) -> usize {
        SAVE + match self {
            GuestField::Efer => 0xD0,
            GuestField::Cr4 => 0x148,
            GuestField::Cr3 => 0x150,
            GuestField::Cr0 => 0x158,
            GuestField::Dr7 => 0x160,
            GuestField::Dr6 => 0x168,
            GuestField::Star => 0x200,
            GuestField::Lstar => 0x208,
            GuestField::Cstar => 0x210,
            GuestField::Sfmask => 0x218,
            GuestField::KernelGsBase => 0x220,
            GuestField::SysenterCs => 0x228,
            GuestField::SysenterEsp => 0x230,
            GuestField::SysenterEip => 0x238,
            GuestField::Cr2 => 0x240,
            GuestField::GuestPat => 0x268,
        }
    }
}

// VMCB layout (AMD64 APM vol. 2, appendix B): control area, then the
// state-save area at 0x400.
const INTERCEPT_CR: usize = 0x000;
const INTERCEPT_EXCEPTIONS: usize = 0x008;
const INTERCEPT_MISC1: usize = 0x00C;
const INTERCEPT_MISC2: usize = 0x010;
const IOPM_BASE: usize = 0x040;
const MSRPM_BASE: usize = 0x048;
const GUEST_ASID: usize = 0x058;
const TLB_CONTROL: usize = 0x05C;
const INTERRUPT_CONTROL: usize = 0x060;
const INTERRUPT_SHADOW: usize = 0x068;
const EXIT_CODE: usize = 0x070;
const EXIT_INFO1: usize = 0x078;
const EXIT_INFO2: usize = 0x080;
const EXIT_INTERRUPT_INFO: usize = 0x088;
const NESTED_CONTROL: usize = 0x090;
const EVENT_INJECTION: usize = 0x0A8;
const NESTED_CR3: usize = 0x0B0;
const CLEAN_BITS: usize = 0x0C0;
const SAVE: usize = 0x400;
const SAVE_CPL: usize = SAVE + 0xCB;
const SAVE_RFLAGS: usize = SAVE + 0x170;
const SAVE_RIP: usize = SAVE + 0x178;
const SAVE_RSP: usize = SAVE + 0x1D8;
const SAVE_RAX: usize = SAVE + 0x1F8;

// Intercept bits at 0x00C.
const INTERCEPT_INTR: u32 = 1 << 0;
const INTERCEPT_VINTR: u32 = 1 << 4;
const INTERCEPT_NMI: u32 = 1 << 1;
const INTERCEPT_SMI: u32 = 1 << 2;
const INTERCEPT_INIT: u32 = 1 << 3;
const INTERCEPT_CPUID: u32 = 1 << 18;
const INTERCEPT_INVD: u32 = 1 << 22;
const INTERCEPT_HLT: u32 = 1 << 24;
const INTERCEPT_INVLPGA: u32 = 1 << 26;
const INTERCEPT_IO: u32 = 1 << 27;
const INTERCEPT_MSR: u32 = 1 << 28;
const INTERCEPT_SHUTDOWN: u32 = 1 << 31;
// Intercept bits at 0x010: VMRUN (required), VMMCALL, VMLOAD, VMSAVE,
// STGI, CLGI, SKINIT, then MONITOR, MWAIT and XSETBV.
const INTERCEPT_SVM_INSTRUCTIONS: u32 = 0x7F;
const INTERCEPT_MONITOR_MWAIT: u32 = (1 << 10) | (1 << 11);
const INTERCEPT_XSETBV: u32 = 1 << 13;
/// Exception 18 (#MC) is the host's.
const INTERCEPT_MACHINE_CHECK: u32 = 1 << 18;
/// V_INTR_MASKING: the guest's IF masks only virtual interrupts; physical
/// ones follow the host's IF (on at VMRUN).
const VIRTUAL_INTERRUPT_MASKING: u64 = 1 << 24;
/// V_IRQ: a virtual interrupt is pending; the guest takes it (vector
/// V_INTR_VECTOR) as soon as its IF is on and no shadow holds, or, with
/// the VINTR intercept, exits then instead (the interrupt window). (Under
/// QEMU 7.2's TCG the check happens at entry and at the guest's next exit
/// to QEMU's loop, not right after the guest's own `sti`:
/// docs/hypervisor.md.)
const VIRTUAL_IRQ: u64 = 1 << 8;
/// V_INTR_PRIO (bits 16..19) at its highest and V_IGN_TPR: the virtual
/// interrupt is taken whatever the guest's TPR.
const VIRTUAL_IRQ_ANY_PRIORITY: u64 = (0xF << 16) | (1 << 20);
/// V_INTR_VECTOR, bits 32..39.
const VIRTUAL_IRQ_VECTOR_SHIFT: u32 = 32;
const VIRTUAL_IRQ_FIELDS: u64 = VIRTUAL_IRQ | VIRTUAL_IRQ_ANY_PRIORITY | (0xFF << VIRTUAL_IRQ_VECTOR_SHIFT);
/// TLB_CONTROL is a 32-bit field: a 64-bit store there also zeroed the
/// interrupt control word after it (V_IRQ, V_INTR_MASKING) at every entry.
const FLUSH_GUEST_TLB: u32 = 1;
/// The attribute PAT every power-on CPU has.
const POWER_ON_PAT: u64 = 0x0007_0406_0007_0406;

/// Exit codes (APM vol. 2, appendix C).
mod exit_code {
    pub const INTR: u64 = 0x60;
    pub const NMI: u64 = 0x61;
    pub const SMI: u64 = 0x62;
    pub const INIT: u64 = 0x63;
    pub const VINTR: u64 = 0x64;
    pub const CPUID: u64 = 0x72;
    pub const HLT: u64 = 0x78;
    pub const IOIO: u64 = 0x7B;
    pub const MSR: u64 = 0x7C;
    pub const SHUTDOWN: u64 = 0x7F;
    pub const VMMCALL: u64 = 0x81;
    pub const XSETBV: u64 = 0x8D;
    pub const NESTED_PAGE_FAULT: u64 = 0x400;
    pub const INVALID: u64 = u64::MAX;
}

/// Why the guest stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmExit {
    /// An `in` or `out` (`string`: `ins`/`outs`); the instruction has not
    /// completed: the caller emulates it and moves RIP to `next_rip`.
    Io { port: u16, input: bool, bytes: u8, string: bool, repeat: bool, next_rip: u64 },
    /// `hlt` (RIP still at it: the instruction is one byte).
    Halt,
    /// `cpuid` (two bytes).
    Cpuid,
    /// `rdmsr`/`wrmsr` (two bytes).
    Msr { write: bool },
    /// `xsetbv` (three bytes).
    Xsetbv,
    /// `vmmcall` (three bytes).
    Vmmcall,
    /// A guest-physical address the nested tables do not map as the access
    /// needs (`error_code`: the page-fault error code bits).
    NestedPageFault { guest_physical: u64, error_code: u64 },
    /// A triple fault: the guest cannot go on.
    Shutdown,
    /// The guest can take an interrupt now (asked for with
    /// [`Vcpu::request_interrupt_window`], which this ends).
    InterruptWindow,
    /// A physical interrupt or NMI (or SMI, INIT) for the host; taken once
    /// the caller turns interrupts on.
    HostInterrupt,
    /// VMRUN refused the guest's state (it breaks a consistency rule).
    InvalidState,
    /// Any other intercept (an SVM instruction, an exception, `invd`...).
    Other { code: u64, info1: u64, info2: u64 },
}

/// An event to deliver to the guest at its next entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestEvent {
    /// An external interrupt.
    Interrupt { vector: u8 },
    /// A non-maskable interrupt.
    Nmi,
    /// An exception, with its error code if it has one.
    Exception { vector: u8, error_code: Option<u32> },
}

/// One guest CPU: its VMCB (a frame the vCPU holds), its general registers
/// and its FPU state.
pub struct Vcpu {
    vmcb: Frame,
    registers: GuestRegisters,
    fpu: FpuArea,
    /// Whether the interrupt window is asked for.
    window: bool,
    /// An external interrupt handed to the guest as its virtual interrupt
    /// (V_IRQ), not taken yet. Not EVENTINJ: QEMU's TCG, injecting an
    /// external interrupt through EVENTINJ at VMRUN, leaves the vector as
    /// its pending exception, and delivers it a second time (whatever the
    /// guest's IF) at its next exit request; a Linux guest then re-entered
    /// its interrupt handler with the first one's lock held and spun for
    /// good (docs/hypervisor.md, "Several guests at once").
    pending_interrupt: Option<u8>,
}

impl Vcpu {
    /// A vCPU in the state x86 CPUs come out of reset in (real mode,
    /// CS:IP = F000:FFF0 with CS base 0xFFFF0000), using `vmcb` (a frame
    /// the caller held). The frame back when SVM is not available here.
    pub fn new(mut vmcb: Frame) -> Result<Vcpu, Frame> {
        let maps = PERMISSION_MAPS.load(Ordering::Relaxed);
        if !available() || maps == 0 || !vmcb.zero() {
            return Err(vmcb);
        }
        let mut vcpu = Vcpu { vmcb, registers: GuestRegisters { rdx: 0x600, rip: 0xFFF0, rflags: 2, ..GuestRegisters::default() }, fpu: FpuArea::initial(), window: false, pending_interrupt: None };
        vcpu.write_u32(INTERCEPT_CR, 0);
        vcpu.write_u32(INTERCEPT_EXCEPTIONS, INTERCEPT_MACHINE_CHECK);
        vcpu.write_u32(
            INTERCEPT_MISC1,
            INTERCEPT_INTR | INTERCEPT_NMI | INTERCEPT_SMI | INTERCEPT_INIT | INTERCEPT_CPUID | INTERCEPT_INVD | INTERCEPT_HLT | INTERCEPT_INVLPGA | INTERCEPT_IO | INTERCEPT_MSR | INTERCEPT_SHUTDOWN,
        );
        vcpu.write_u32(INTERCEPT_MISC2, INTERCEPT_SVM_INSTRUCTIONS | INTERCEPT_MONITOR_MWAIT | INTERCEPT_XSETBV);
        vcpu.write_u64(IOPM_BASE, maps);
        vcpu.write_u64(MSRPM_BASE, maps + IO_MAP_FRAMES * PAGE_SIZE);
        vcpu.write_u32(GUEST_ASID, 1);
        vcpu.write_u64(INTERRUPT_CONTROL, VIRTUAL_INTERRUPT_MASKING);
        vcpu.write_u64(NESTED_CONTROL, 1);
        vcpu.reset_state();
        Ok(vcpu)
    }

    /// The power-on state of the guest-visible registers.
    fn reset_state(&mut self) {
        let data = SegmentState { selector: 0, attributes: 0x93, limit: 0xFFFF, base: 0 };
        for segment in [Segment::Es, Segment::Ss, Segment::Ds, Segment::Fs, Segment::Gs] {
            self.set_segment(segment, data);
        }
        self.set_segment(Segment::Cs, SegmentState { selector: 0xF000, attributes: 0x9B, limit: 0xFFFF, base: 0xFFFF_0000 });
        self.set_segment(Segment::Gdtr, SegmentState { limit: 0xFFFF, ..SegmentState::default() });
        self.set_segment(Segment::Idtr, SegmentState { limit: 0xFFFF, ..SegmentState::default() });
        self.set_segment(Segment::Ldtr, SegmentState { attributes: 0x82, limit: 0xFFFF, ..SegmentState::default() });
        self.set_segment(Segment::Tr, SegmentState { attributes: 0x8B, limit: 0xFFFF, ..SegmentState::default() });
        self.set(GuestField::Cr0, 0x6000_0010);
        self.set(GuestField::Efer, 0);
        self.set(GuestField::Dr6, 0xFFFF_0FF0);
        self.set(GuestField::Dr7, 0x400);
        self.set(GuestField::GuestPat, POWER_ON_PAT);
    }

    /// The guest's general registers.
    pub fn registers(&self) -> GuestRegisters {
        self.registers
    }

    /// Replaces the guest's general registers (bit 1 of RFLAGS is kept set,
    /// as the CPU requires).
    pub fn set_registers(&mut self, registers: GuestRegisters) {
        self.registers = GuestRegisters { rflags: registers.rflags | 2, ..registers };
    }

    /// The guest's x87 and SSE state in FXSAVE's 512-byte layout (KVM's
    /// `kvm_fpu` holds the same fields).
    pub fn fpu_legacy(&self) -> [u8; super::user::LEGACY_FPU_BYTES] {
        self.fpu.legacy()
    }

    /// Replaces the guest's x87 and SSE state; `false` (nothing changed)
    /// for MXCSR bits this CPU does not have.
    pub fn set_fpu_legacy(&mut self, bytes: &[u8; super::user::LEGACY_FPU_BYTES]) -> bool {
        self.fpu.set_legacy(bytes)
    }

    /// A guest-state field (EFER without SVME, which the machine sets for
    /// VMRUN only).
    pub fn get(&self, field: GuestField) -> u64 {
        self.read_u64(field.offset())
    }

    /// Sets a guest-state field (VMRUN checks the values: a state it
    /// refuses ends the next run with [`VmExit::InvalidState`]).
    pub fn set(&mut self, field: GuestField, value: u64) {
        self.write_u64(field.offset(), value);
    }

    /// A segment register.
    pub fn segment(&self, segment: Segment) -> SegmentState {
        let offset = segment.offset();
        SegmentState {
            selector: self.read_u64(offset) as u16,
            attributes: (self.read_u64(offset) >> 16) as u16,
            limit: (self.read_u64(offset) >> 32) as u32,
            base: self.read_u64(offset + 8),
        }
    }

    /// Sets a segment register (and, for CS and SS, the privilege level
    /// VMRUN takes from SS's DPL).
    pub fn set_segment(&mut self, segment: Segment, state: SegmentState) {
        let offset = segment.offset();
        self.write_u64(offset, u64::from(state.selector) | u64::from(state.attributes) << 16 | u64::from(state.limit) << 32);
        self.write_u64(offset + 8, state.base);
        if segment == Segment::Ss {
            let cpl = (state.attributes >> 5) & 3;
            let mut word = [0u8; 1];
            word[0] = cpl as u8;
            self.vmcb.write_bytes(SAVE_CPL, &word);
        }
    }

    /// Whether the guest is in an interrupt shadow (just after `sti` or
    /// `mov ss`), when an interrupt cannot be delivered.
    pub fn interrupt_shadow(&self) -> bool {
        self.read_u64(INTERRUPT_SHADOW) & 1 != 0
    }

    /// The hypervisor did the guest's current instruction for it (an
    /// intercepted `hlt`, `cpuid`, `rdmsr`, port or MMIO access): the
    /// registers after it, and the interrupt shadow of a `sti` or `mov ss`
    /// before it is over, as after any instruction (KVM clears it when it
    /// skips one too).
    pub fn finish_instruction(&mut self, registers: GuestRegisters) {
        self.set_registers(registers);
        let state = self.read_u64(INTERRUPT_SHADOW) & !1;
        self.write_u64(INTERRUPT_SHADOW, state);
    }

    /// Delivers `event` at the next entry (replacing one of its kind not
    /// yet delivered). An external interrupt waits, as the guest's virtual
    /// interrupt, until the guest can take it.
    pub fn inject(&mut self, event: GuestEvent) {
        const VALID: u64 = 1 << 31;
        const HAS_ERROR_CODE: u64 = 1 << 11;
        let word = match event {
            GuestEvent::Interrupt { vector } => {
                self.pending_interrupt = Some(vector);
                return;
            }
            GuestEvent::Nmi => 2 | 2 << 8 | VALID,
            GuestEvent::Exception { vector, error_code: None } => u64::from(vector) | 3 << 8 | VALID,
            GuestEvent::Exception { vector, error_code: Some(code) } => u64::from(vector) | 3 << 8 | HAS_ERROR_CODE | VALID | u64::from(code) << 32,
        };
        self.write_u64(EVENT_INJECTION, word);
    }

    /// Queues again an event whose delivery the last exit interrupted (a
    /// nested page fault while reading the guest's interrupt table, say),
    /// as the CPU reports it; true when there was one.
    pub fn requeue_interrupted_delivery(&mut self) -> bool {
        let word = self.read_u64(EXIT_INTERRUPT_INFO);
        if word & (1 << 31) == 0 {
            return false;
        }
        self.write_u64(EXIT_INTERRUPT_INFO, 0);
        // An `int n`, `int3` or `into` cut short is not queued again: RIP
        // still names the instruction, which runs again (as KVM does).
        // Injected as an event, `int3` would push the instruction's own
        // address instead of the next one's, and a Linux guest patching
        // its text with breakpoints took the wrong trap and died.
        let (kind, vector) = ((word >> 8) & 7, word & 0xFF);
        if kind == 4 || (kind == 3 && (vector == 3 || vector == 4)) {
            return false;
        }
        // An external interrupt (kind 0; QEMU's TCG records a virtual
        // interrupt it was delivering as an exception, and exceptions have
        // vectors below 32) goes back to being the pending virtual one.
        if kind == 0 || (kind == 3 && vector >= 32) {
            self.pending_interrupt = Some(vector as u8);
            return true;
        }
        // Same format as EVENTINJ; reserved bits cleared.
        self.write_u64(EVENT_INJECTION, word & 0xFFFF_FFFF_8000_0FFF);
        true
    }

    /// Whether an event is queued for the next entry (an external
    /// interrupt the guest has not taken yet among them).
    pub fn event_queued(&self) -> bool {
        self.pending_interrupt.is_some() || self.read_u64(EVENT_INJECTION) & (1 << 31) != 0
    }

    /// Whether the guest can take an external interrupt now: its IF on, no
    /// interrupt shadow, nothing queued already.
    pub fn interruptible(&self) -> bool {
        self.registers.rflags & (1 << 9) != 0 && !self.interrupt_shadow() && !self.event_queued()
    }

    /// Asks for (or stops asking for) an [`VmExit::InterruptWindow`] exit
    /// as soon as the guest can take an interrupt. While an external
    /// interrupt is pending, the guest takes that one first: the window
    /// opens only after it.
    pub fn request_interrupt_window(&mut self, wanted: bool) {
        self.window = wanted;
    }

    /// Before an entry: V_IRQ, its vector and the VINTR intercept, from
    /// the pending interrupt and the window asked for.
    fn arm_virtual_interrupt(&mut self) {
        let control = self.read_u64(INTERRUPT_CONTROL) & !VIRTUAL_IRQ_FIELDS;
        let intercepts = self.read_u32(INTERCEPT_MISC1) & !INTERCEPT_VINTR;
        let (control, intercepts) = match (self.pending_interrupt, self.window) {
            (Some(vector), _) => (control | VIRTUAL_IRQ | VIRTUAL_IRQ_ANY_PRIORITY | u64::from(vector) << VIRTUAL_IRQ_VECTOR_SHIFT, intercepts),
            (None, true) => (control | VIRTUAL_IRQ | VIRTUAL_IRQ_ANY_PRIORITY, intercepts | INTERCEPT_VINTR),
            (None, false) => (control, intercepts),
        };
        self.write_u64(INTERRUPT_CONTROL, control);
        self.write_u32(INTERCEPT_MISC1, intercepts);
    }

    /// After an exit: a pending interrupt whose V_IRQ the CPU cleared was
    /// taken (if its delivery was cut short, EXITINTINFO has it, and
    /// [`Vcpu::requeue_interrupted_delivery`] makes it pending again).
    fn note_virtual_interrupt_taken(&mut self) {
        if self.pending_interrupt.is_some() && self.read_u64(INTERRUPT_CONTROL) & VIRTUAL_IRQ == 0 {
            self.pending_interrupt = None;
        }
    }

    /// Runs the guest on this CPU until an intercepted event, with the
    /// nested page tables of the space `nested` names. `None`: the space's
    /// root is gone (nothing ran). Call with interrupts on or off; a host
    /// interrupt that ended the guest is taken when they are next on.
    pub fn run(&mut self, nested: &RootToken) -> Option<VmExit> {
        let off = cpu::InterruptsOff::new();
        let me = super::percpu::current_index();
        let (host_vmsave, host_save) = (HOST_VMSAVE_AREA[me].load(Ordering::Relaxed), HOST_SAVE_AREA[me].load(Ordering::Relaxed));
        if host_vmsave == 0 || host_save == 0 || !super::frame_access::announce_nested(nested, me) {
            return None;
        }
        self.arm_virtual_interrupt();
        self.write_u64(NESTED_CR3, nested.root());
        self.write_u32(TLB_CONTROL, FLUSH_GUEST_TLB);
        self.write_u32(CLEAN_BITS, 0);
        self.write_u64(SAVE_RAX, self.registers.rax);
        self.write_u64(SAVE_RSP, self.registers.rsp);
        self.write_u64(SAVE_RIP, self.registers.rip);
        self.write_u64(SAVE_RFLAGS, self.registers.rflags | 2);
        let efer = self.get(GuestField::Efer);
        self.set(GuestField::Efer, efer | EFER_SVME);
        super::user::restore_fpu(&self.fpu);
        let host_efer = cpu::read_msr(cpu::MSR_EFER);
        cpu::write_msr(cpu::MSR_EFER, host_efer | EFER_SVME);
        // SAFETY: `vmcb` is a frame this vCPU holds, set up by `new` with
        // the machine's intercepts, permission maps and nested paging on a
        // live root announced above; `host_vmsave` is this CPU's own
        // machine frame; interrupts are off, and `svm_run` keeps GIF clear
        // whenever the guest's hidden state is loaded. The general
        // registers are read and written through `registers` only.
        unsafe { svm_run(self.vmcb.address(), &mut self.registers, host_vmsave) };
        cpu::write_msr(cpu::MSR_EFER, host_efer);
        super::user::save_fpu(&mut self.fpu);
        // The FPU registers hold the guest's state now, not a thread's.
        super::user::forget_fpu_here(me);
        super::frame_access::announce_nested_gone(me);
        // SVME is the machine's: the guest's EFER writes reach the VMM
        // (MSRs are intercepted), and the guest's view never has it.
        let efer = self.get(GuestField::Efer);
        self.set(GuestField::Efer, efer & !EFER_SVME);
        self.registers.rax = self.read_u64(SAVE_RAX);
        self.registers.rsp = self.read_u64(SAVE_RSP);
        self.registers.rip = self.read_u64(SAVE_RIP);
        self.registers.rflags = self.read_u64(SAVE_RFLAGS);
        self.note_virtual_interrupt_taken();
        drop(off);
        let exit = self.exit();
        if exit == VmExit::InterruptWindow {
            self.request_interrupt_window(false);
        }
        Some(exit)
    }

    /// The last exit, decoded.
    fn exit(&self) -> VmExit {
        let (code, info1, info2) = (self.read_u64(EXIT_CODE), self.read_u64(EXIT_INFO1), self.read_u64(EXIT_INFO2));
        match code {
            exit_code::IOIO => VmExit::Io {
                port: (info1 >> 16) as u16,
                input: info1 & 1 != 0,
                bytes: ((info1 >> 4) & 7) as u8,
                string: info1 & (1 << 2) != 0,
                repeat: info1 & (1 << 3) != 0,
                next_rip: info2,
            },
            exit_code::HLT => VmExit::Halt,
            exit_code::CPUID => VmExit::Cpuid,
            exit_code::MSR => VmExit::Msr { write: info1 & 1 != 0 },
            exit_code::XSETBV => VmExit::Xsetbv,
            exit_code::VMMCALL => VmExit::Vmmcall,
            exit_code::NESTED_PAGE_FAULT => VmExit::NestedPageFault { guest_physical: info2, error_code: info1 },
            exit_code::SHUTDOWN => VmExit::Shutdown,
            exit_code::VINTR => VmExit::InterruptWindow,
            exit_code::INTR | exit_code::NMI | exit_code::SMI | exit_code::INIT => VmExit::HostInterrupt,
            exit_code::INVALID => VmExit::InvalidState,
            _ => VmExit::Other { code, info1, info2 },
        }
    }

    /// Gives the VMCB frame back (the vCPU is gone).
    pub fn into_frame(self) -> Frame {
        self.vmcb
    }

    fn read_u64(&self, offset: usize) -> u64 {
        let mut bytes = [0u8; 8];
        self.vmcb.read_bytes(offset, &mut bytes);
        u64::from_le_bytes(bytes)
    }

    fn write_u64(&mut self, offset: usize, value: u64) {
        self.vmcb.write_bytes(offset, &value.to_le_bytes());
    }

    fn read_u32(&self, offset: usize) -> u32 {
        let mut bytes = [0u8; 4];
        self.vmcb.read_bytes(offset, &mut bytes);
        u32::from_le_bytes(bytes)
    }

    fn write_u32(&mut self, offset: usize, value: u32) {
        self.vmcb.write_bytes(offset, &value.to_le_bytes());
    }
}

extern "C" {
    /// Runs the guest whose VMCB is at physical `vmcb` with the general
    /// registers in `registers` (RAX, RSP, RIP, RFLAGS are the VMCB's),
    /// keeping the host's other state in the frame at `host_vmsave`.
    fn svm_run(vmcb: u64, registers: *mut GuestRegisters, host_vmsave: u64);
}

const REG_RBX: usize = core::mem::offset_of!(GuestRegisters, rbx);
const REG_RCX: usize = core::mem::offset_of!(GuestRegisters, rcx);
const REG_RDX: usize = core::mem::offset_of!(GuestRegisters, rdx);
const REG_RSI: usize = core::mem::offset_of!(GuestRegisters, rsi);
const REG_RDI: usize = core::mem::offset_of!(GuestRegisters, rdi);
const REG_RBP: usize = core::mem::offset_of!(GuestRegisters, rbp);
const REG_R8: usize = core::mem::offset_of!(GuestRegisters, r8);
const REG_R9: usize = core::mem::offset_of!(GuestRegisters, r9);
const REG_R10: usize = core::mem::offset_of!(GuestRegisters, r10);
const REG_R11: usize = core::mem::offset_of!(GuestRegisters, r11);
const REG_R12: usize = core::mem::offset_of!(GuestRegisters, r12);
const REG_R13: usize = core::mem::offset_of!(GuestRegisters, r13);
const REG_R14: usize = core::mem::offset_of!(GuestRegisters, r14);
const REG_R15: usize = core::mem::offset_of!(GuestRegisters, r15);

core::arch::global_asm!(
    ".text",
    ".global svm_run",
    // svm_run(vmcb: rdi, registers: rsi, host_vmsave: rdx), interrupts off.
    "svm_run:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "push rsi",
    "push rdi",
    "push rdx",
    // Stack: [rsp] host_vmsave, [rsp+8] vmcb, [rsp+16] registers.
    "clgi",
    // GIF is clear: the interrupt flag lets a physical interrupt end the
    // guest but delivers nothing to the host before STGI. Set here, well
    // before VMRUN: QEMU's TCG carries the `sti` shadow into the guest
    // (its VMRUN does not load the guest's interrupt shadow), so with `sti`
    // just before VMRUN the guest's first instruction ran before a virtual
    // interrupt it could take (docs/hypervisor.md).
    "sti",
    "mov rax, rdx",
    "vmsave rax",
    "mov rax, rdi",
    "vmload rax",
    "mov rbx, [rsi + {rbx}]",
    "mov rcx, [rsi + {rcx}]",
    "mov rdx, [rsi + {rdx}]",
    "mov rdi, [rsi + {rdi}]",
    "mov rbp, [rsi + {rbp}]",
    "mov r8, [rsi + {r8}]",
    "mov r9, [rsi + {r9}]",
    "mov r10, [rsi + {r10}]",
    "mov r11, [rsi + {r11}]",
    "mov r12, [rsi + {r12}]",
    "mov r13, [rsi + {r13}]",
    "mov r14, [rsi + {r14}]",
    "mov r15, [rsi + {r15}]",
    "mov rsi, [rsi + {rsi}]",
    "vmrun rax",
    "cli",
    // RAX, RSP, RIP are the host's again (VMRUN saved them); the other
    // general registers are the guest's.
    "mov rax, [rsp + 16]",
    "mov [rax + {rbx}], rbx",
    "mov [rax + {rcx}], rcx",
    "mov [rax + {rdx}], rdx",
    "mov [rax + {rsi}], rsi",
    "mov [rax + {rdi}], rdi",
    "mov [rax + {rbp}], rbp",
    "mov [rax + {r8}], r8",
    "mov [rax + {r9}], r9",
    "mov [rax + {r10}], r10",
    "mov [rax + {r11}], r11",
    "mov [rax + {r12}], r12",
    "mov [rax + {r13}], r13",
    "mov [rax + {r14}], r14",
    "mov [rax + {r15}], r15",
    "mov rax, [rsp + 8]",
    "vmsave rax",
    "pop rax",
    "vmload rax",
    "stgi",
    "add rsp, 16",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    rbx = const REG_RBX,
    rcx = const REG_RCX,
    rdx = const REG_RDX,
    rsi = const REG_RSI,
    rdi = const REG_RDI,
    rbp = const REG_RBP,
    r8 = const REG_R8,
    r9 = const REG_R9,
    r10 = const REG_R10,
    r11 = const REG_R11,
    r12 = const REG_R12,
    r13 = const REG_R13,
    r14 = const REG_R14,
    r15 = const REG_R15,
);
