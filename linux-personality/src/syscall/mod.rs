//! The Linux x86-64 system-call table: numbers, arguments in `rdi, rsi,
//! rdx, r10, r8, r9`, the result or `-errno` in `rax`. Lamina's native
//! capability calls (`0x4c00..`) share the entry. Any other number is
//! ENOSYS, logged once with its name; a bad argument is its errno, never
//! a panic.

mod files;
mod info;
mod memory;
mod paths;
mod processes;
mod signals;
mod time;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use machine::user::UserContext;

use super::process::{Pid, Process};
use super::run::ThreadSelf;
use kernel_objects::user_memory::{read_c_string, read_user, write_user, PendingFlush};
use linux_abi::Errno;

pub use processes::{futex_wake, signal_group};

/// What the thread does after a system call.
pub enum Flow {
    /// Back to user mode.
    Continue,
    /// This thread ends (`exit`); the process with it if it was the last.
    ExitThread(u32),
    /// The whole process ends with this wait status (`exit_group`).
    Exit(u32),
}

/// What a call returns: a value for `rax`, or registers already set
/// (`rt_sigreturn`, `execve`), or the end of the process.
pub enum Outcome {
    Value(u64),
    Registers,
    ExitThread(u32),
    Exit(u32),
}

type CallResult = Result<Outcome, Errno>;

/// One system call being handled.
pub struct Call<'a> {
    pub process: &'a Arc<Process>,
    pub context: &'a mut UserContext,
    pub arguments: [u64; 6],
    /// The calling thread.
    pub thread: &'a mut ThreadSelf,
}

impl Call<'_> {
    fn argument(&self, index: usize) -> u64 {
        self.arguments[index]
    }

    /// Copies `buffer.len()` bytes in from user memory.
    pub fn read_in(&self, address: u64, buffer: &mut [u8]) -> Result<(), Errno> {
        let mut flush = PendingFlush::default();
        let result = self.process.native.with_memory(|memory| read_user(memory, address, buffer, &mut flush));
        flush.carry_out();
        result?
    }

    /// Copies `bytes` out to user memory.
    pub fn write_out(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        let mut flush = PendingFlush::default();
        let result = self.process.native.with_memory(|memory| write_user(memory, address, bytes, &mut flush));
        flush.carry_out();
        result?
    }

    /// A NUL-terminated string from user memory, at most `limit` bytes.
    pub fn string_in(&self, address: u64, limit: usize) -> Result<Vec<u8>, Errno> {
        let mut flush = PendingFlush::default();
        let result = self.process.native.with_memory(|memory| read_c_string(memory, address, limit, Errno::ENAMETOOLONG, &mut flush));
        flush.carry_out();
        result?
    }

    /// A `u64` from user memory.
    pub fn word_in(&self, address: u64) -> Result<u64, Errno> {
        let mut bytes = [0u8; 8];
        self.read_in(address, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Whether a signal waits to be delivered or the process is ending
    /// (blocking calls end with EINTR).
    pub fn interrupted(&self) -> bool {
        self.process.group_exit().is_some() || self.process.state().signals.deliverable()
    }

    /// This process's pid.
    pub fn pid(&self) -> Pid {
        self.process.pid
    }
}

/// Handles the system call `context` stopped at.
pub fn dispatch(process: &Arc<Process>, context: &mut UserContext, thread: &mut ThreadSelf) -> Flow {
    let registers = &context.registers;
    let number = registers.rax;
    let arguments = [registers.rdi, registers.rsi, registers.rdx, registers.r10, registers.r8, registers.r9];
    if kernel_objects::capabilities::handle_native_call(&process.native, context) {
        return Flow::Continue;
    }
    let mut call = Call { process, context, arguments, thread };
    let result = handle(&mut call, number);
    match result {
        Ok(Outcome::Value(value)) => call.context.registers.rax = value,
        Ok(Outcome::Registers) => {}
        Ok(Outcome::Exit(status)) => return Flow::Exit(status),
        Ok(Outcome::ExitThread(status)) => return Flow::ExitThread(status),
        Err(errno) => call.context.registers.rax = errno.to_return_value(),
    }
    Flow::Continue
}

fn value(value: u64) -> CallResult {
    Ok(Outcome::Value(value))
}

fn handle(call: &mut Call<'_>, number: u64) -> CallResult {
    match number {
        0 => files::read(call),
        1 => files::write(call),
        2 => files::open(call),
        3 => files::close(call),
        4 => files::stat(call, false),
        5 => files::fstat(call),
        6 => files::stat(call, true),
        7 => files::poll(call),
        8 => files::lseek(call),
        9 => memory::mmap(call),
        10 => memory::mprotect(call),
        11 => memory::munmap(call),
        12 => memory::brk(call),
        13 => signals::rt_sigaction(call),
        14 => signals::rt_sigprocmask(call),
        15 => signals::rt_sigreturn(call),
        16 => files::ioctl(call),
        17 => files::pread(call),
        18 => files::pwrite(call),
        19 => files::readv(call),
        20 => files::writev(call),
        21 => paths::access(call, true),
        22 => files::pipe(call, false),
        23 => files::select(call, false),
        24 => {
            sched::yield_now();
            value(0)
        }
        28 => memory::madvise(call),
        32 => files::dup(call),
        33 => files::dup2(call),
        35 => time::nanosleep(call),
        40 => files::sendfile(call),
        39 => value(u64::from(call.pid())),
        56 => processes::clone(call),
        57 | 58 => processes::fork(call),
        59 => processes::execve(call),
        60 => processes::exit_thread(call),
        231 => processes::exit(call),
        61 => processes::wait4(call),
        62 => processes::kill(call),
        63 => info::uname(call),
        72 => files::fcntl(call),
        74 | 75 => files::fsync(call),
        76 => paths::truncate(call),
        77 => files::ftruncate(call),
        78 | 217 => files::getdents64(call),
        79 => paths::getcwd(call),
        80 => paths::chdir(call),
        81 => paths::fchdir(call),
        82 => paths::rename(call),
        83 => paths::mkdir(call),
        84 => paths::rmdir(call),
        86 => paths::link(call),
        87 => paths::unlink(call),
        88 => paths::symlink(call),
        89 => paths::readlink(call),
        90 => paths::chmod(call),
        91 => files::fchmod(call),
        92..=94 | 260 => value(0), // chown family: one user, accepted
        95 => processes::umask(call),
        96 => time::gettimeofday(call),
        97 => info::getrlimit(call),
        98 => info::getrusage(call),
        99 => info::sysinfo(call),
        100 => info::times(call),
        102 | 104 | 107 | 108 => value(0), // getuid, getgid, geteuid, getegid: root
        103 => info::syslog(call),
        105 | 106 | 113 | 114 | 116 | 117 | 119 => value(0), // set*id: accepted for root
        109 => processes::setpgid(call),
        110 => processes::getppid(call),
        111 => processes::getpgid_of(call, 0),
        112 => processes::setsid(call),
        115 => value(0), // getgroups: none
        118 | 120 => info::getresid(call),
        121 => processes::getpgid(call),
        124 => processes::getsid(call),
        127 => signals::rt_sigpending(call),
        130 => signals::rt_sigsuspend(call),
        131 => signals::sigaltstack(call),
        137 | 138 => info::statfs(call),
        157 => value(0), // prctl: accepted, nothing to do yet
        162 => value(0), // sync: tmpfs has nothing to write back
        165 => info::mount(call),
        166 => value(0), // umount2: the tree stays as it is
        169 => info::reboot(call),
        158 => processes::arch_prctl(call),
        160 => value(0), // setrlimit: accepted
        186 => value(u64::from(call.thread.tid)),
        200 => processes::kill(call), // tkill: one thread per process
        201 => time::time(call),
        202 => processes::futex(call),
        203 => value(0), // sched_setaffinity: accepted
        204 => info::sched_getaffinity(call),
        218 => processes::set_tid_address(call),
        228 => time::clock_gettime(call),
        229 => time::clock_getres(call),
        230 => time::clock_nanosleep(call),
        234 => processes::tgkill(call),
        247 => processes::waitid(call),
        257 => files::openat(call),
        258 => paths::mkdirat(call),
        262 => files::newfstatat(call),
        263 => paths::unlinkat(call),
        264 | 316 => paths::renameat(call, number == 316),
        265 => paths::linkat(call),
        266 => paths::symlinkat(call),
        267 => paths::readlinkat(call),
        268 => paths::fchmodat(call),
        269 | 439 => paths::access(call, false),
        270 => files::select(call, true),
        271 => files::ppoll(call),
        273 => value(0), // set_robust_list: no robust futexes yet
        280 => paths::utimensat(call),
        292 => files::dup3(call),
        293 => files::pipe(call, true),
        302 => info::prlimit64(call),
        318 => info::getrandom(call),
        332 => files::statx(call),
        334 => value(0), // rseq: not supported, accepted as if registered
        _ => {
            log_unknown(number);
            Err(Errno::ENOSYS)
        }
    }
}

/// Numbers already reported (one bit each below 512).
static REPORTED: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

fn log_unknown(number: u64) {
    let (word, bit) = ((number / 64) as usize, 1u64 << (number % 64));
    let first_time = REPORTED.get(word).is_none_or(|bits| bits.fetch_or(bit, Ordering::Relaxed) & bit == 0);
    if first_time {
        crate::kernel_log::note(format_args!("system call {} ({number}) is not supported: ENOSYS", info::syscall_name(number)));
    }
}
