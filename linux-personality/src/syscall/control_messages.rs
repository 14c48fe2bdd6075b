//! Control messages (`struct cmsghdr` chains) as `sendmsg` gives them and
//! `recvmsg` returns them, with Linux's rules: a message shorter than its
//! header or running past the buffer is EINVAL; a received one that does
//! not fit is cut short, its length saying how much is there, and
//! `MSG_CTRUNC` set (as Linux's `put_cmsg`). What the messages mean is
//! the callers' (`sockets.rs` for `SOL_SOCKET`, `inet_control.rs` for the
//! IP levels).
//!
//! Must not read past the chain it was given, nor write past `room`.

use alloc::vec::Vec;

use super::Call;
use linux_abi::Errno;

/// `sizeof(struct cmsghdr)`: length (8), level (4), type (4).
pub(super) const CONTROL_HEADER: usize = 16;
/// `MSG_CTRUNC`: a control message did not fit.
pub(super) const MSG_CTRUNC: u32 = 0x8;
/// The most control bytes a `sendmsg` may pass (Linux's `optmem_max`-like
/// bound: more is ENOBUFS).
const LARGEST_CONTROL: usize = 64 * 1024;

/// One control message of a `sendmsg`.
pub(super) struct ControlMessage<'a> {
    pub(super) level: u64,
    pub(super) kind: u32,
    pub(super) data: &'a [u8],
}

impl ControlMessage<'_> {
    /// Its data as 32-bit words (descriptors, credentials), a partial
    /// last word left out.
    pub(super) fn words(&self) -> impl Iterator<Item = u32> + '_ {
        self.data.chunks_exact(4).map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
    }

    /// Its data as a C `int`, if it is exactly one (EINVAL otherwise).
    pub(super) fn int(&self) -> Result<i32, Errno> {
        let bytes: [u8; 4] = self.data.try_into().map_err(|_| Errno::EINVAL)?;
        Ok(i32::from_le_bytes(bytes))
    }
}

/// The `length` control bytes at `address`, read from the caller.
pub(super) fn read_control(call: &Call<'_>, address: u64, length: usize) -> Result<Vec<u8>, Errno> {
    if length > LARGEST_CONTROL {
        return Err(Errno::ENOBUFS);
    }
    let mut control = Vec::new();
    control.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    control.resize(length, 0);
    call.read_in(address, &mut control)?;
    Ok(control)
}

/// The messages of the chain `control`, in order.
pub(super) fn messages(control: &[u8]) -> Result<Vec<ControlMessage<'_>>, Errno> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at + CONTROL_HEADER <= control.len() {
        let field = |offset: usize, size: usize| control[at + offset..at + offset + size].iter().rev().fold(0u64, |value, byte| value << 8 | u64::from(*byte));
        let (length, level, kind) = (field(0, 8) as usize, field(8, 4), field(12, 4) as u32);
        if length < CONTROL_HEADER || length > control.len() - at {
            return Err(Errno::EINVAL);
        }
        messages.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        messages.push(ControlMessage { level, kind, data: &control[at + CONTROL_HEADER..at + length] });
        at = at.saturating_add(length.next_multiple_of(8));
    }
    Ok(messages)
}

/// Appends a control message (`level`, `kind`, `payload`) to `control`,
/// within `room` bytes in all: cut short when it does not fit, its length
/// field saying what is there, and `MSG_CTRUNC` returned; padded to 8
/// bytes where there is room. Nothing at all (but `MSG_CTRUNC`) when not
/// even the header fits.
pub(super) fn put(control: &mut Vec<u8>, room: usize, level: u64, kind: u32, payload: &[u8]) -> Result<u32, Errno> {
    let available = room.saturating_sub(control.len());
    if available < CONTROL_HEADER {
        return Ok(MSG_CTRUNC);
    }
    let full = CONTROL_HEADER + payload.len();
    let written = full.min(available);
    control.try_reserve(full.next_multiple_of(8)).map_err(|_| Errno::ENOMEM)?;
    let start = control.len();
    control.extend_from_slice(&(written as u64).to_le_bytes());
    control.extend_from_slice(&(level as u32).to_le_bytes());
    control.extend_from_slice(&kind.to_le_bytes());
    control.extend_from_slice(payload);
    control.truncate(start + written);
    let padded = full.next_multiple_of(8).min(available);
    control.resize(start + padded, 0);
    Ok(if written < full { MSG_CTRUNC } else { 0 })
}
