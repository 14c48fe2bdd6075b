//! The instruction behind a guest's MMIO access: a nested page fault
//! outside every memory slot stops the guest at a `mov` to or from a
//! device, and without the CPU's decode assists (QEMU's TCG offers none)
//! the hypervisor reads the instruction and decodes it itself, to know the
//! size, the direction, the register or immediate, and where the next
//! instruction starts.
//!
//! Decodes the moves compilers emit for device registers: `mov r/m, r`
//! (88, 89), `mov r, r/m` (8A, 8B), `mov r/m, imm` (C6 /0, C7 /0) and
//! `movzx r, r/m8|16` (0F B6, 0F B7), with the operand-size prefix, REX
//! in 64-bit code, segment prefixes, and 32- or 64-bit addressing.
//! Anything else (16-bit addressing included) is `None`: the caller
//! reports an emulation failure. Must never read past the bytes given.

/// One decoded access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmioAccess {
    /// A store to the device (else a load from it).
    pub write: bool,
    /// Bytes moved to or from memory (1, 2, 4 or 8).
    pub size: u8,
    /// What is stored, or where a load goes.
    pub operand: Operand,
    /// A load's destination size when it differs from `size` (`movzx`).
    pub destination_size: u8,
    /// The instruction's length in bytes.
    pub length: u8,
}

/// The register side of an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A general register by its encoding number (0 rax, 1 rcx, 2 rdx,
    /// 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8–15 r8–r15).
    Register(u8),
    /// AH, CH, DH or BH: bits 8..16 of register 0–3 (a byte operand 4–7
    /// without REX).
    HighByte(u8),
    /// An immediate to store.
    Immediate(u64),
}

/// The mode the instruction runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeMode {
    /// 64-bit code (CS.L).
    Long,
    /// 32-bit code (CS.D).
    Protected32,
    /// 16-bit code (real mode, or CS.D clear).
    Bits16,
}

/// Decodes the instruction at the start of `bytes` in `mode`.
pub fn decode(bytes: &[u8], mode: CodeMode) -> Option<MmioAccess> {
    let mut at = 0usize;
    let mut operand_prefix = false;
    let mut address_prefix = false;
    let mut rex = 0u8;
    loop {
        let byte = *bytes.get(at)?;
        match byte {
            0x66 => operand_prefix = true,
            0x67 => address_prefix = true,
            0x26 | 0x2E | 0x36 | 0x3E | 0x64 | 0x65 => {}
            0x40..=0x4F if mode == CodeMode::Long => {
                rex = byte;
                at += 1;
                break;
            }
            _ => break,
        }
        at += 1;
    }
    // 16-bit addressing has another ModRM form: not decoded.
    let address_16 = match mode {
        CodeMode::Long => false,
        CodeMode::Protected32 => address_prefix,
        CodeMode::Bits16 => !address_prefix,
    };
    if address_16 {
        return None;
    }
    let wide = rex & 0x08 != 0;
    let full_size = if wide {
        8
    } else {
        match (mode, operand_prefix) {
            (CodeMode::Bits16, false) | (CodeMode::Long | CodeMode::Protected32, true) => 2,
            _ => 4,
        }
    };
    let mut opcode = u16::from(*bytes.get(at)?);
    at += 1;
    if opcode == 0x0F {
        opcode = 0x0F00 | u16::from(*bytes.get(at)?);
        at += 1;
    }
    let modrm = *bytes.get(at)?;
    at += 1;
    let (mode_bits, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
    if mode_bits == 3 {
        return None;
    }
    // SIB and displacement.
    let mut base_is_disp32 = false;
    if rm == 4 {
        let sib = *bytes.get(at)?;
        at += 1;
        base_is_disp32 = sib & 7 == 5 && mode_bits == 0;
    }
    at += match mode_bits {
        0 if rm == 5 || base_is_disp32 => 4,
        1 => 1,
        2 => 4,
        _ => 0,
    };
    let register = reg | if rex & 0x04 != 0 { 8 } else { 0 };
    let byte_operand = |number: u8| if rex == 0 && (4..8).contains(&number) { Operand::HighByte(number - 4) } else { Operand::Register(number) };
    let immediate = |at: usize, size: usize| -> Option<u64> {
        let slice = bytes.get(at..at + size)?;
        let mut word = [0u8; 8];
        word[..size].copy_from_slice(slice);
        Some(u64::from_le_bytes(word))
    };
    let (write, size, operand, destination_size, extra) = match opcode {
        0x88 => (true, 1, byte_operand(register), 1, 0),
        0x89 => (true, full_size, Operand::Register(register), full_size, 0),
        0x8A => (false, 1, byte_operand(register), 1, 0),
        0x8B => (false, full_size, Operand::Register(register), full_size, 0),
        0xC6 if reg == 0 => (true, 1, Operand::Immediate(immediate(at, 1)?), 1, 1),
        0xC7 if reg == 0 => {
            // The immediate is at most 32 bits, sign-extended for 64.
            let bytes_of_immediate = if full_size == 2 { 2 } else { 4 };
            let raw = immediate(at, bytes_of_immediate)?;
            let value = if full_size == 8 { raw as u32 as i32 as i64 as u64 } else { raw };
            (true, full_size, Operand::Immediate(value), full_size, bytes_of_immediate)
        }
        0x0FB6 => (false, 1, Operand::Register(register), full_size, 0),
        0x0FB7 => (false, 2, Operand::Register(register), full_size, 0),
        _ => return None,
    };
    let length = u8::try_from(at + extra).ok().filter(|length| *length <= 15)?;
    if length as usize > bytes.len() {
        return None;
    }
    Some(MmioAccess { write, size, operand, destination_size, length })
}

/// A register's value after a load of `loaded` (`size` bytes) into it as
/// `destination_size` bytes: 4-byte results clear the upper half (as any
/// 32-bit write does in 64-bit mode), 1- and 2-byte results keep the rest.
pub fn merge_load(old: u64, loaded: u64, destination_size: u8, high_byte: bool) -> u64 {
    if high_byte {
        return old & !0xFF00 | (loaded & 0xFF) << 8;
    }
    match destination_size {
        1 => old & !0xFF | loaded & 0xFF,
        2 => old & !0xFFFF | loaded & 0xFFFF,
        4 => loaded & 0xFFFF_FFFF,
        _ => loaded,
    }
}
