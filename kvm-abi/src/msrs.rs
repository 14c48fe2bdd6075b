//! Where a guest's model-specific registers live: every `rdmsr`/`wrmsr`
//! of a guest exits (the machine intercepts them all), and the hypervisor
//! answers from the VMCB's guest state for the ones the CPU switches,
//! from fixed values for the ones a kernel reads to learn the machine,
//! and with #GP for the rest (as KVM does with `ignore_msrs` off), which a
//! guest kernel's `rdmsr_safe` probing expects.

/// Where MSR `index` lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsrHome {
    /// EFER (the VMCB's; the guest never sees SVME).
    Efer,
    /// The FS segment's base.
    FsBase,
    /// The GS segment's base.
    GsBase,
    /// A 64-bit VMCB state field: KernelGsBase, STAR, LSTAR, CSTAR,
    /// SFMASK, SYSENTER_CS/ESP/EIP, PAT.
    State(StateMsr),
    /// The time-stamp counter (reads the CPU's; writes ignored).
    TimeStampCounter,
    /// The local APIC's base: at the default address, enabled, BSP.
    ApicBase,
    /// Read as 0, writes ignored: memory-type ranges, machine-check
    /// reporting, microcode, AMD's model-specific configuration.
    Zero,
    /// Not offered: #GP.
    Missing,
}

/// The VMCB state fields behind MSRs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateMsr {
    /// `MSR_KERNEL_GS_BASE`.
    KernelGsBase,
    /// `MSR_STAR`.
    Star,
    /// `MSR_LSTAR`.
    Lstar,
    /// `MSR_CSTAR`.
    Cstar,
    /// `MSR_SYSCALL_MASK`.
    Sfmask,
    /// `MSR_IA32_SYSENTER_CS`.
    SysenterCs,
    /// `MSR_IA32_SYSENTER_ESP`.
    SysenterEsp,
    /// `MSR_IA32_SYSENTER_EIP`.
    SysenterEip,
    /// `MSR_IA32_CR_PAT`.
    Pat,
}

/// The MSR `index`'s home.
pub fn home(index: u32) -> MsrHome {
    match index {
        0xC000_0080 => MsrHome::Efer,
        0xC000_0100 => MsrHome::FsBase,
        0xC000_0101 => MsrHome::GsBase,
        0xC000_0102 => MsrHome::State(StateMsr::KernelGsBase),
        0xC000_0081 => MsrHome::State(StateMsr::Star),
        0xC000_0082 => MsrHome::State(StateMsr::Lstar),
        0xC000_0083 => MsrHome::State(StateMsr::Cstar),
        0xC000_0084 => MsrHome::State(StateMsr::Sfmask),
        0x174 => MsrHome::State(StateMsr::SysenterCs),
        0x175 => MsrHome::State(StateMsr::SysenterEsp),
        0x176 => MsrHome::State(StateMsr::SysenterEip),
        0x277 => MsrHome::State(StateMsr::Pat),
        0x10 => MsrHome::TimeStampCounter,
        0x1B => MsrHome::ApicBase,
        // MTRR capabilities, variable and fixed ranges, default type;
        // MCG_CAP/STATUS and the MC banks; microcode revision; AMD's
        // 0xC001_xxxx configuration registers.
        0xFE | 0x200..=0x21F | 0x250 | 0x258 | 0x259 | 0x268..=0x26F | 0x2FF | 0x179 | 0x17A | 0x400..=0x47F | 0x8B | 0xC001_0000..=0xC001_FFFF => MsrHome::Zero,
        _ => MsrHome::Missing,
    }
}

/// What `wrmsr` of `value` to EFER leaves in the guest's EFER, or `None`
/// for a value with reserved bits (#GP): SCE, LME, LMA, NXE, SVME (kept
/// out), LMSLE, FFXSR, TCE are the architectural bits.
pub fn efer_write(value: u64) -> Option<u64> {
    const ALLOWED: u64 = 1 | (1 << 8) | (1 << 10) | (1 << 11) | (1 << 13) | (1 << 14) | (1 << 15);
    (value & !(ALLOWED | (1 << 12)) == 0).then_some(value & ALLOWED)
}
