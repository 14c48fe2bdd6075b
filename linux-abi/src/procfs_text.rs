//! The text of `/proc` files as Linux writes them (`proc(5)`): a process's
//! `stat` and `status`, and the system's `uptime`, `meminfo`, `cpuinfo`,
//! `loadavg`, `stat`, `mounts` and `version`. Plain formatting of facts the
//! personality gathers (`procfs.rs` puts the text into the tree), so that
//! programs like `ps`, `top` and `free` parse what they expect.
//!
//! Must never panic on any fact (a command name is any bytes).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// What `/proc/<pid>/` shows of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    /// Process id.
    pub pid: u32,
    /// Parent's pid.
    pub parent: u32,
    /// Process group.
    pub pgid: u32,
    /// Session.
    pub sid: u32,
    /// Exited, not yet reaped.
    pub zombie: bool,
    /// The program's name (`comm`).
    pub command: alloc::vec::Vec<u8>,
    /// Its threads' CPU time.
    pub times: crate::cpu_times::CpuTimes,
    /// Its waited-for children's (theirs and their own children's).
    pub children_times: crate::cpu_times::CpuTimes,
    /// How many threads it has.
    pub threads: u32,
    /// Its nice value (-20..=19).
    pub nice: i32,
    /// The CPU group (kernel instance, issue 20) it lives in.
    pub group: u32,
    /// The CPUs its main thread may run on (bit n: CPU n).
    pub cpus_allowed: u64,
}

/// `/proc/<pid>/stat`: the 52 fields of `proc(5)`, CPU times in clock
/// ticks; memory sizes are not reported yet (zero).
pub fn process_stat(facts: &ProcessFacts) -> String {
    let state = if facts.zombie { 'Z' } else { 'S' };
    let command = String::from_utf8_lossy(&facts.command);
    // Fields 1–23: pid (comm) state ppid pgrp session tty_nr tpgid flags
    // minflt cminflt majflt cmajflt utime stime cutime cstime priority
    // nice num_threads itrealvalue starttime vsize.
    let (user, system) = facts.times.ticks();
    let (children_user, children_system) = facts.children_times.ticks();
    let mut text = format!(
        "{} ({}) {} {} {} {} 0 -1 0 0 0 0 0 {} {} {} {} {} {} {} 0 0 0",
        facts.pid,
        command,
        state,
        facts.parent,
        facts.pgid,
        facts.sid,
        user,
        system,
        children_user,
        children_system,
        20 + facts.nice,
        facts.nice,
        facts.threads.max(1)
    );
    for _ in 24..=52 {
        text.push_str(" 0");
    }
    text.push('\n');
    text
}

/// `/proc/<pid>/status`: the lines `ps` and shells read.
pub fn process_status(facts: &ProcessFacts) -> String {
    let state = if facts.zombie { "Z (zombie)" } else { "S (sleeping)" };
    format!(
        "Name:\t{}\nState:\t{}\nTgid:\t{}\nPid:\t{}\nPPid:\t{}\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t{}\nCpus_allowed_list:\t{}\nGroup:\t{}\n",
        String::from_utf8_lossy(&facts.command),
        state,
        facts.pid,
        facts.pid,
        facts.parent,
        facts.threads.max(1),
        cpu_list(facts.cpus_allowed),
        facts.group
    )
}

/// A CPU mask as Linux's list format: runs joined by commas (`0-1,4`).
pub fn cpu_list(mask: u64) -> String {
    let mut text = String::new();
    let mut cpu = 0;
    while cpu < 64 {
        if mask >> cpu & 1 == 0 {
            cpu += 1;
            continue;
        }
        let first = cpu;
        while cpu < 64 && mask >> cpu & 1 == 1 {
            cpu += 1;
        }
        if !text.is_empty() {
            text.push(',');
        }
        match cpu - 1 - first {
            0 => text.push_str(&format!("{first}")),
            _ => text.push_str(&format!("{first}-{}", cpu - 1)),
        }
    }
    text
}

/// `/proc/uptime` after `hundredths` of a second (idle time not counted).
pub fn uptime(hundredths: u64) -> String {
    format!("{}.{:02} 0.00\n", hundredths / 100, hundredths % 100)
}

/// One row of `/proc/interrupts`: its name, a count per CPU, what it is.
pub struct InterruptRow<'a> {
    /// Linux's short name (`LOC`, `RES`, `TLB`).
    pub name: &'a str,
    /// The count of CPU 0, 1, …
    pub per_cpu: Vec<u64>,
    /// What it counts, after the columns.
    pub description: &'a str,
}

/// `/proc/interrupts` as Linux lays it out: a `CPUn` header, then each
/// row's name, its counts in columns 11 wide, and what it counts.
pub fn interrupts(cpus: usize, rows: &[InterruptRow<'_>]) -> String {
    let mut text = String::from("     ");
    for cpu in 0..cpus {
        text.push_str(&format!(" {:>10}", format!("CPU{cpu}")));
    }
    text.push('\n');
    for row in rows {
        text.push_str(&format!("{:>4}:", row.name));
        for cpu in 0..cpus {
            text.push_str(&format!(" {:>10}", row.per_cpu.get(cpu).copied().unwrap_or(0)));
        }
        text.push_str(&format!("   {}\n", row.description));
    }
    text
}

/// `/proc/meminfo` with `total_kib`, `free_kib` and `cached_kib` of file
/// pages in the page cache (available: free, plus the cache, which gives
/// its pages back when memory runs short).
pub fn meminfo(total_kib: u64, free_kib: u64, cached_kib: u64) -> String {
    let available_kib = free_kib + cached_kib;
    format!(
        "MemTotal:       {total_kib:>8} kB\nMemFree:        {free_kib:>8} kB\nMemAvailable:   {available_kib:>8} kB\nBuffers:               0 kB\nCached:         {cached_kib:>8} kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n"
    )
}

/// `/proc/cpuinfo` for `cpus` processors of one kind.
pub fn cpuinfo(cpus: usize, vendor: &str, model: &str, megahertz: u64) -> String {
    let mut text = String::new();
    for cpu in 0..cpus {
        text.push_str(&format!("processor\t: {cpu}\nvendor_id\t: {vendor}\nmodel name\t: {model}\ncpu MHz\t\t: {megahertz}\n\n"));
    }
    text
}

/// `/proc/loadavg` with `processes` processes, the newest `last_pid`.
pub fn loadavg(processes: usize, last_pid: u32) -> String {
    format!("0.00 0.00 0.00 1/{processes} {last_pid}\n")
}

/// `/proc/stat`: every CPU idle for `idle_ticks`, booted at `boot_seconds`
/// since the epoch, `processes` processes made.
pub fn system_stat(cpus: usize, idle_ticks: u64, boot_seconds: u64, processes: usize) -> String {
    let mut text = format!("cpu  0 0 0 {idle_ticks} 0 0 0 0 0 0\n");
    for cpu in 0..cpus {
        text.push_str(&format!("cpu{cpu} 0 0 0 {idle_ticks} 0 0 0 0 0 0\n"));
    }
    text.push_str(&format!("btime {boot_seconds}\nprocesses {processes}\nprocs_running 1\nprocs_blocked 0\n"));
    text
}

/// `/proc/mounts`: Lamina's one tree, as the three mounts programs expect.
pub const MOUNTS: &str = "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\n";

/// `/proc/version` for Lamina `version`.
pub fn version(lamina_version: &str) -> String {
    format!("Linux version 6.1.0-lamina (Lamina {lamina_version}) #1 SMP\n")
}

/// Whose descriptor a `/proc/…/fd/N` path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorOwner {
    /// `/proc/self/fd/N` or `/proc/thread-self/fd/N`: the caller's.
    Caller,
    /// `/proc/<pid>/fd/N`.
    Process(u32),
}

/// The descriptor a path of the form `/proc/{self,thread-self,<pid>}/fd/N`
/// names (Linux's "magic links": opening one opens that descriptor's
/// file, whatever its name), or `None` for any other path.
pub fn descriptor_link(path: &[u8]) -> Option<(DescriptorOwner, u32)> {
    let rest = path.strip_prefix(b"/proc/")?;
    let slash = rest.iter().position(|byte| *byte == b'/')?;
    let (who, rest) = (&rest[..slash], &rest[slash + 1..]);
    let number = rest.strip_prefix(b"fd/")?;
    let decimal = |text: &[u8]| -> Option<u32> {
        if text.is_empty() || (text.len() > 1 && text[0] == b'0') {
            return None;
        }
        core::str::from_utf8(text).ok()?.parse().ok()
    };
    let owner = match who {
        b"self" | b"thread-self" => DescriptorOwner::Caller,
        pid => DescriptorOwner::Process(decimal(pid)?),
    };
    Some((owner, decimal(number)?))
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    #[test]
    fn interrupts_are_laid_out_as_linux_does() {
        let rows = [
            super::InterruptRow { name: "LOC", per_cpu: vec![1234, 5], description: "Local timer interrupts" },
            super::InterruptRow { name: "TLB", per_cpu: vec![0], description: "TLB shootdowns" },
        ];
        let text = super::interrupts(2, &rows);
        let lines: alloc::vec::Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "            CPU0       CPU1");
        assert_eq!(lines[1], " LOC:       1234          5   Local timer interrupts");
        // A CPU without a count shows 0.
        assert_eq!(lines[2], " TLB:          0          0   TLB shootdowns");
    }

    #[test]
    fn descriptor_links_are_recognised_exactly() {
        assert_eq!(descriptor_link(b"/proc/self/fd/3"), Some((DescriptorOwner::Caller, 3)));
        assert_eq!(descriptor_link(b"/proc/thread-self/fd/0"), Some((DescriptorOwner::Caller, 0)));
        assert_eq!(descriptor_link(b"/proc/42/fd/17"), Some((DescriptorOwner::Process(42), 17)));
        for other in [&b"/proc/self/fd"[..], b"/proc/self/fd/", b"/proc/self/fd/3/x", b"/proc/self/fd/03", b"/proc/self/fdinfo/3", b"/proc/x/fd/1", b"/tmp/proc/self/fd/1", b"/proc/self/fd/-1"] {
            assert_eq!(descriptor_link(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    use super::*;

    fn facts() -> ProcessFacts {
        ProcessFacts {
            pid: 42,
            parent: 1,
            pgid: 42,
            sid: 7,
            zombie: false,
            command: b"my prog)".to_vec(),
            times: crate::cpu_times::CpuTimes { user: 1_230_000_000, system: 40_000_000 },
            children_times: crate::cpu_times::CpuTimes { user: 50_000_000, system: 0 },
            threads: 3,
            nice: 5,
            group: 1,
            cpus_allowed: 0b1100,
        }
    }

    #[test]
    fn a_process_stat_has_the_52_fields_of_proc5() {
        let text = process_stat(&facts());
        assert!(text.ends_with('\n'));
        // As ps parses it: the command is between the first '(' and the last ')'.
        let (head, rest) = text.split_once(" (").unwrap();
        let (command, tail) = rest.rsplit_once(") ").unwrap();
        assert_eq!((head, command), ("42", "my prog)"));
        let fields: std::vec::Vec<&str> = tail.split_whitespace().collect();
        assert_eq!(fields.len(), 52 - 2, "fields 3..=52");
        assert_eq!(&fields[..4], &["S", "1", "42", "7"], "state, ppid, pgrp, session");
        assert_eq!(&fields[18 - 3..20 - 3], &["25", "5"], "priority and nice are fields 18 and 19");
        assert_eq!(fields[20 - 3], "3", "num_threads is field 20");
        assert_eq!(&fields[14 - 3..18 - 3], &["123", "4", "5", "0"], "utime stime cutime cstime in ticks");
        let zombie = process_stat(&ProcessFacts { zombie: true, ..facts() });
        assert!(zombie.contains(") Z 1 "));
    }

    #[test]
    fn status_and_system_files_read_as_linux_writes_them() {
        let status = process_status(&facts());
        assert!(status.starts_with("Name:\tmy prog)\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nPPid:\t1\n"));
        assert!(status.ends_with("Threads:\t3\nCpus_allowed_list:\t2-3\nGroup:\t1\n"), "{status}");
        assert_eq!(cpu_list(0b1_0111), "0-2,4");
        assert_eq!(cpu_list(0), "");
        assert_eq!(cpu_list(u64::MAX), "0-63");
        assert_eq!(uptime(12345), "123.45 0.00\n");
        assert_eq!(uptime(5), "0.05 0.00\n");
        let meminfo = meminfo(262144, 1024, 2048);
        assert!(meminfo.starts_with("MemTotal:         262144 kB\nMemFree:            1024 kB\nMemAvailable:       3072 kB\n"), "{meminfo}");
        assert!(meminfo.contains("\nCached:             2048 kB\n"), "{meminfo}");
        let cpuinfo = cpuinfo(2, "AuthenticAMD", "QEMU", 2000);
        assert_eq!(cpuinfo.matches("processor\t: ").count(), 2);
        assert!(cpuinfo.contains("processor\t: 1\nvendor_id\t: AuthenticAMD\n"));
        assert_eq!(loadavg(3, 9), "0.00 0.00 0.00 1/3 9\n");
        let stat = system_stat(2, 500, 1_700_000_000, 3);
        assert!(stat.starts_with("cpu  0 0 0 500 0 0 0 0 0 0\ncpu0 "));
        assert!(stat.contains("cpu1 0 0 0 500 0 0 0 0 0 0\nbtime 1700000000\nprocesses 3\n"));
        assert!(version("0.1.0").starts_with("Linux version "));
    }
}
