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

/// A `siginfo`: the signal, why it came (`si_code`) and the three words
/// of its union that Linux fills for the signals the kernel sends (bytes
/// 16..40: pid and uid then a value or status, or a fault address).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigInfo {
    /// `si_signo`.
    pub signo: u32,
    /// `si_code`: one of [`codes`].
    pub code: i32,
    /// Bytes 16..40 of the union.
    pub words: [u64; 3],
}

/// `si_code` values.
pub mod codes {
    /// Sent by `kill`.
    pub const SI_USER: i32 = 0;
    /// Sent by the kernel (a terminal's ^C, for one).
    pub const SI_KERNEL: i32 = 0x80;
    /// Sent by `sigqueue` (`rt_sigqueueinfo`).
    pub const SI_QUEUE: i32 = -1;
    /// Sent by `tkill` or `tgkill` (`raise`).
    pub const SI_TKILL: i32 = -6;
    /// Sent by a POSIX timer's expiry (`timer_create`).
    pub const SI_TIMER: i32 = -2;
    /// SIGSEGV: no mapping at the address.
    pub const SEGV_MAPERR: i32 = 1;
    /// SIGSEGV: the mapping forbids the access.
    pub const SEGV_ACCERR: i32 = 2;
    /// SIGILL: an illegal opcode.
    pub const ILL_ILLOPN: i32 = 2;
    /// SIGFPE: an integer division by zero.
    pub const FPE_INTDIV: i32 = 1;
    /// SIGTRAP: a breakpoint.
    pub const TRAP_BRKPT: i32 = 1;
    /// SIGCHLD: the child exited.
    pub const CLD_EXITED: i32 = 1;
    /// SIGCHLD: the child was killed.
    pub const CLD_KILLED: i32 = 2;
    /// SIGCHLD: the child was killed and dumped core.
    pub const CLD_DUMPED: i32 = 3;
    /// SIGCHLD: the child stopped.
    pub const CLD_STOPPED: i32 = 5;
    /// SIGCHLD: the child continued.
    pub const CLD_CONTINUED: i32 = 6;
}

impl SigInfo {
    /// From a process: `kill` (`SI_USER`), `tgkill` (`SI_TKILL`) or the
    /// kernel (`SI_KERNEL`), with the sender's pid and uid.
    pub fn from_process(signo: u32, code: i32, pid: u32, uid: u32) -> Self {
        Self { signo, code, words: [u64::from(pid) | u64::from(uid) << 32, 0, 0] }
    }

    /// `sigqueue`: as [`SigInfo::from_process`] with the value.
    pub fn queued(signo: u32, code: i32, pid: u32, uid: u32, value: u64) -> Self {
        Self { signo, code, words: [u64::from(pid) | u64::from(uid) << 32, value, 0] }
    }

    /// SIGCHLD about child `pid` (`code` one of the `CLD_*`; `status` the
    /// exit code or the signal).
    pub fn child(code: i32, pid: u32, uid: u32, status: i32) -> Self {
        Self { signo: 17, code, words: [u64::from(pid) | u64::from(uid) << 32, status as u32 as u64, 0] }
    }

    /// A fault at `address`.
    pub fn fault(signo: u32, code: i32, address: u64) -> Self {
        Self { signo, code, words: [address, 0, 0] }
    }

    /// The 128 bytes of the `siginfo` structure.
    pub fn encode(&self) -> [u8; SIGINFO_BYTES] {
        let mut bytes = [0u8; SIGINFO_BYTES];
        bytes[0..4].copy_from_slice(&self.signo.to_le_bytes());
        bytes[8..12].copy_from_slice(&self.code.to_le_bytes());
        for (index, word) in self.words.iter().enumerate() {
            bytes[16 + index * 8..24 + index * 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    /// Reads one a program passed (`rt_sigqueueinfo`): its code and words.
    pub fn decode(bytes: &[u8; SIGINFO_BYTES]) -> Self {
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let signo = u32::from_le_bytes(bytes[0..4].try_into().unwrap_or([0; 4]));
        let code = i32::from_le_bytes(bytes[8..12].try_into().unwrap_or([0; 4]));
        Self { signo, code, words: [word(16), word(24), word(32)] }
    }
}

/// What a handler is given.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// The signal.
    pub signal: u32,
    /// Why it came, and from whom.
    pub info: SigInfo,
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
    // siginfo, its signal number the delivered one.
    bytes.extend_from_slice(&SigInfo { signo: delivery.signal, ..delivery.info }.encode());
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

    const DELIVERY: Delivery = Delivery {
        signal: 10,
        info: SigInfo { signo: 10, code: codes::SI_USER, words: [7, 0, 0] },
        flags: SA_RESTORER | SA_SIGINFO,
        restorer: 0x401000,
        old_mask: 0x55,
    };

    #[test]
    fn siginfo_fields_sit_where_linux_puts_them() {
        let child = SigInfo::child(codes::CLD_EXITED, 42, 1000, 3).encode();
        let int = |at: usize| i32::from_le_bytes(child[at..at + 4].try_into().unwrap());
        assert_eq!((int(0), int(4), int(8), int(16), int(20), int(24)), (17, 0, codes::CLD_EXITED, 42, 1000, 3));
        let fault = SigInfo::fault(11, codes::SEGV_MAPERR, 0xdead_0000).encode();
        assert_eq!(u64::from_le_bytes(fault[16..24].try_into().unwrap()), 0xdead_0000);
        let queued = SigInfo::queued(10, codes::SI_QUEUE, 5, 0, 1234);
        assert_eq!(SigInfo::decode(&queued.encode()), queued);
        assert_eq!(i32::from_le_bytes(queued.encode()[24..28].try_into().unwrap()), 1234, "si_value after pid and uid");
    }

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
