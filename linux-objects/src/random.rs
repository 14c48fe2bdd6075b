//! Random bytes for `getrandom`, `/dev/urandom` and `AT_RANDOM`: a
//! ChaCha-free, simple generator (splitmix64 over a counter) seeded from
//! the time-stamp counter and RDRAND when the CPU has it. Good for
//! hash-table seeds and temporary names; not for keys (documented in
//! `docs/syscalls.md`).

use core::sync::atomic::{AtomicU64, Ordering};

static STATE: AtomicU64 = AtomicU64::new(0);

/// Mixes boot-time entropy into the generator.
pub fn seed(entropy: u64) {
    STATE.fetch_xor(entropy ^ 0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
}

fn next() -> u64 {
    let mut value = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed).wrapping_add(0x9E37_79B9_7F4A_7C15);
    value ^= machine::timer::uptime_nanoseconds().rotate_left(17);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// Fills `buffer` with random bytes.
pub fn fill(buffer: &mut [u8]) {
    for chunk in buffer.chunks_mut(8) {
        let bytes = next().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}
