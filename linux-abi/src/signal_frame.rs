//! The x86-64 `rt_sigframe` a signal handler runs on, byte for byte as
//! Linux lays it out: the restorer's address (the handler's return
//! address), a `ucontext` (flags, link, `stack_t`, `sigcontext`, the mask
//! to restore) and a `siginfo`; where it goes (below the red zone, or on
//! the alternate stack) and how `rt_sigreturn` reads the registers back.
//! FPU state is not in the frame: the kernel keeps it.
//!
//! Must never panic: a stack pointer with no room below it is EFAULT.

use alloc::vec::Vec;

use crate::{Errno, UserValue};

/// `sa_flags`: the handler takes (signal, siginfo, ucontext).
pub const SA_SIGINFO: u64 = 4;
/// `sa_flags`: run the handler on the alternate stack.
pub const SA_ONSTACK: u64 = 0x0800_0000;
/// `sa_flags`: `sa_restorer` holds the return trampoline.
pub const SA_RESTORER: u64 = 0x0400_0000;
/// `ss_flags`: the alternate stack is switched off.
pub const SS_DISABLE: u32 = 2;

/// Bytes of the `ucontext` the kernel writes (flags, link, stack,
/// sigcontext, mask).
pub const UCONTEXT_BYTES: usize = 8 + 8 + 24 + SIGCONTEXT_BYTES + 8;
/// Bytes of `struct sigcontext` (23 register words, the FPU-state pointer,
/// 8 reserved words).
const SIGCONTEXT_BYTES: usize = 256;
/// Where `sigcontext` starts in the `ucontext`.
const SIGCONTEXT_AT: usize = 40;
/// Bytes of a `siginfo`.
pub const SIGINFO_BYTES: usize = 128;
/// The whole frame: return address, ucontext, siginfo.
pub const FRAME_BYTES: usize = 8 + UCONTEXT_BYTES + SIGINFO_BYTES;
/// Bytes below the interrupted stack pointer a frame leaves alone (the
/// System V red zone).
const RED_ZONE: u64 = 128;

/// `struct sigaction` as the kernel takes it (`rt_sigaction`, 32 bytes:
/// handler, flags, restorer, mask).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SigAction {
    /// `sa_handler` (0: default, 1: ignore).
    pub handler: u64,
    /// `sa_flags`.
    pub flags: u64,
    /// `sa_restorer`.
    pub restorer: u64,
    /// `sa_mask` (64 signals).
    pub mask: u64,
}

impl UserValue for SigAction {
    const SIZE: usize = 32;
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        let word = |index: usize| u64::decode(&bytes[index * 8..index * 8 + 8]);
        Ok(Self { handler: word(0)?, flags: word(1)?, restorer: word(2)?, mask: word(3)? })
    }
    fn encode(&self, bytes: &mut [u8]) {
        for (index, word) in [self.handler, self.flags, self.restorer, self.mask].into_iter().enumerate() {
            word.encode(&mut bytes[index * 8..index * 8 + 8]);
        }
    }
}

/// The general registers `sigcontext` saves, in its order: r8–r15, rdi,
/// rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags.
pub type SavedRegisters = [u64; 18];

/// The thread's alternate signal stack (`sigaltstack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AlternateStack {
    /// Lowest address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
    /// `ss_flags`.
    pub flags: u32,
}

impl AlternateStack {
    fn holds(&self, address: u64) -> bool {
        address > self.base && address <= self.base.saturating_add(self.size)
    }
}

/// What a handler is given.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// The signal.
    pub signal: u32,
    /// The handler's `sa_flags`.
    pub flags: u64,
    /// The handler's `sa_restorer`.
    pub restorer: u64,
    /// The mask `rt_sigreturn` restores.
    pub old_mask: u64,
}

/// A frame ready to write: its address and bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct SignalFrame {
    /// The frame's address: the handler's stack pointer (16-byte aligned
    /// minus 8, as at a function's entry).
    pub address: u64,
    /// [`FRAME_BYTES`] bytes.
    pub bytes: Vec<u8>,
}

impl SignalFrame {
    /// Where the `ucontext` is (the handler's third argument).
    pub fn ucontext_address(&self) -> u64 {
        self.address + 8
    }

    /// Where the `siginfo` is (the handler's second argument).
    pub fn siginfo_address(&self) -> u64 {
        self.address + 8 + UCONTEXT_BYTES as u64
    }
}

/// The frame for `delivery` interrupting `registers`. EFAULT without a
/// restorer (no way back) or without room below the stack pointer;
/// ENOMEM when the bytes cannot be allocated.
pub fn build(delivery: &Delivery, registers: &SavedRegisters, alternate: AlternateStack) -> Result<SignalFrame, Errno> {
    if delivery.flags & SA_RESTORER == 0 {
        return Err(Errno::EFAULT);
    }
    let stack_pointer = registers[15];
    let on_alternate = delivery.flags & SA_ONSTACK != 0 && alternate.flags & SS_DISABLE == 0 && alternate.size > 0 && !alternate.holds(stack_pointer);
    let top = if on_alternate { alternate.base.checked_add(alternate.size).ok_or(Errno::EFAULT)? } else { stack_pointer.checked_sub(RED_ZONE).ok_or(Errno::EFAULT)? };
    let address = (top.checked_sub(FRAME_BYTES as u64).ok_or(Errno::EFAULT)? & !15).checked_sub(8).ok_or(Errno::EFAULT)?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(FRAME_BYTES).map_err(|_| Errno::ENOMEM)?;
    let mut put = |word: u64| bytes.extend_from_slice(&word.to_le_bytes());
    put(delivery.restorer);
    // ucontext: flags, link, stack_t (sp, flags + padding, size)
    put(0);
    put(0);
    put(alternate.base);
    put(u64::from(alternate.flags));
    put(alternate.size);
    // sigcontext: the registers, then cs/gs/fs/ss, err, trapno, oldmask,
    // cr2, the FPU-state pointer (none) and 8 reserved words.
    registers.iter().for_each(|word| put(*word));
    put(0x2b << 48 | 0x33); // cs = 0x33, gs = fs = 0, ss = 0x2b
    (0..4 + 1 + 8).for_each(|_| put(0));
    put(delivery.old_mask);
    // siginfo: signo, errno 0, code SI_USER (0), then zeros
    put(u64::from(delivery.signal));
    (1..SIGINFO_BYTES / 8).for_each(|_| put(0));
    Ok(SignalFrame { address, bytes })
}

/// The registers and mask a frame's `ucontext` holds, as `rt_sigreturn`
/// reads them back.
pub fn read_ucontext(ucontext: &[u8; UCONTEXT_BYTES]) -> (SavedRegisters, u64) {
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&ucontext[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let registers = core::array::from_fn(|index| word(SIGCONTEXT_AT + index * 8));
    (registers, word(UCONTEXT_BYTES - 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELIVERY: Delivery = Delivery { signal: 10, flags: SA_RESTORER | SA_SIGINFO, restorer: 0x401000, old_mask: 0x55 };

    fn registers(stack_pointer: u64) -> SavedRegisters {
        let mut registers: SavedRegisters = core::array::from_fn(|index| 0x1000 + index as u64);
        registers[15] = stack_pointer;
        registers
    }

    #[test]
    fn the_frame_sits_below_the_red_zone_aligned_as_at_a_call() {
        let frame = build(&DELIVERY, &registers(0x7fff_0000_1234), AlternateStack::default()).unwrap();
        assert_eq!(frame.bytes.len(), FRAME_BYTES);
        assert_eq!(frame.address % 16, 8, "rsp + 8 is 16-byte aligned at a handler's entry");
        assert!(frame.address + FRAME_BYTES as u64 <= 0x7fff_0000_1234 - 128, "the red zone is left alone");
        assert_eq!(&frame.bytes[..8], &0x401000u64.to_le_bytes(), "the restorer is the return address");
        assert_eq!(frame.siginfo_address() - frame.address, 8 + 304);
    }

    #[test]
    fn the_layout_is_the_uapi_headers() {
        let frame = build(&DELIVERY, &registers(0x7fff_0000_0000), AlternateStack::default()).unwrap();
        let word = |at: usize| u64::from_le_bytes(frame.bytes[at..at + 8].try_into().unwrap());
        // ucontext at 8: uc_mcontext at +40 (r8 first), rip is gregs[16], eflags [17].
        assert_eq!(word(8 + 40), 0x1000, "r8");
        assert_eq!(word(8 + 40 + 16 * 8), 0x1000 + 16, "rip");
        assert_eq!(word(8 + 40 + 18 * 8) & 0xffff, 0x33, "cs");
        // uc_sigmask right after the 256-byte mcontext.
        assert_eq!(word(8 + 296), 0x55);
        // siginfo: si_signo first.
        assert_eq!(word(8 + 304) as u32, 10);
    }

    #[test]
    fn a_frame_reads_back_as_it_was_written() {
        let saved = registers(0x7fff_0000_0000);
        let frame = build(&DELIVERY, &saved, AlternateStack::default()).unwrap();
        let ucontext: &[u8; UCONTEXT_BYTES] = frame.bytes[8..8 + UCONTEXT_BYTES].try_into().unwrap();
        assert_eq!(read_ucontext(ucontext), (saved, 0x55));
    }

    #[test]
    fn the_alternate_stack_is_used_once_and_only_when_asked() {
        let alternate = AlternateStack { base: 0x10_0000, size: 0x4000, flags: 0 };
        let asked = Delivery { flags: DELIVERY.flags | SA_ONSTACK, ..DELIVERY };
        let frame = build(&asked, &registers(0x7fff_0000_0000), alternate).unwrap();
        assert!(frame.address >= 0x10_0000 && frame.address < 0x10_4000);
        let nested = build(&asked, &registers(frame.address), alternate).unwrap();
        assert!(nested.address < frame.address, "already on it: the frame goes below, not back to the top");
        let disabled = AlternateStack { flags: SS_DISABLE, ..alternate };
        assert!(build(&asked, &registers(0x7fff_0000_0000), disabled).unwrap().address > 0x7ffe_0000_0000);
        assert!(build(&DELIVERY, &registers(0x7fff_0000_0000), alternate).unwrap().address > 0x7ffe_0000_0000);
    }

    #[test]
    fn a_sigaction_reads_back_in_the_kernels_order() {
        let action = SigAction { handler: 1, flags: SA_RESTORER, restorer: 3, mask: 4 };
        let mut bytes = [0u8; 32];
        action.encode(&mut bytes);
        assert_eq!(&bytes[8..16], &SA_RESTORER.to_le_bytes(), "flags second");
        assert_eq!(SigAction::decode(&bytes), Ok(action));
    }

    #[test]
    fn no_restorer_or_no_room_is_efault() {
        let plain = Delivery { flags: 0, ..DELIVERY };
        assert_eq!(build(&plain, &registers(0x7fff_0000_0000), AlternateStack::default()), Err(Errno::EFAULT));
        assert_eq!(build(&DELIVERY, &registers(100), AlternateStack::default()), Err(Errno::EFAULT));
        assert_eq!(build(&DELIVERY, &registers(300), AlternateStack::default()), Err(Errno::EFAULT));
    }
}
