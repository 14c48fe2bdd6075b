//! System information calls: uname (sethostname, setdomainname), resource limits and usage, sysinfo,
//! times, ids, statfs, CPU affinity, getrandom; and the names of system
//! calls for the ENOSYS log.


use super::{value, Call, CallResult, UserPtr};
use linux_abi::cpu_times;
use linux_abi::Errno;
use crate::clock::monotonic_nanoseconds;
use crate::uts_names::{self, Which};

pub fn uname(call: &mut Call<'_>) -> CallResult {
    let mut record = [0u8; 65 * 6];
    let (host, domain) = (uts_names::name(Which::Host), uts_names::name(Which::Domain));
    let fields: [&[u8]; 6] = [b"Linux", host.as_bytes(), uts_names::RELEASE, b"#1 SMP Lamina 0.1.0", b"x86_64", domain.as_bytes()];
    for (index, text) in fields.iter().enumerate() {
        record[index * 65..index * 65 + text.len()].copy_from_slice(text);
    }
    call.write_out(call.argument(0), &record)?;
    value(0)
}

/// `sethostname(name, length)` and `setdomainname(name, length)`: root
/// only (EPERM), at most 64 bytes (EINVAL; a negative length too).
pub fn set_uts_name(call: &mut Call<'_>, which: Which) -> CallResult {
    if !call.process.state().credentials.privileged() {
        return Err(Errno::EPERM);
    }
    let length = call.argument(1) as i32;
    if length < 0 || length as usize > uts_names::LONGEST_NAME {
        return Err(Errno::EINVAL);
    }
    let mut name = [0u8; uts_names::LONGEST_NAME];
    call.read_in(call.argument(0), &mut name[..length as usize])?;
    uts_names::set(which, &name[..length as usize]).ok_or(Errno::EINVAL)?;
    value(0)
}

pub fn getrlimit(call: &mut Call<'_>) -> CallResult {
    let limits = call.process.state().limits.get(call.argument(0))?;
    UserPtr::<[u64; 2]>::argument(call, 1).ok_or(Errno::EFAULT)?.write(call, &limits)?;
    value(0)
}

/// `setrlimit`: every process runs as root, so raising a hard limit is
/// allowed (up to Linux's own caps).
pub fn setrlimit(call: &mut Call<'_>) -> CallResult {
    let new = UserPtr::<[u64; 2]>::argument(call, 1).ok_or(Errno::EFAULT)?.read(call)?;
    call.process.state().limits.set(call.argument(0), new, true)?;
    if call.argument(0) == linux_abi::resource_limits::RLIMIT_CPU {
        call.process.cpu_timers_armed.store(true, core::sync::atomic::Ordering::Relaxed);
    }
    value(0)
}

/// `prlimit64(pid, resource, new, old)`: the limits of this process or
/// another (0: this one); `old` gets the limits before `new` applies.
pub fn prlimit64(call: &mut Call<'_>) -> CallResult {
    let (pid, resource) = (call.argument(0), call.argument(1));
    let target = if pid == 0 || pid == u64::from(call.pid()) {
        call.process.clone()
    } else {
        crate::process::find(u32::try_from(pid).map_err(|_| Errno::ESRCH)?).filter(|found| found.state().exit_status.is_none()).ok_or(Errno::ESRCH)?
    };
    let new = UserPtr::<[u64; 2]>::argument(call, 2).map(|new| new.read(call)).transpose()?;
    let old = target.state().limits.get(resource)?;
    if let Some(new) = new {
        target.state().limits.set(resource, new, true)?;
        if resource == linux_abi::resource_limits::RLIMIT_CPU {
            target.cpu_timers_armed.store(true, core::sync::atomic::Ordering::Relaxed);
        }
    }
    if let Some(out) = UserPtr::<[u64; 2]>::argument(call, 3) {
        out.write(call, &old)?;
    }
    value(0)
}

/// `getrusage`: the CPU times of the process (RUSAGE_SELF), the calling
/// thread (RUSAGE_THREAD) or the waited-for children (RUSAGE_CHILDREN);
/// the other counters are 0.
pub fn getrusage(call: &mut Call<'_>) -> CallResult {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let times = match call.argument(0) as i32 {
        RUSAGE_SELF => call.process.cpu_times(),
        RUSAGE_CHILDREN => call.process.state().reaped_children,
        RUSAGE_THREAD => call.process.thread_cpu_times(call.thread.tid).unwrap_or_default(),
        _ => return Err(Errno::EINVAL),
    };
    call.write_out(call.argument(1), &cpu_times::rusage(times, 0))?;
    value(0)
}

/// `times`: the process's and its waited-for children's CPU times in
/// clock ticks; returns the ticks since boot.
pub fn times(call: &mut Call<'_>) -> CallResult {
    if call.argument(0) != 0 {
        let own = call.process.cpu_times();
        let children = call.process.state().reaped_children;
        call.write_out(call.argument(0), &cpu_times::tms(own, children))?;
    }
    value(monotonic_nanoseconds() / (1_000_000_000 / cpu_times::TICKS_PER_SECOND))
}

pub fn sysinfo(call: &mut Call<'_>) -> CallResult {
    let free = kernel_objects::physical_memory::free_frames() * 4096;
    let total = machine::heap::usage().0 as u64 + free;
    let mut record = [0u8; 112];
    let mut put = |at: usize, value: u64, width: usize| record[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
    put(0, monotonic_nanoseconds() / 1_000_000_000, 8); // uptime
    put(32, total, 8); // totalram
    put(40, free, 8); // freeram
    put(80, crate::process::all().len() as u64, 2); // procs
    put(104, 1, 4); // mem_unit
    call.write_out(call.argument(0), &record)?;
    value(0)
}

pub fn getrandom(call: &mut Call<'_>) -> CallResult {
    let (buffer, length, flags) = (call.argument(0), call.argument(1) as usize, call.argument(2));
    if flags & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = super::buffers::transfer_buffer(length.min(1 << 20))?;
    crate::random::fill(&mut bytes);
    call.write_out(buffer, &bytes)?;
    value(bytes.len() as u64)
}

/// `reboot`: powering off and restarting both power the machine off,
/// after every file system was left clean (as Linux's `kernel_power_off`
/// syncs; ext4 here is also checkpointed).
pub fn reboot(call: &mut Call<'_>) -> CallResult {
    const MAGIC: u64 = 0xfee1_dead;
    const MAGIC_TWO: [u64; 4] = [672_274_793, 85_072_278, 369_367_448, 537_993_216];
    const RB_AUTOBOOT: u64 = 0x0123_4567;
    const RB_POWER_OFF: u64 = 0x4321_fedc;
    const RB_HALT: u64 = 0xcdef_0123;
    if call.argument(0) as u32 as u64 != MAGIC || !MAGIC_TWO.contains(&(call.argument(1) as u32 as u64)) {
        return Err(Errno::EINVAL);
    }
    match call.argument(2) as u32 as u64 {
        RB_POWER_OFF | RB_AUTOBOOT | RB_HALT => crate::power_off(),
        _ => Err(Errno::EINVAL),
    }
}

/// `syslog` (`klogctl`): reading the kernel log (what `dmesg` shows).
pub fn syslog(call: &mut Call<'_>) -> CallResult {
    const READ_ALL: u64 = 3;
    const CLEAR: u64 = 5;
    const CONSOLE_OFF: u64 = 6;
    const CONSOLE_ON: u64 = 7;
    const CONSOLE_LEVEL: u64 = 8;
    const SIZE_UNREAD: u64 = 9;
    const SIZE_BUFFER: u64 = 10;
    let (action, buffer, length) = (call.argument(0), call.argument(1), call.argument(2) as i64);
    match action {
        READ_ALL => {
            if length < 0 {
                return Err(Errno::EINVAL);
            }
            let log = crate::kernel_log::read_all(length as usize);
            call.write_out(buffer, &log)?;
            value(log.len() as u64)
        }
        CLEAR | CONSOLE_OFF | CONSOLE_ON | CONSOLE_LEVEL => value(0),
        SIZE_UNREAD => value(crate::kernel_log::size() as u64),
        SIZE_BUFFER => value(64 * 1024),
        _ => Err(Errno::EINVAL),
    }
}
