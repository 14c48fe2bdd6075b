//! `capget(2)`: a process's POSIX capability sets, as Linux reports them
//! for a system without file capabilities: every capability Linux 6.1
//! knows (0–40) effective and permitted for effective uid 0, none for any
//! other, none inheritable. Header versions 1 (one 32-bit word per set),
//! 2 and 3 (two words); an unknown version is answered with version 3 in
//! the header and EINVAL (0 when no data buffer was given, as a library
//! probing for the version expects). `capset` is not implemented (ENOSYS).
//!
//! Must not be confused with Lamina's own capabilities (slots and rights,
//! the native calls): these are Linux's privilege bits.

use super::{value, Call, CallResult};
use crate::process;
use linux_abi::Errno;

const VERSION_1: u32 = 0x1998_0330;
const VERSION_2: u32 = 0x2007_1026;
const VERSION_3: u32 = 0x2008_0522;
/// Capabilities 0–40 (CAP_CHECKPOINT_RESTORE is the last in Linux 6.1).
const ALL_CAPABILITIES: u64 = (1 << 41) - 1;

/// `capget(header, data)`.
pub fn capget(call: &mut Call<'_>) -> CallResult {
    let (header, data) = (call.argument(0), call.argument(1));
    let mut fields = [0u8; 8];
    call.read_in(header, &mut fields)?;
    let version = u32::from_le_bytes([fields[0], fields[1], fields[2], fields[3]]);
    let words = match version {
        VERSION_1 => 1,
        VERSION_2 | VERSION_3 => 2,
        _ => {
            call.write_out(header, &VERSION_3.to_le_bytes())?;
            return if data == 0 { value(0) } else { Err(Errno::EINVAL) };
        }
    };
    if data == 0 {
        return value(0);
    }
    let pid = i32::from_le_bytes([fields[4], fields[5], fields[6], fields[7]]);
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let root = if pid == 0 || pid as u32 == call.pid() {
        call.process.state().credentials.user.effective == 0
    } else {
        let target = process::find(pid as u32).ok_or(Errno::ESRCH)?;
        let effective = target.state().credentials.user.effective;
        effective == 0
    };
    let sets = if root { ALL_CAPABILITIES } else { 0 };
    // Per word: effective, permitted, inheritable (u32 each).
    let mut bytes = [0u8; 24];
    for word in 0..words {
        let bits = (sets >> (32 * word)) as u32;
        bytes[12 * word..12 * word + 4].copy_from_slice(&bits.to_le_bytes());
        bytes[12 * word + 4..12 * word + 8].copy_from_slice(&bits.to_le_bytes());
    }
    call.write_out(data, &bytes[..12 * words])?;
    value(0)
}
