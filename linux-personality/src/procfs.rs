//! `/proc`, kept as real files and directories of the tree and brought up
//! to date just before any path under `/proc` is resolved: one directory
//! per process (`stat`, `status`, `cmdline`, `comm`), `self` naming the
//! caller's, and `cpuinfo`, `meminfo`, `uptime`, `loadavg`, `stat`,
//! `mounts`, `version`.
//!
//! The process facts are gathered first ([`snapshot`], taking process
//! locks) and written into the tree under the tree lock together with the
//! resolution ([`refresh`]), so `self` always names the caller.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use vfs::{Errno, FileKind, InodeId, Tmpfs};

use super::clock::{monotonic_nanoseconds, now};
use super::process;

/// What `/proc` shows of one process.
pub struct ProcessFacts {
    pid: u32,
    parent: u32,
    pgid: u32,
    sid: u32,
    zombie: bool,
    command: Vec<u8>,
    arguments: Vec<u8>,
}

/// The facts of every process, gathered outside the tree lock.
pub fn snapshot() -> Vec<ProcessFacts> {
    process::all()
        .iter()
        .map(|process| {
            let state = process.state();
            ProcessFacts {
                pid: process.pid,
                parent: state.parent,
                pgid: state.pgid,
                sid: state.sid,
                zombie: state.exit_status.is_some(),
                command: state.command.clone(),
                arguments: state.arguments.clone(),
            }
        })
        .collect()
}

/// Whether `path` (resolved from `start`) may lead into `/proc`.
pub fn concerns(path: &[u8]) -> bool {
    path.starts_with(b"/proc")
}

/// Brings `/proc` up to date for a caller with pid `caller`.
pub fn refresh(tree: &mut Tmpfs, facts: &[ProcessFacts], caller: u32) -> Result<(), Errno> {
    let root = tree.root();
    let proc = match tree.child_of(root, b"proc") {
        Some(proc) => proc,
        None => tree.create(root, b"proc", FileKind::Directory, 0o555, now())?,
    };
    // Directories of processes that are gone go first.
    for entry in tree.list(proc)? {
        let Some(pid) = parse_pid(&entry.name) else { continue };
        if !facts.iter().any(|fact| fact.pid == pid) {
            for file in tree.list(entry.inode)? {
                if file.name != b"." && file.name != b".." {
                    tree.unlink(entry.inode, &file.name, now())?;
                }
            }
            tree.rmdir(proc, &entry.name, now())?;
        }
    }
    for fact in facts {
        let name = format!("{}", fact.pid);
        let directory = match tree.child_of(proc, name.as_bytes()) {
            Some(directory) => directory,
            None => tree.create(proc, name.as_bytes(), FileKind::Directory, 0o555, now())?,
        };
        put(tree, directory, "stat", process_stat(fact).as_bytes())?;
        put(tree, directory, "status", process_status(fact).as_bytes())?;
        let mut cmdline = fact.arguments.clone();
        if !cmdline.is_empty() {
            cmdline.push(0);
        }
        put(tree, directory, "cmdline", &cmdline)?;
        let mut comm = fact.command.clone();
        comm.push(b'\n');
        put(tree, directory, "comm", &comm)?;
    }
    if tree.child_of(proc, b"self").is_some() {
        tree.unlink(proc, b"self", now())?;
    }
    tree.symlink(proc, b"self", format!("{caller}").as_bytes(), now())?;
    put(tree, proc, "uptime", uptime().as_bytes())?;
    put(tree, proc, "meminfo", meminfo().as_bytes())?;
    put(tree, proc, "cpuinfo", cpuinfo().as_bytes())?;
    put(tree, proc, "loadavg", format!("0.00 0.00 0.00 1/{} {}\n", facts.len(), facts.iter().map(|fact| fact.pid).max().unwrap_or(1)).as_bytes())?;
    put(tree, proc, "stat", system_stat(facts).as_bytes())?;
    put(tree, proc, "mounts", b"rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\n")?;
    put(tree, proc, "version", format!("Linux version 6.1.0-lamina (Lamina {}) #1 SMP\n", env!("CARGO_PKG_VERSION")).as_bytes())?;
    Ok(())
}

fn parse_pid(name: &[u8]) -> Option<u32> {
    core::str::from_utf8(name).ok()?.parse().ok()
}

/// Replaces the contents of file `name` in `directory` with `contents`.
fn put(tree: &mut Tmpfs, directory: InodeId, name: &str, contents: &[u8]) -> Result<(), Errno> {
    let file = match tree.child_of(directory, name.as_bytes()) {
        Some(file) => file,
        None => tree.create(directory, name.as_bytes(), FileKind::Regular, 0o444, now())?,
    };
    tree.truncate(file, 0, now())?;
    tree.write(file, 0, contents, now())?;
    Ok(())
}

fn ticks() -> u64 {
    monotonic_nanoseconds() / 10_000_000
}

fn process_stat(fact: &ProcessFacts) -> String {
    let state = if fact.zombie { 'Z' } else { 'S' };
    let command = String::from_utf8_lossy(&fact.command);
    // Fields 1..=52 of proc(5); times and memory are not accounted yet.
    let mut text = format!("{} ({}) {} {} {} {} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0", fact.pid, command, state, fact.parent, fact.pgid, fact.sid);
    for _ in 24..=52 {
        text.push_str(" 0");
    }
    text.push('\n');
    text
}

fn process_status(fact: &ProcessFacts) -> String {
    let state = if fact.zombie { "Z (zombie)" } else { "S (sleeping)" };
    format!(
        "Name:\t{}\nState:\t{}\nTgid:\t{}\nPid:\t{}\nPPid:\t{}\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t1\n",
        String::from_utf8_lossy(&fact.command),
        state,
        fact.pid,
        fact.pid,
        fact.parent
    )
}

fn uptime() -> String {
    let hundredths = ticks();
    format!("{}.{:02} 0.00\n", hundredths / 100, hundredths % 100)
}

fn meminfo() -> String {
    let free_kib = kernel_objects::physical_memory::free_frames() * 4;
    let heap_kib = machine::heap::usage().0 as u64 / 1024;
    let total_kib = free_kib + heap_kib;
    format!(
        "MemTotal:       {total_kib:>8} kB\nMemFree:        {free_kib:>8} kB\nMemAvailable:   {free_kib:>8} kB\nBuffers:               0 kB\nCached:                0 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n"
    )
}

fn cpuinfo() -> String {
    let brand = brand_string();
    let mut text = String::new();
    for cpu in 0..machine::percpu::online_count() {
        text.push_str(&format!("processor\t: {cpu}\nvendor_id\t: {}\nmodel name\t: {brand}\ncpu MHz\t\t: {}\n\n", vendor(), machine::timer::tsc_per_millisecond() / 1000));
    }
    text
}

fn vendor() -> String {
    let leaf = machine::cpu::cpuid(0, 0);
    let bytes: Vec<u8> = [leaf.ebx, leaf.edx, leaf.ecx].iter().flat_map(|word| word.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn brand_string() -> String {
    let mut bytes = Vec::new();
    for leaf in 0x8000_0002u32..=0x8000_0004 {
        let result = machine::cpu::cpuid(leaf, 0);
        for word in [result.eax, result.ebx, result.ecx, result.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim().into()
}

fn system_stat(facts: &[ProcessFacts]) -> String {
    let idle = ticks();
    let mut text = format!("cpu  0 0 0 {idle} 0 0 0 0 0 0\n");
    for cpu in 0..machine::percpu::online_count() {
        text.push_str(&format!("cpu{cpu} 0 0 0 {idle} 0 0 0 0 0 0\n"));
    }
    let boot = now().seconds.saturating_sub(monotonic_nanoseconds() / 1_000_000_000);
    text.push_str(&format!("btime {boot}\nprocesses {}\nprocs_running 1\nprocs_blocked 0\n", facts.len()));
    text
}
