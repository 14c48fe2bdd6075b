//! `struct signalfd_siginfo` (`signalfd(2)`): the 128-byte record a read
//! of a signal descriptor gives per signal, filled from a [`SigInfo`] the
//! way Linux fills it — which fields mean something depends on the
//! signal's layout (sent by `kill`, queued with a value, a timer's, a
//! child's, a fault's). Pure encoding.

use crate::signal_frame::{codes, SigInfo};

/// `sizeof(struct signalfd_siginfo)`.
pub const RECORD_BYTES: usize = 128;

/// The record for `info`.
pub fn record(info: &SigInfo) -> [u8; RECORD_BYTES] {
    let mut bytes = [0u8; RECORD_BYTES];
    let mut put = |at: usize, value: &[u8]| bytes[at..at + value.len()].copy_from_slice(value);
    put(0, &info.signo.to_le_bytes());
    put(8, &info.code.to_le_bytes());
    let (low, high) = (info.words[0] as u32, (info.words[0] >> 32) as u32);
    let value = info.words[1];
    const SIGILL: u32 = 4;
    const SIGTRAP: u32 = 5;
    const SIGBUS: u32 = 7;
    const SIGFPE: u32 = 8;
    const SIGSEGV: u32 = 11;
    const SIGCHLD: u32 = 17;
    let specific = info.code > 0 && info.code < codes::SI_KERNEL;
    match info.code {
        codes::SI_TIMER => {
            put(24, &low.to_le_bytes()); // ssi_tid: the timer's id
            put(32, &high.to_le_bytes()); // ssi_overrun
            put(44, &(value as u32).to_le_bytes()); // ssi_int
            put(48, &value.to_le_bytes()); // ssi_ptr
        }
        _ if specific && info.signo == SIGCHLD => {
            put(12, &low.to_le_bytes()); // ssi_pid
            put(16, &high.to_le_bytes()); // ssi_uid
            put(40, &(value as u32).to_le_bytes()); // ssi_status
        }
        _ if specific && matches!(info.signo, SIGILL | SIGTRAP | SIGBUS | SIGFPE | SIGSEGV) => {
            put(72, &info.words[0].to_le_bytes()); // ssi_addr
        }
        code if code < 0 => {
            // Queued with a value (sigqueue, tkill, message queues).
            put(12, &low.to_le_bytes());
            put(16, &high.to_le_bytes());
            put(44, &(value as u32).to_le_bytes());
            put(48, &value.to_le_bytes());
        }
        _ => {
            put(12, &low.to_le_bytes());
            put(16, &high.to_le_bytes());
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(bytes: &[u8; RECORD_BYTES], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn each_layout_fills_its_fields() {
        let killed = record(&SigInfo::from_process(15, codes::SI_USER, 42, 0));
        assert_eq!((field(&killed, 0), field(&killed, 8), field(&killed, 12)), (15, 0, 42));
        let queued = record(&SigInfo { signo: 34, code: codes::SI_QUEUE, words: [7, 99, 0] });
        assert_eq!((field(&queued, 12), field(&queued, 44)), (7, 99));
        assert_eq!(u64::from_le_bytes(queued[48..56].try_into().unwrap()), 99);
        let timer = record(&SigInfo { signo: 14, code: codes::SI_TIMER, words: [3 | (2 << 32), 5, 0] });
        assert_eq!((field(&timer, 24), field(&timer, 32), field(&timer, 44)), (3, 2, 5));
        let child = record(&SigInfo::child(codes::CLD_EXITED, 77, 0, 3));
        assert_eq!((field(&child, 12), field(&child, 40)), (77, 3));
        let fault = record(&SigInfo::fault(11, codes::SEGV_MAPERR, 0xdead_0000));
        assert_eq!(u64::from_le_bytes(fault[72..80].try_into().unwrap()), 0xdead_0000);
        assert_eq!(field(&fault, 12), 0, "a fault has no sender");
    }
}
