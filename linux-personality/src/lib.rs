//! The Linux personality: Linux programs on Lamina, unchanged (Biscuit's
//! half of the mission). Where things are: `syscall/` holds the system-call
//! table (`syscall/mod.rs`) and one file per family of calls (`fchmodat`
//! is in `syscall/paths.rs`); `run.rs` runs a thread in user mode and
//! takes it back at each system call, fault and signal. What the calls act
//! on — processes, files, pipes, sockets, signals, timers, IPC, the tty,
//! `/proc` — is the `linux-objects` crate below this one.
//!
//! At boot the initramfs becomes the file tree (with `root=/dev/vdX` on
//! the command line, the ext4 on that disk replaces it), the console starts, and
//! the first program runs as process 1: `/init` as on Linux (xtask puts
//! its own there, `user/init/init.c`), else the program the initramfs
//! names in `/etc/lamina-init` (its arguments, NUL-separated), else
//! `/bin/sh`. When process 1 exits the machine powers off.
//!
//! Must never let a program's bad input reach a panic: every system call
//! checks its arguments and answers with the Linux errno. Must never contain
//! `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod run;
mod syscall;

// The objects the calls act on (linux-objects), named here as this
// crate's own modules so that calls say `crate::process`, `crate::fs`, ….
use linux_objects::{
    address_randomization,
    block_files, clock, cpu_itimers, descriptor_cache, descriptor_passing, socket_waits, epoll, event_counters, exec, exec_cache, ext4_mounts, fifos, file_mappings, flocks, fs, futexes, group_descriptors, inet_sockets, itimers, kernel_log, mqueues, named_sockets, netlink_sockets, open_files, page_cache, pipes, poll_wakeups, posix_timers,
    process, procfs, random, record_locks, signal_fds, signal_sending, signals, syscall_trace, sysv_ipc, timer_fds, tty, unix_sockets, uts_names, vdso,
};

use alloc::vec::Vec;

use machine::user::UserContext;

use kernel_objects::capabilities::NativeProcess;
use kernel_objects::SystemFacts;

/// The environment process 1 starts with.
const ENVIRONMENT: [&[u8]; 4] = [b"HOME=/root", b"PATH=/bin:/sbin:/usr/bin:/usr/sbin", b"TERM=vt100", b"SHELL=/bin/sh"];

/// Releases an open file description whose last descriptor went (called
/// by the capability layer's undo).
static RELEASE_OPEN_FILE: fn(u64) = open_files::release;

/// Starts user space; never returns.
pub fn start(facts: &'static SystemFacts, initramfs: &'static [u8]) -> ! {
    kernel_objects::capabilities::on_last_file_reference(&RELEASE_OPEN_FILE);
    // With CPU groups, each group's capability kernel (issue 20).
    if let Err(problem) = kernel_objects::group_kernels::start() {
        machine::println!("lamina: warning: {problem}: descriptors cannot cross CPU groups");
    }
    random::seed(machine::timer::uptime_nanoseconds() ^ u64::from(machine::cpu::cpuid(1, 0).ebx) << 32);
    let boot_epoch = clock::set_boot_epoch(machine::rtc::seconds_since_epoch().unwrap_or(0));
    if let Err(errno) = vdso::install(sched::current().container(), boot_epoch) {
        machine::println!("lamina: warning: no vDSO ({errno:?}): programs read the clocks by system call");
    }
    address_randomization::configure(&facts.command_line);
    let quiet = facts.command_line.split_whitespace().any(|word| word == "quiet");
    kernel_log::set_quiet(quiet);
    start_tracing(&facts.command_line);
    match fs::init(Some(initramfs)) {
        Ok(entries) if !quiet => machine::println!("lamina: initramfs: {entries} entries"),
        Ok(_) => {}
        Err(why) => fail(&why),
    }
    if let Some(device) = facts.command_line.split_whitespace().find_map(|word| word.strip_prefix("root=")) {
        match fs::switch_root_to_disk(device.as_bytes()) {
            Ok(()) if !quiet => machine::println!("lamina: root is the ext4 on {device}"),
            Ok(()) => {}
            Err(why) => machine::println!("lamina: warning: {why}; the root stays in memory"),
        }
    }
    // Memory running out takes clean cached file pages back first.
    kernel_objects::kernel_containers::set_reclaimer(&page_cache::RECLAIMER);
    if let Err(error) = fs::start_commit_timer() {
        machine::println!("lamina: warning: no commit thread ({error:?}): changes reach the disk at fsync, sync and unmount only");
    }
    if let Err(error) = inet_sockets::start() {
        machine::println!("lamina: warning: no network thread ({error:?}): the network card is left idle");
    }
    if let Err(error) = tty::start_input() {
        fail(&alloc::format!("no console input thread: {error:?}"));
    }
    let arguments = init_arguments();
    if let Err(why) = start_init(arguments, quiet) {
        fail(&why);
    }
    // This thread has nothing more to do; process 1's exit powers off.
    loop {
        sched::sleep_until(u64::MAX, || false);
    }
}

/// The system-call tracer, if the command line asks for it.
fn start_tracing(command_line: &str) {
    if let syscall_trace::TraceRequest::On(kib) = syscall_trace::requested(command_line) {
        if let Err(error) = syscall_trace::start(kib) {
            machine::println!("lamina: warning: no system-call trace ({error:?})");
        }
    }
}

fn fail(why: &str) -> ! {
    machine::println!("lamina: user space failed to start: {why}");
    machine::stop::halt_machine(machine::stop::ExitCode::BootFailure)
}

/// Process 1's arguments: `/init`, or `/etc/lamina-init` split at NULs,
/// or `/bin/sh`.
fn init_arguments() -> Vec<Vec<u8>> {
    if fs::with(|tree| tree.lookup(tree.root(), b"/init", true)).is_ok() {
        return alloc::vec![b"/init".to_vec()];
    }
    let named = fs::with(|tree| {
        let inode = tree.lookup(tree.root(), b"/etc/lamina-init", true)?;
        Ok(tree.contents(inode)?.to_vec())
    });
    match named {
        Ok(contents) if !contents.is_empty() => contents.split(|byte| *byte == 0).filter(|part| !part.is_empty()).map(<[u8]>::to_vec).collect(),
        _ => alloc::vec![b"/bin/sh".to_vec()],
    }
}

fn start_init(arguments: Vec<Vec<u8>>, quiet: bool) -> Result<(), alloc::string::String> {
    use alloc::format;
    let container = sched::current().container();
    let path = arguments.first().cloned().unwrap_or_default();
    let shown = core::str::from_utf8(&path).unwrap_or("?");
    let (root, inode) = fs::with(|tree| Ok((tree.root(), tree.lookup(tree.root(), &path, true)?))).map_err(|errno| format!("{shown}: {errno:?}"))?;
    let argument_slices: Vec<&[u8]> = arguments.iter().map(Vec::as_slice).collect();
    let mut random_bytes = [0u8; 16];
    random::fill(&mut random_bytes);
    let image = fs::with(|tree| {
        let tree: &vfs::Namespace = tree;
        let interpreter_files = |path: &[u8]| {
            let interpreter = tree.lookup(tree.root(), path, true)?;
            Ok((tree.contents(interpreter)?, tree.stat(interpreter).ok().map(|stat| exec_cache::FileKey::of(interpreter, &stat))))
        };
        let stack_limit = linux_abi::resource_limits::ResourceLimits::default().soft(linux_abi::resource_limits::RLIMIT_STACK);
        let key = tree.stat(inode).ok().map(|stat| exec_cache::FileKey::of(inode, &stat));
        let layout = address_randomization::layout_for(0);
        Ok(exec::build(container, &tree.contents(inode)?, key, &interpreter_files, &argument_slices, &ENVIRONMENT, random_bytes, stack_limit, layout))
    })
        .map_err(|errno| format!("{shown}: {errno:?}"))?
        .map_err(|error| format!("{shown}: {error}"))?;
    let native = NativeProcess::create_with(container, image.memory).map_err(|errno| format!("process: {errno:?}"))?;
    let mut state = process::initial_state(0, root);
    state.break_start = image.break_start;
    state.program_break = image.break_start;
    state.mmap_next = image.mmap_next;
    state.command = path.rsplit(|byte| *byte == b'/').next().unwrap_or(&path).to_vec();
    state.arguments = arguments.join(&0u8);
    state.executable = path.clone();
    let init = process::Process::create(native, state).map_err(|errno| format!("process: {errno:?}"))?;
    {
        let mut state = init.state();
        state.pgid = init.pid;
        state.sid = init.pid;
    }
    tty::set_foreground(init.pid);
    // Descriptors 0, 1 and 2: the console.
    for fd in 0..3u32 {
        let console = fs::with(|tree| {
            let inode = tree.lookup(tree.root(), b"/dev/console", true)?;
            tree.opened(inode)?;
            Ok(inode)
        })
        .map_err(|errno| format!("/dev/console: {errno:?}"))?;
        let file = open_files::OpenFile::new(open_files::Backing::Device(open_files::Device::Console, console), open_files::flags::O_RDWR);
        open_files::install(init.native.space(), file, caps::Placement::At(fd)).map_err(|errno| format!("descriptor {fd}: {errno:?}"))?;
    }
    if !quiet {
        machine::println!("lamina: starting {shown} as process {}", init.pid);
    }
    run::start(init, UserContext::new(image.entry, image.stack_pointer)).map_err(|errno| format!("thread: {errno:?}"))
}

/// Process 1 exited with wait status `status`: report it and power off.
pub fn init_exited(status: u32) -> ! {
    let code = linux_abi::WaitStatus::decode(status).map_or(status, linux_abi::WaitStatus::shell_code);
    machine::println!("lamina: process 1 exited with status {code}; powering off");
    power_off()
}

/// Powers the machine off with nothing lost: the system-call trace
/// reported, file systems quiesced, the network card's frames sent.
pub fn power_off() -> ! {
    syscall_trace::report();
    crate::fs::quiesce_all();
    crate::inet_sockets::flush_card();
    machine::stop::power_off()
}
