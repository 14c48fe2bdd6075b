//! Linux errno values, as system calls return them (`-errno` in `rax`).
//! The numbers are the x86-64 Linux ABI's (`asm-generic/errno-base.h`,
//! `asm-generic/errno.h`). Only values the kernel returns are listed.

/// An error number a system call returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Errno(pub u16);

impl Errno {
    /// Operation not permitted.
    pub const EPERM: Self = Self(1);
    /// No such process.
    pub const ESRCH: Self = Self(3);
    /// Bad file (capability) number.
    pub const EBADF: Self = Self(9);
    /// Out of memory.
    pub const ENOMEM: Self = Self(12);
    /// Permission denied.
    pub const EACCES: Self = Self(13);
    /// Bad address.
    pub const EFAULT: Self = Self(14);
    /// Device or resource busy.
    pub const EBUSY: Self = Self(16);
    /// Exists.
    pub const EEXIST: Self = Self(17);
    /// Invalid argument.
    pub const EINVAL: Self = Self(22);
    /// Too many open files (capability slots).
    pub const EMFILE: Self = Self(24);
    /// Function not implemented.
    pub const ENOSYS: Self = Self(38);

    /// The value a system call leaves in `rax`: `-errno`.
    pub const fn to_return_value(self) -> u64 {
        (-(self.0 as i64)) as u64
    }

    /// The errno a returned `rax` carries, if it is an error (Linux: the
    /// last 4095 values).
    pub const fn from_return_value(value: u64) -> Option<Self> {
        let signed = value as i64;
        if signed < 0 && signed >= -4095 {
            Some(Self((-signed) as u16))
        } else {
            None
        }
    }
}
