//! `/proc`, kept as real files and directories of the tree and brought up
//! to date just before any path under `/proc` is resolved: one directory
//! per process (`stat`, `status`, `cmdline`, `comm`, `mem` — its memory, opened
//! through `linux-personality` — and `fd` — one link
//! per open descriptor — for the process a path names), `self` naming the
//! caller's, and `cpuinfo`, `meminfo`, `uptime`, `loadavg`, `stat`,
//! `mounts`, `version`, `sys/kernel/{hostname,domainname,ostype,osrelease,randomize_va_space}`,
//! and `net/tcp`, `tcp6`, `udp`, `udp6` (the
//! Internet sockets, as `netstat` reads them).
//!
//! The process facts are gathered first ([`snapshot`], taking process
//! locks) and written into the tree under the tree lock together with the
//! resolution ([`refresh`]), so `self` always names the caller.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use linux_abi::procfs_text;
use vfs::{Errno, FileKind, InodeId, Namespace};

use super::clock::{monotonic_nanoseconds, now};
use super::process;
use super::uts_names::{self, Which};

/// What `/proc` shows of one process: `linux-abi`'s facts (for the text)
/// and its arguments (for `cmdline`).
pub struct ProcessFacts {
    facts: procfs_text::ProcessFacts,
    arguments: Vec<u8>,
}

/// The facts of every process, gathered outside the tree lock; ENOMEM
/// (never a panic) when the kernel heap cannot hold them.
pub fn snapshot() -> Result<Vec<ProcessFacts>, Errno> {
    let processes = process::try_all()?;
    let mut all = Vec::new();
    all.try_reserve_exact(processes.len()).map_err(|_| Errno::ENOMEM)?;
    for process in &processes {
        let (times, threads) = (process.cpu_times(), process.thread_count() as u32);
        let cpus_allowed = process.allowed_cpu_mask(process.pid);
        let state = process.state();
        let facts = ProcessFacts {
            facts: procfs_text::ProcessFacts {
                pid: process.pid,
                parent: state.parent,
                pgid: state.pgid,
                sid: state.sid,
                zombie: state.exit_status.is_some(),
                command: try_copy(&state.command)?,
                times,
                children_times: state.reaped_children,
                threads,
                nice: state.nice,
                group: process.group() as u32,
                cpus_allowed,
            },
            arguments: try_copy(&state.arguments)?,
        };
        all.push(facts);
    }
    Ok(all)
}

fn try_copy(bytes: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut copy = Vec::new();
    copy.try_reserve_exact(bytes.len()).map_err(|_| Errno::ENOMEM)?;
    copy.extend_from_slice(bytes);
    Ok(copy)
}

/// Where a `/proc/<pid>/fd/N` link points, as `readlink` shows it.
pub enum LinkTarget {
    /// A file of the tree: its path, found when the link is written.
    Inode(InodeId),
    /// What has no path: `pipe:[…]`, `socket:[…]`, `anon_inode:[…]`.
    Text(Vec<u8>),
}

/// The open descriptors of process `pid`, for its `fd` directory.
pub struct DescriptorListing {
    /// Whose descriptors.
    pub pid: u32,
    /// Each descriptor's number and link target, in any order.
    pub entries: Vec<(u32, LinkTarget)>,
}

/// Whether `path` (resolved from `start`) may lead into `/proc`.
pub fn concerns(path: &[u8]) -> bool {
    path.starts_with(b"/proc")
}

/// Whether `path` leads into `/proc/net` (whose tables take the network's
/// lock to write: only then are they brought up to date).
pub fn concerns_network(path: &[u8]) -> bool {
    path.starts_with(b"/proc/net")
}

/// The process whose `fd` directory `path` goes into (`/proc/self/fd…`,
/// `/proc/<pid>/fd…`), `caller` standing for `self`.
pub fn descriptor_directory_owner(path: &[u8], caller: u32) -> Option<u32> {
    let (pid, mut rest) = process_path(path, caller)?;
    (rest.next()? == b"fd").then_some(pid)
}

/// The process a path `/proc/<pid>/…` (`self`, `thread-self`: `caller`)
/// names, and the names after it.
fn process_path(path: &[u8], caller: u32) -> Option<(u32, impl Iterator<Item = &[u8]>)> {
    let mut parts = path.split(|&byte| byte == b'/').filter(|part| !part.is_empty());
    if parts.next()? != b"proc" {
        return None;
    }
    let pid = match parts.next()? {
        b"self" | b"thread-self" => caller,
        digits => parse_pid(digits)?,
    };
    Some((pid, parts))
}

/// Brings `/proc` up to date for a caller with pid `caller` resolving
/// `path`, with the `fd` directory of the process `descriptors` lists and,
/// when given, `/proc/net`'s files (name and text). Only what `path`
/// reaches is rewritten (its first name below `/proc`: one process's
/// directory, one file), and whatever is missing; `/proc` itself rewrites
/// all. (Rewriting every process's files and every system file for each
/// lookup made stress-ng's `kill` stressor, which reads `/proc` all the
/// time, run at a tenth of Linux's rate.) Directories of processes that
/// are gone always go.
pub fn refresh(tree: &mut Namespace, path: &[u8], facts: &[ProcessFacts], caller: u32, descriptors: Option<&DescriptorListing>, network: Option<&[(&str, String)]>, scheduler: Option<&str>) -> Result<(), Errno> {
    let root = tree.root();
    let proc = directory(tree, root, b"proc")?;
    let target = first_name(path);
    let target_pid = match target {
        Some(b"self" | b"thread-self") => Some(caller),
        Some(name) => parse_pid(name),
        None => None,
    };
    // Directories of processes that are gone go first.
    for entry in tree.list(proc)? {
        let Some(pid) = parse_pid(&entry.name) else { continue };
        if !facts.iter().any(|fact| fact.facts.pid == pid) {
            empty_directory(tree, entry.inode)?;
            tree.rmdir(proc, &entry.name, now())?;
        }
    }
    for fact in facts {
        let name = format!("{}", fact.facts.pid);
        let (directory, new) = match tree.child_of(proc, name.as_bytes()) {
            Some(directory) => (directory, false),
            None => (tree.create(proc, name.as_bytes(), FileKind::Directory, 0o555, now())?, true),
        };
        if new || target.is_none() || target_pid == Some(fact.facts.pid) {
            write_process_files(tree, directory, fact)?;
        }
        if let Some(listing) = descriptors.filter(|listing| listing.pid == fact.facts.pid) {
            write_descriptor_links(tree, directory, listing)?;
        }
    }
    if tree.child_of(proc, b"self").is_some() {
        tree.unlink(proc, b"self", now())?;
    }
    tree.symlink(proc, b"self", format!("{caller}").as_bytes(), now())?;
    // A system file is written when the path reaches it or it is missing.
    let wanted = |tree: &Namespace, parent: InodeId, name: &str| target.is_none_or(|target| target == name.as_bytes()) || tree.child_of(parent, name.as_bytes()).is_none();
    let cpus = machine::percpu::online_count();
    let last_pid = facts.iter().map(|fact| fact.facts.pid).max().unwrap_or(1);
    if wanted(tree, proc, "uptime") {
        put(tree, proc, "uptime", procfs_text::uptime(ticks()).as_bytes())?;
    }
    if wanted(tree, proc, "meminfo") {
        let free_kib = kernel_objects::physical_memory::free_frames() * 4;
        let heap_kib = machine::heap::usage().0 as u64 / 1024;
        let cached_kib = crate::page_cache::statistics().0 as u64 * 4;
        put(tree, proc, "meminfo", procfs_text::meminfo(free_kib + heap_kib + cached_kib, free_kib, cached_kib).as_bytes())?;
    }
    if wanted(tree, proc, "cpuinfo") {
        put(tree, proc, "cpuinfo", procfs_text::cpuinfo(cpus, &vendor(), &brand_string(), machine::timer::tsc_per_millisecond() / 1000).as_bytes())?;
    }
    if wanted(tree, proc, "loadavg") {
        put(tree, proc, "loadavg", procfs_text::loadavg(facts.len(), last_pid).as_bytes())?;
    }
    if wanted(tree, proc, "stat") {
        let boot = now().seconds.saturating_sub(monotonic_nanoseconds() / 1_000_000_000);
        put(tree, proc, "stat", procfs_text::system_stat(cpus, ticks(), boot, facts.len()).as_bytes())?;
    }
    if wanted(tree, proc, "interrupts") {
        put(tree, proc, "interrupts", interrupts(cpus).as_bytes())?;
    }
    if let Some(scheduler) = scheduler {
        let lamina = directory(tree, proc, b"lamina")?;
        put(tree, lamina, "sched", scheduler.as_bytes())?;
        put(tree, lamina, "groups", kernel_objects::group_kernels::report().as_bytes())?;
    }
    if wanted(tree, proc, "mounts") {
        let mounts = mounts_text(tree)?;
        put(tree, proc, "mounts", &mounts)?;
    }
    if wanted(tree, proc, "version") {
        put(tree, proc, "version", procfs_text::version(env!("CARGO_PKG_VERSION")).as_bytes())?;
    }
    if wanted(tree, proc, "sys") {
        let sys = directory(tree, proc, b"sys")?;
        let kernel = directory(tree, sys, b"kernel")?;
        for (name, text) in [("hostname", uts_names::name(Which::Host)), ("domainname", uts_names::name(Which::Domain))] {
            put(tree, kernel, name, &[text.as_bytes(), b"\n"].concat())?;
        }
        put(tree, kernel, "ostype", b"Linux\n")?;
        put(tree, kernel, "randomize_va_space", format!("{}\n", crate::address_randomization::level()).as_bytes())?;
        put(tree, kernel, "osrelease", &[uts_names::RELEASE, b"\n"].concat())?;
    }
    let net = directory(tree, proc, b"net")?;
    for (name, text) in network.unwrap_or_default() {
        put(tree, net, name, text.as_bytes())?;
    }
    Ok(())
}

/// A process's `stat`, `status`, `cmdline` and `comm`.
fn write_process_files(tree: &mut Namespace, directory: InodeId, fact: &ProcessFacts) -> Result<(), Errno> {
    put(tree, directory, "stat", procfs_text::process_stat(&fact.facts).as_bytes())?;
    put(tree, directory, "status", procfs_text::process_status(&fact.facts).as_bytes())?;
    let mut cmdline = fact.arguments.clone();
    if !cmdline.is_empty() {
        cmdline.push(0);
    }
    put(tree, directory, "cmdline", &cmdline)?;
    let mut comm = fact.facts.command.clone();
    comm.push(b'\n');
    put(tree, directory, "comm", &comm)?;
    // Empty in the tree: opening it reaches the process's memory.
    if tree.child_of(directory, b"mem").is_none() {
        tree.create(directory, b"mem", FileKind::Regular, 0o600, now())?;
    }
    Ok(())
}

/// The process whose memory `path` names (`/proc/<pid>/mem`,
/// `/proc/self/mem`), `caller` standing for `self`.
pub fn memory_file_owner(path: &[u8], caller: u32) -> Option<u32> {
    let (pid, mut rest) = process_path(path, caller)?;
    (rest.next()? == b"mem" && rest.next().is_none()).then_some(pid)
}

/// The first name below `/proc` in `path` (`None`: `/proc` itself).
fn first_name(path: &[u8]) -> Option<&[u8]> {
    path.strip_prefix(b"/proc".as_slice())?.split(|&byte| byte == b'/').find(|part| !part.is_empty())
}

/// `/proc/interrupts`: per CPU, timer ticks, wake IPIs taken and TLB
/// shootdowns served (Linux's LOC, RES and TLB rows).
fn interrupts(cpus: usize) -> String {
    let per_cpu = |count: fn(usize) -> u64| (0..cpus).map(count).collect::<Vec<u64>>();
    let ticks = |cpu| machine::percpu::cpu(cpu).map_or(0, |per_cpu| per_cpu.ticks.load(core::sync::atomic::Ordering::Relaxed));
    procfs_text::interrupts(
        cpus,
        &[
            procfs_text::InterruptRow { name: "LOC", per_cpu: per_cpu(ticks), description: "Local timer interrupts" },
            procfs_text::InterruptRow { name: "RES", per_cpu: per_cpu(sched::wake_ipis_taken), description: "Rescheduling interrupts" },
            procfs_text::InterruptRow { name: "TLB", per_cpu: per_cpu(machine::tlb::served), description: "TLB shootdowns" },
        ],
    )
}

/// Whether `path` leads to `/proc/lamina`, whose reports (`sched`, and
/// `groups`: the CPU groups and their capability kernels) are made only then.
pub fn concerns_scheduler(path: &[u8]) -> bool {
    path.windows(6).any(|window| window == b"lamina")
}

/// `/proc/lamina/sched` (Lamina's own): what each CPU's scheduler holds
/// (running thread, ReadyQ, PendQ, idle, last tick, wake IPIs), as the
/// kernel's stall reports print it, then the caller's threads (park
/// state, home CPU); for a user program that finds itself stuck
/// (`user/tools/signal_race.c`).
pub fn scheduler_report(caller: &process::Process) -> String {
    let mut text: String = sched::report().iter().map(|cpu| format!("{cpu}\n")).collect();
    let cpus = machine::percpu::online_count();
    let waits: Vec<String> = (0..cpus).map(|cpu| format!("{}", machine::tlb::longest_wait_nanoseconds(cpu) / 1000)).collect();
    text.push_str(&format!("longest TLB shootdown wait per CPU (us): {}\n", waits.join(" ")));
    for (tid, thread) in caller.thread_summaries() {
        text.push_str(&format!("tid {tid}: {thread}\n"));
    }
    text
}

/// Directory `name` in `parent`, made if missing.
pub(crate) fn directory(tree: &mut Namespace, parent: InodeId, name: &[u8]) -> Result<InodeId, Errno> {
    match tree.child_of(parent, name) {
        Some(directory) => Ok(directory),
        None => tree.create(parent, name, FileKind::Directory, 0o555, now()),
    }
}

/// `/proc/mounts`: the root (with the boot tree as root, the boot-time
/// file systems it holds), then each real mount.
fn mounts_text(tree: &Namespace) -> Result<Vec<u8>, Errno> {
    let mut text = match tree.root_mount() {
        (_, b"rootfs") => procfs_text::MOUNTS.as_bytes().to_vec(),
        (source, kind) => {
            let options: &[u8] = if tree.is_read_only(tree.root())? { b" ro,relatime 0 0\n" } else { b" rw,relatime 0 0\n" };
            [source, b" / ", kind, options].concat()
        }
    };
    for mount in tree.mounts() {
        let point = tree.path_of(mount.root)?;
        let options = if mount.read_only { "ro,relatime" } else { "rw,relatime" };
        for part in [&mount.source[..], b" ", &point, b" ", &mount.kind, format!(" {options} 0 0\n").as_bytes()] {
            text.extend_from_slice(part);
        }
    }
    Ok(text)
}

/// Makes `directory`'s `fd` hold exactly one link per listed descriptor.
fn write_descriptor_links(tree: &mut Namespace, directory: InodeId, listing: &DescriptorListing) -> Result<(), Errno> {
    let fd_directory = match tree.child_of(directory, b"fd") {
        Some(fd_directory) => fd_directory,
        None => tree.create(directory, b"fd", FileKind::Directory, 0o500, now())?,
    };
    empty_directory(tree, fd_directory)?;
    for (fd, target) in &listing.entries {
        let text = match target {
            LinkTarget::Inode(inode) => tree.some_path_of(*inode)?,
            LinkTarget::Text(text) => text.clone(),
        };
        tree.symlink(fd_directory, format!("{fd}").as_bytes(), &text, now())?;
    }
    Ok(())
}

/// How deep [`empty_directory`] goes: a process's directory holds `fd`;
/// anything deeper was not made here and makes `rmdir` fail (ENOTEMPTY).
const SUBDIRECTORY_DEPTH: u32 = 2;

/// Removes everything in `directory`, subdirectories included down to
/// [`SUBDIRECTORY_DEPTH`] (a bound, since this runs on a kernel stack).
fn empty_directory(tree: &mut Namespace, directory: InodeId) -> Result<(), Errno> {
    empty_directory_to(tree, directory, SUBDIRECTORY_DEPTH)
}

fn empty_directory_to(tree: &mut Namespace, directory: InodeId, depth: u32) -> Result<(), Errno> {
    for entry in tree.list(directory)? {
        if entry.name == b"." || entry.name == b".." {
            continue;
        }
        if tree.kind(entry.inode)? == FileKind::Directory {
            if let Some(deeper) = depth.checked_sub(1) {
                empty_directory_to(tree, entry.inode, deeper)?;
            }
            tree.rmdir(directory, &entry.name, now())?;
        } else {
            tree.unlink(directory, &entry.name, now())?;
        }
    }
    Ok(())
}

fn parse_pid(name: &[u8]) -> Option<u32> {
    core::str::from_utf8(name).ok()?.parse().ok()
}

/// Replaces the contents of file `name` in `directory` with `contents`.
pub(crate) fn put(tree: &mut Namespace, directory: InodeId, name: &str, contents: &[u8]) -> Result<(), Errno> {
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
