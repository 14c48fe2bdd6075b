//! The wait status word `wait4` hands a parent, and what `waitid` and a
//! shell make of it (Linux's encoding: `<sys/wait.h>`'s `W*` macros).
//!
//! Must never panic on any word.

/// How a child ended or changed, as a parent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// `exit(code)`: the low 8 bits of the code.
    Exited(u8),
    /// Ended by signal `signal` (no core dump).
    Signaled(u8),
    /// Stopped by signal `signal` (job control).
    Stopped(u8),
    /// Continued by SIGCONT.
    Continued,
}

/// `CLD_*` codes of a `waitid` record's `si_code`.
pub mod child_codes {
    /// The child exited.
    pub const CLD_EXITED: u32 = 1;
    /// A signal ended the child.
    pub const CLD_KILLED: u32 = 2;
    /// A signal stopped the child.
    pub const CLD_STOPPED: u32 = 5;
    /// SIGCONT continued the child.
    pub const CLD_CONTINUED: u32 = 6;
}

impl WaitStatus {
    /// A normal exit with `code` (only its low byte reaches the parent).
    pub fn exited(code: u32) -> Self {
        WaitStatus::Exited(code as u8)
    }

    /// The status word (`WIFEXITED`, `WEXITSTATUS`, ... decode it).
    pub fn encode(self) -> u32 {
        match self {
            WaitStatus::Exited(code) => u32::from(code) << 8,
            WaitStatus::Signaled(signal) => u32::from(signal & 0x7f),
            WaitStatus::Stopped(signal) => u32::from(signal) << 8 | 0x7f,
            WaitStatus::Continued => 0xffff,
        }
    }

    /// The status a word says (`None` for a word no child can have).
    pub fn decode(word: u32) -> Option<Self> {
        match word & 0x7f {
            _ if word == 0xffff => Some(WaitStatus::Continued),
            _ if word > 0xffff => None,
            0 => Some(WaitStatus::Exited((word >> 8) as u8)),
            0x7f => Some(WaitStatus::Stopped((word >> 8) as u8)),
            signal if word >> 8 == 0 => Some(WaitStatus::Signaled(signal as u8)),
            _ => None,
        }
    }

    /// What a shell reports as `$?`: the exit code, or 128 + the signal.
    pub fn shell_code(self) -> u32 {
        match self {
            WaitStatus::Exited(code) => u32::from(code),
            WaitStatus::Signaled(signal) | WaitStatus::Stopped(signal) => 128 + u32::from(signal),
            WaitStatus::Continued => 0,
        }
    }

    /// `waitid`'s `si_code` and `si_status` for this status.
    pub fn child_code_and_value(self) -> (u32, u32) {
        use child_codes::*;
        match self {
            WaitStatus::Exited(code) => (CLD_EXITED, u32::from(code)),
            WaitStatus::Signaled(signal) => (CLD_KILLED, u32::from(signal)),
            WaitStatus::Stopped(signal) => (CLD_STOPPED, u32::from(signal)),
            WaitStatus::Continued => (CLD_CONTINUED, 18),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_linuxs() {
        // As <sys/wait.h> decodes them: WEXITSTATUS = (w >> 8) & 0xff,
        // WTERMSIG = w & 0x7f, WSTOPSIG = (w >> 8) & 0xff with w & 0xff == 0x7f.
        assert_eq!(WaitStatus::exited(42).encode(), 0x2a00);
        assert_eq!(WaitStatus::exited(256 + 3).encode(), 0x0300);
        assert_eq!(WaitStatus::Signaled(9).encode(), 9);
        assert_eq!(WaitStatus::Stopped(19).encode(), 0x137f);
        assert_eq!(WaitStatus::Continued.encode(), 0xffff);
    }

    #[test]
    fn every_status_reads_back_and_bad_words_are_none() {
        for status in [WaitStatus::Exited(0), WaitStatus::Exited(255), WaitStatus::Signaled(1), WaitStatus::Signaled(64), WaitStatus::Stopped(20), WaitStatus::Continued] {
            assert_eq!(WaitStatus::decode(status.encode()), Some(status));
        }
        assert_eq!(WaitStatus::decode(0x1_0000), None);
        assert_eq!(WaitStatus::decode(0x0109), None, "a signal with high bits set");
    }

    #[test]
    fn shells_and_waitid_see_what_linux_gives() {
        assert_eq!(WaitStatus::Signaled(15).shell_code(), 143);
        assert_eq!(WaitStatus::exited(7).shell_code(), 7);
        assert_eq!(WaitStatus::Signaled(9).child_code_and_value(), (child_codes::CLD_KILLED, 9));
        assert_eq!(WaitStatus::exited(3).child_code_and_value(), (child_codes::CLD_EXITED, 3));
    }
}
