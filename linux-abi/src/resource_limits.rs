//! A process's resource limits (`getrlimit`, `setrlimit`, `prlimit64`),
//! with Linux's defaults for a process started by the kernel and Linux's
//! checks on a change. Which limits the kernel enforces, and where, is the
//! personality's business (`docs/syscalls.md`).

use crate::Errno;

/// `RLIM_INFINITY`.
pub const INFINITY: u64 = u64::MAX;
/// Resources Linux has (`RLIM_NLIMITS`).
pub const RESOURCES: usize = 16;
/// `RLIMIT_CPU`: seconds of CPU time (SIGXCPU at the soft limit and each
/// second after, SIGKILL at the hard one).
pub const RLIMIT_CPU: u64 = 0;
/// `RLIMIT_FSIZE`: the largest file a process may write (SIGXFSZ, EFBIG).
pub const RLIMIT_FSIZE: u64 = 1;
/// `RLIMIT_DATA`: the largest data segment (`brk` refuses beyond it).
pub const RLIMIT_DATA: u64 = 2;
/// `RLIMIT_STACK`.
pub const RLIMIT_STACK: u64 = 3;
/// `RLIMIT_CORE`.
pub const RLIMIT_CORE: u64 = 4;
/// `RLIMIT_AS`: the largest address space (`mmap`, `mremap`, `brk`,
/// `shmat` refuse beyond it: ENOMEM).
pub const RLIMIT_AS: u64 = 9;
/// `RLIMIT_NPROC`: the most tasks (processes and threads) a user other
/// than root may have; `fork` and `clone` give EAGAIN at it.
pub const RLIMIT_NPROC: u64 = 6;
/// `RLIMIT_NOFILE`.
pub const RLIMIT_NOFILE: u64 = 7;
/// Highest `RLIMIT_NOFILE` Linux allows (`fs.nr_open`'s default).
pub const NR_OPEN: u64 = 1 << 20;

/// (soft, hard) for every resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceLimits {
    limits: [[u64; 2]; RESOURCES],
}

impl Default for ResourceLimits {
    /// What init gets from Linux: 8 MiB of stack, no core files, 1024 (hard
    /// 4096) descriptors, the rest unlimited.
    fn default() -> Self {
        let mut limits = [[INFINITY, INFINITY]; RESOURCES];
        limits[RLIMIT_STACK as usize] = [8 << 20, INFINITY];
        limits[RLIMIT_CORE as usize] = [0, INFINITY];
        limits[RLIMIT_NOFILE as usize] = [1024, 4096];
        // RLIMIT_NPROC, RLIMIT_SIGPENDING (Linux derives them from memory)
        // and RLIMIT_MEMLOCK, RLIMIT_MSGQUEUE as Linux 6.1 gives init on a
        // small machine are not modelled: unlimited.
        Self { limits }
    }
}

impl ResourceLimits {
    /// The (soft, hard) limits of `resource`; EINVAL for an unknown one.
    pub fn get(&self, resource: u64) -> Result<[u64; 2], Errno> {
        self.limits.get(resource as usize).copied().ok_or(Errno::EINVAL)
    }

    /// Sets `resource` to `new` (soft, hard): EINVAL for an unknown
    /// resource or soft above hard; EPERM for raising the hard limit
    /// without `privileged` (CAP_SYS_RESOURCE) or `RLIMIT_NOFILE` past
    /// [`NR_OPEN`]. Nothing changes on an error.
    pub fn set(&mut self, resource: u64, new: [u64; 2], privileged: bool) -> Result<(), Errno> {
        let current = self.get(resource)?;
        let [soft, hard] = new;
        if soft > hard {
            return Err(Errno::EINVAL);
        }
        if (hard > current[1] && !privileged) || (resource == RLIMIT_NOFILE && hard > NR_OPEN) {
            return Err(Errno::EPERM);
        }
        self.limits[resource as usize] = new;
        Ok(())
    }

    /// The soft limit of `resource` (a known one; unlimited otherwise).
    pub fn soft(&self, resource: u64) -> u64 {
        self.limits.get(resource as usize).map_or(INFINITY, |limit| limit[0])
    }

    /// How many bytes of a write of `length` at `position` the file-size
    /// limit lets through: all, some (a short write), or none (`None`:
    /// EFBIG and SIGXFSZ).
    pub fn writable(&self, position: u64, length: u64) -> Option<u64> {
        writable_under(self.soft(RLIMIT_FSIZE), position, length)
    }

    /// What `RLIMIT_CPU` asks after `cpu_seconds` of CPU time, when
    /// SIGXCPU was last sent at `last_warned` seconds (0: never).
    pub fn cpu_verdict(&self, cpu_seconds: u64, last_warned: u64) -> CpuVerdict {
        let [soft, hard] = self.limits[RLIMIT_CPU as usize];
        if cpu_seconds >= hard {
            CpuVerdict::Kill
        } else if cpu_seconds >= soft && cpu_seconds > last_warned {
            CpuVerdict::Warn
        } else {
            CpuVerdict::Nothing
        }
    }

    /// The soft limit on descriptors: every descriptor is below it.
    pub fn descriptors(&self) -> u64 {
        self.limits[RLIMIT_NOFILE as usize][0]
    }
}

/// As [`ResourceLimits::writable`], given the soft `RLIMIT_FSIZE` alone
/// (what a write reads from its process, without copying every limit).
pub fn writable_under(limit: u64, position: u64, length: u64) -> Option<u64> {
    match position {
        _ if length == 0 => Some(0),
        at if at >= limit => None,
        at => Some(length.min(limit - at)),
    }
}

/// What the CPU-time limit asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuVerdict {
    /// Within the limits (or warned this second already).
    Nothing,
    /// Past the soft limit: SIGXCPU (again each further second).
    Warn,
    /// At the hard limit: SIGKILL.
    Kill,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_size_and_cpu_limits_decide_as_linux() {
        let mut limits = ResourceLimits::default();
        assert_eq!(limits.writable(1 << 40, 10), Some(10), "unlimited by default");
        limits.set(RLIMIT_FSIZE, [100, 200], true).unwrap();
        assert_eq!(limits.writable(90, 20), Some(10), "a short write up to the limit");
        assert_eq!(limits.writable(100, 1), None);
        assert_eq!(limits.writable(500, 0), Some(0));
        assert_eq!(limits.cpu_verdict(1_000_000, 0), CpuVerdict::Nothing);
        limits.set(RLIMIT_CPU, [2, 5], true).unwrap();
        assert_eq!(limits.cpu_verdict(1, 0), CpuVerdict::Nothing);
        assert_eq!(limits.cpu_verdict(2, 0), CpuVerdict::Warn);
        assert_eq!(limits.cpu_verdict(2, 2), CpuVerdict::Nothing, "once per second");
        assert_eq!(limits.cpu_verdict(3, 2), CpuVerdict::Warn);
        assert_eq!(limits.cpu_verdict(5, 4), CpuVerdict::Kill);
    }

    #[test]
    fn defaults_are_linuxs_and_changes_are_checked() {
        let mut limits = ResourceLimits::default();
        assert_eq!(limits.get(RLIMIT_NOFILE), Ok([1024, 4096]));
        assert_eq!(limits.get(RLIMIT_CORE), Ok([0, INFINITY]));
        assert_eq!(limits.get(16), Err(Errno::EINVAL));
        assert_eq!(limits.set(RLIMIT_NOFILE, [20, 10], true), Err(Errno::EINVAL));
        assert_eq!(limits.set(RLIMIT_NOFILE, [8, 8192], false), Err(Errno::EPERM), "raising the hard limit needs privilege");
        assert_eq!(limits.set(RLIMIT_NOFILE, [8, NR_OPEN + 1], true), Err(Errno::EPERM));
        assert_eq!(limits.get(RLIMIT_NOFILE), Ok([1024, 4096]), "refusals change nothing");
        assert_eq!(limits.set(RLIMIT_NOFILE, [8, 2048], false), Ok(()), "lowering needs no privilege");
        assert_eq!(limits.descriptors(), 8);
        assert_eq!(limits.set(99, [1, 1], true), Err(Errno::EINVAL));
    }
}
