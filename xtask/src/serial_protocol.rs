//! What the kernel prints on its serial port, as the host tools read it.

/// The monitor's prompt, printed once the kernel is up.
pub const PROMPT: &str = "lamina> ";
/// Start of the line a failed boot prints (e.g. with too little memory).
pub const BOOT_FAILED: &str = "lamina: boot failed:";
/// Typed at the prompt to end the session; QEMU exits with 0 or 33.
pub const POWEROFF: &str = "poweroff\n";

/// The start of the boot line `lamina: N CPUs online, M MiB memory`.
pub fn cpus_online(cpu_count: u32) -> String {
    format!("lamina: {cpu_count} CPUs online")
}

/// True if some line of `log` contains `text`. (Not "starts with": under
/// GRUB, terminal escape sequences may precede the kernel's first words.)
pub fn has_line_containing(log: &str, text: &str) -> bool {
    log.lines().any(|line| line.contains(text))
}

/// The counts from the in-kernel test runner's last line
/// `ktest: N passed, M failed`, if there is one.
pub fn ktest_counts(log: &str) -> Option<(u32, u32)> {
    log.lines().rev().find_map(|line| {
        let counts = line.trim_end_matches('\r').strip_prefix("ktest: ")?;
        let (passed, failed) = counts.split_once(" passed, ")?;
        Some((
            passed.parse().ok()?,
            failed.strip_suffix(" failed")?.parse().ok()?,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_is_found_among_test_lines() {
        let log = "ktest: frames::allocates ... ok\r\nktest: spinlock ... FAILED: x\r\nktest: 41 passed, 1 failed\r\n";
        assert_eq!(ktest_counts(log), Some((41, 1)));
        assert_eq!(ktest_counts("ktest: a ... ok\n"), None);
        assert_eq!(ktest_counts("ktest: x passed, 0 failed\n"), None);
    }

    #[test]
    fn the_cpu_line_names_the_exact_count() {
        let log = "booting\r\n\x1b[0mlamina: 4 CPUs online, 256 MiB memory\r\nlamina> ";
        assert!(has_line_containing(log, &cpus_online(4)));
        assert!(!has_line_containing(log, &cpus_online(2)));
        assert!(!has_line_containing(
            "lamina: 14 CPUs online",
            &cpus_online(4)
        ));
    }
}
