//! Where the vDSO and its data page sit in every program, and what the
//! page holds: the layout `linux-objects/vdso/vdso.c` reads (its `struct
//! vvar`) and the kernel fills. The uptime the vDSO computes from the
//! time-stamp counter is [`uptime_from`], which equals the kernel's own
//! formula (`machine::timer::uptime_nanoseconds`) without 128-bit
//! arithmetic — the host test below checks that they agree.

/// The most pages the image may take (checked when the kernel installs it).
pub const VDSO_MAX_PAGES: u64 = 4;
/// Pages the vDSO's region takes: the data page, then room for the image.
pub const REGION_PAGES: u64 = 1 + VDSO_MAX_PAGES;

/// Where the data page (read-only to user space) goes in a program whose
/// mmap area's top is `mmap_top` (`address_layout`): the area's first
/// mapping, as Linux maps its vDSO in the mmap area, so it moves with the
/// area's randomisation. The image follows the data page; its address is
/// `AT_SYSINFO_EHDR`, and new mappings go below the data page.
pub const fn data_page_address(mmap_top: u64) -> u64 {
    mmap_top - REGION_PAGES * 4096
}

/// "LAMINAVV": the page is filled.
pub const VVAR_MAGIC: u64 = 0x4c41_4d49_4e41_5656;
/// Byte offset of the magic word.
pub const MAGIC_OFFSET: usize = 0;
/// Byte offset of the TSC's reading at uptime 0.
pub const BOOT_TSC_OFFSET: usize = 8;
/// Byte offset of the TSC cycles per millisecond.
pub const TSC_PER_MS_OFFSET: usize = 16;
/// `CLOCK_REALTIME` at uptime 0 (ns); the one word that changes
/// (`settimeofday`, `clock_settime`), always stored whole.
pub const BOOT_EPOCH_OFFSET: u64 = 24;

/// The page's first 24 bytes: magic, boot TSC and TSC rate (the epoch is
/// stored on its own).
pub fn fixed_words(boot_tsc: u64, tsc_per_ms: u64) -> [u8; 24] {
    let mut words = [0u8; 24];
    for (offset, value) in [(MAGIC_OFFSET, VVAR_MAGIC), (BOOT_TSC_OFFSET, boot_tsc), (TSC_PER_MS_OFFSET, tsc_per_ms)] {
        words[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
    }
    words
}

/// Nanoseconds since boot at TSC reading `now`, as the vDSO computes them:
/// `elapsed = ms * per_ms + rest`, so `elapsed * 10^6 / per_ms` is
/// `ms * 10^6 + rest * 10^6 / per_ms` exactly.
pub fn uptime_from(now: u64, boot_tsc: u64, tsc_per_ms: u64) -> u64 {
    let per_ms = tsc_per_ms.max(1);
    let elapsed = now.saturating_sub(boot_tsc);
    (elapsed / per_ms) * 1_000_000 + (elapsed % per_ms) * 1_000_000 / per_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's formula (`machine::timer::uptime_nanoseconds`).
    fn kernel_uptime(now: u64, boot_tsc: u64, tsc_per_ms: u64) -> u64 {
        ((u128::from(now.saturating_sub(boot_tsc)) * 1_000_000) / u128::from(tsc_per_ms.max(1))) as u64
    }

    #[test]
    fn the_vdso_uptime_equals_the_kernels() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..100_000 {
            let per_ms = 1 + next() % 10_000_000; // up to a 10 GHz TSC
            let boot = next() % (1 << 40);
            // Up to ~10 years of uptime at that rate.
            let now = boot + next() % (per_ms * 1000 * 3600 * 24 * 3650);
            assert_eq!(uptime_from(now, boot, per_ms), kernel_uptime(now, boot, per_ms), "now {now} boot {boot} per_ms {per_ms}");
        }
        assert_eq!(uptime_from(5, 10, 1000), 0, "a counter behind the boot reading is uptime 0");
    }

    #[test]
    fn the_fixed_words_are_little_endian_in_order() {
        let words = fixed_words(0x1122, 3_000_000);
        assert_eq!(&words[0..8], b"VVANIMAL", "the magic reads LAMINAVV as a big-endian number");
        assert_eq!(u64::from_le_bytes(words[8..16].try_into().unwrap()), 0x1122);
        assert_eq!(u64::from_le_bytes(words[16..24].try_into().unwrap()), 3_000_000);
    }
}
