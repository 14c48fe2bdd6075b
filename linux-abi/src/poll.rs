//! `struct pollfd` and what `poll(2)` reports for one descriptor: the
//! events asked for that hold, plus `POLLHUP` always and `POLLNVAL` for a
//! descriptor that is not open (a negative one is skipped).
//!
//! Must never panic on any entry.

use crate::user_values::UserValue;
use crate::Errno;

/// `POLLIN`.
pub const POLLIN: u16 = 0x1;
/// `POLLOUT`.
pub const POLLOUT: u16 = 0x4;
/// `POLLHUP`: reported whether asked for or not.
pub const POLLHUP: u16 = 0x10;
/// An error is pending (always reported).
pub const POLLERR: u16 = 0x8;
/// `POLLNVAL`: the descriptor is not open.
pub const POLLNVAL: u16 = 0x20;
/// `POLLRDNORM`.
pub const POLLRDNORM: u16 = 0x40;
/// `POLLWRNORM`.
pub const POLLWRNORM: u16 = 0x100;

/// One `struct pollfd` (8 bytes: fd, events, revents).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollFd {
    /// The descriptor; negative ones are skipped.
    pub fd: i32,
    /// What the caller waits for.
    pub events: u16,
    /// What holds (filled by the kernel).
    pub revents: u16,
}

impl UserValue for PollFd {
    const SIZE: usize = 8;
    fn decode(bytes: &[u8]) -> Result<Self, Errno> {
        // One bounds check, then fixed offsets (a `poll` decodes thousands).
        let raw: &[u8; 8] = bytes.get(..8).and_then(|raw| raw.try_into().ok()).ok_or(Errno::EINVAL)?;
        Ok(Self {
            fd: i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
            events: u16::from_le_bytes([raw[4], raw[5]]),
            revents: u16::from_le_bytes([raw[6], raw[7]]),
        })
    }
    fn encode(&self, bytes: &mut [u8]) {
        let mut raw = [0u8; 8];
        raw[..4].copy_from_slice(&self.fd.to_le_bytes());
        raw[4..6].copy_from_slice(&self.events.to_le_bytes());
        raw[6..].copy_from_slice(&self.revents.to_le_bytes());
        bytes[..8].copy_from_slice(&raw);
    }
}

/// What an open descriptor can do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Readiness {
    /// A read would not wait.
    pub readable: bool,
    /// A write would not wait.
    pub writable: bool,
    /// The other end is gone.
    pub hung_up: bool,
    /// An error is pending (a pipe's write end with no reader left):
    /// `POLLERR`, always reported; `select` counts it readable and writable.
    pub error: bool,
}

impl PollFd {
    /// `revents` for this entry given its descriptor's readiness (`None`:
    /// the descriptor is not open).
    pub fn revents_for(&self, readiness: Option<Readiness>) -> u16 {
        if self.fd < 0 {
            return 0;
        }
        let Some(readiness) = readiness else { return POLLNVAL };
        let mut bits = 0;
        if readiness.readable {
            bits |= self.events & (POLLIN | POLLRDNORM);
        }
        if readiness.writable {
            bits |= self.events & (POLLOUT | POLLWRNORM);
        }
        if readiness.hung_up {
            bits |= POLLHUP;
        }
        if readiness.error {
            bits |= POLLERR;
        }
        bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_in_the_uapi_layout() {
        let entry = PollFd { fd: -3, events: POLLIN | POLLOUT, revents: POLLHUP };
        let mut bytes = [0u8; 8];
        entry.encode(&mut bytes);
        assert_eq!(bytes, [0xfd, 0xff, 0xff, 0xff, 0x05, 0, 0x10, 0]);
        assert_eq!(PollFd::decode(&bytes), Ok(entry));
    }

    #[test]
    fn only_what_was_asked_for_is_reported_but_hangup_error_and_nval_always() {
        let reader = PollFd { fd: 0, events: POLLIN, revents: 0 };
        let both = Readiness { readable: true, writable: true, ..Readiness::default() };
        assert_eq!(reader.revents_for(Some(both)), POLLIN);
        assert_eq!(reader.revents_for(Some(Readiness { hung_up: true, ..Readiness::default() })), POLLHUP);
        assert_eq!(reader.revents_for(None), POLLNVAL);
        assert_eq!(PollFd { fd: -1, ..reader }.revents_for(None), 0, "negative descriptors are skipped");
        let writer = PollFd { fd: 1, events: POLLOUT | POLLWRNORM, revents: 0 };
        assert_eq!(writer.revents_for(Some(both)), POLLOUT | POLLWRNORM);
        let broken = Readiness { writable: true, error: true, ..Readiness::default() };
        assert_eq!(writer.revents_for(Some(broken)), POLLOUT | POLLWRNORM | POLLERR);
        assert_eq!(reader.revents_for(Some(broken)), POLLERR, "an error is reported unasked");
    }
}
