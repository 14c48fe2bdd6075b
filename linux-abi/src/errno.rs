//! Linux errno values, as system calls return them (`-errno` in `rax`).
//! The numbers are the x86-64 Linux ABI's (`asm-generic/errno-base.h`,
//! `asm-generic/errno.h`).

/// An error number a system call returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Errno(pub u16);

impl Errno {
    /// Operation not permitted.
    pub const EPERM: Self = Self(1);
    /// No such file or directory.
    pub const ENOENT: Self = Self(2);
    /// No such process.
    pub const ESRCH: Self = Self(3);
    /// Interrupted system call.
    pub const EINTR: Self = Self(4);
    /// Input/output error.
    pub const EIO: Self = Self(5);
    /// No such device or address.
    pub const ENXIO: Self = Self(6);
    /// Argument list too long.
    pub const E2BIG: Self = Self(7);
    /// Exec format error.
    pub const ENOEXEC: Self = Self(8);
    /// Bad file descriptor (capability slot).
    pub const EBADF: Self = Self(9);
    /// No child processes.
    pub const ECHILD: Self = Self(10);
    /// Try again (also EWOULDBLOCK).
    pub const EAGAIN: Self = Self(11);
    /// Out of memory.
    pub const ENOMEM: Self = Self(12);
    /// Permission denied.
    pub const EACCES: Self = Self(13);
    /// Bad address.
    pub const EFAULT: Self = Self(14);
    /// Block device required.
    pub const ENOTBLK: Self = Self(15);
    /// Device or resource busy.
    pub const EBUSY: Self = Self(16);
    /// File exists.
    pub const EEXIST: Self = Self(17);
    /// Cross-device link.
    pub const EXDEV: Self = Self(18);
    /// No such device.
    pub const ENODEV: Self = Self(19);
    /// Not a directory.
    pub const ENOTDIR: Self = Self(20);
    /// Is a directory.
    pub const EISDIR: Self = Self(21);
    /// Invalid argument.
    pub const EINVAL: Self = Self(22);
    /// Too many open files in the system.
    pub const ENFILE: Self = Self(23);
    /// Too many open files (capability slots).
    pub const EMFILE: Self = Self(24);
    /// Not a terminal.
    pub const ENOTTY: Self = Self(25);
    /// Text file busy.
    pub const ETXTBSY: Self = Self(26);
    /// File too large.
    pub const EFBIG: Self = Self(27);
    /// No space left on device.
    pub const ENOSPC: Self = Self(28);
    /// Illegal seek.
    pub const ESPIPE: Self = Self(29);
    /// Read-only file system.
    pub const EROFS: Self = Self(30);
    /// Too many links.
    pub const EMLINK: Self = Self(31);
    /// Broken pipe.
    pub const EPIPE: Self = Self(32);
    /// Math argument out of domain.
    pub const EDOM: Self = Self(33);
    /// Result too large.
    pub const ERANGE: Self = Self(34);
    /// Deadlock would occur.
    pub const EDEADLK: Self = Self(35);
    /// File name too long.
    pub const ENAMETOOLONG: Self = Self(36);
    /// Function not implemented.
    pub const ENOSYS: Self = Self(38);
    /// Directory not empty.
    pub const ENOTEMPTY: Self = Self(39);
    /// Too many symbolic links.
    pub const ELOOP: Self = Self(40);
    /// No record locks available (the lock table has no room).
    pub const ENOLCK: Self = Self(37);
    /// No message of the desired type (`msgrcv`).
    pub const ENOMSG: Self = Self(42);
    /// Identifier removed (a System V object removed while waited on).
    pub const EIDRM: Self = Self(43);
    /// Not a socket.
    pub const ENOTSOCK: Self = Self(88);
    /// Message too long.
    pub const EMSGSIZE: Self = Self(90);
    /// Protocol wrong type for socket (a stream connecting to a seqpacket listener).
    pub const EPROTOTYPE: Self = Self(91);
    /// Protocol not available (an unknown socket option).
    pub const ENOPROTOOPT: Self = Self(92);
    /// Protocol not supported.
    pub const EPROTONOSUPPORT: Self = Self(93);
    /// Operation not supported.
    pub const EOPNOTSUPP: Self = Self(95);
    /// No buffer space (a control part larger than the kernel takes).
    pub const ENOBUFS: Self = Self(105);
    /// Too many references: more descriptors in one message than allowed.
    pub const ETOOMANYREFS: Self = Self(109);
    /// Connection refused (a datagram to a peer that has closed).
    pub const ECONNREFUSED: Self = Self(111);
    /// Address family not supported.
    pub const EAFNOSUPPORT: Self = Self(97);
    /// Socket type not supported (a netlink socket neither raw nor datagram).
    pub const ESOCKTNOSUPPORT: Self = Self(94);
    /// Address already in use (a name another socket is bound to).
    pub const EADDRINUSE: Self = Self(98);
    /// A connect is already under way.
    pub const EALREADY: Self = Self(114);
    /// The socket is already connected.
    pub const EISCONN: Self = Self(106);
    /// The socket is not connected.
    pub const ENOTCONN: Self = Self(107);
    /// No data available (also ENOATTR: no such extended attribute).
    pub const ENODATA: Self = Self(61);
    /// Timed out.
    pub const ETIMEDOUT: Self = Self(110);
    /// Destination address required (a datagram with nowhere to go).
    pub const EDESTADDRREQ: Self = Self(89);
    /// The address is none of this host's.
    pub const EADDRNOTAVAIL: Self = Self(99);
    /// No route to the network.
    pub const ENETUNREACH: Self = Self(101);
    /// The peer reset the connection.
    pub const ECONNRESET: Self = Self(104);
    /// The operation is in progress (a non-blocking connect).
    pub const EINPROGRESS: Self = Self(115);

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
