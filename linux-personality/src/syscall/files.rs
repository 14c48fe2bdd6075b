//! System calls on file descriptors: reading and writing (files, devices,
//! pipes, the console), opening, closing, duplicating, seeking, status
//! records, directory listings, descriptor flags, terminal ioctls and
//! waiting for readiness (`poll`, `select`).

use alloc::sync::Arc;
use alloc::vec::Vec;

use caps::{Narrowing, Placement, Rights, Slot};
use vfs::{FileKind, Stat};

use super::paths::{path_in, resolve_at, AT_EMPTY_PATH, AT_FDCWD};
use super::{value, Call, CallResult, UserPtr};
use kernel_objects::capabilities::{caps, undo};
use linux_abi::Errno;
use crate::clock::now;
use crate::tty::{self as console, Termios};
use crate::fs::{self, devices};
use crate::open_files::{self, flags, Backing, Device, OpenFile};
use crate::pipes::Pipe;
use crate::signals::numbers::SIGPIPE;

/// The most bytes one read or write moves (a larger request is partial).
pub(super) const CHUNK: usize = 1 << 20;
const SEEK_SET: u64 = 0;
const SEEK_CUR: u64 = 1;
const SEEK_END: u64 = 2;

pub(super) fn descriptor(call: &Call<'_>, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    let space = call.process.native.space();
    match call.thread.descriptors.try_borrow_mut() {
        Ok(mut cache) => cache.file(space, fd),
        Err(_) => open_files::file(space, fd),
    }
}

/// Reads up to `length` bytes from `file` (at `at`, or its offset).
pub(super) fn read_from(call: &Call<'_>, file: &OpenFile, length: usize, at: Option<u64>) -> Result<Vec<u8>, Errno> {
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    let nonblocking = file.status() & flags::O_NONBLOCK != 0;
    let interrupted = || call.interrupted();
    let mut buffer = Vec::new();
    match &file.backing {
        Backing::PipeReader(pipe) => {
            // Straight from the pipe's buffer: no zero-filled staging buffer.
            pipe.read(&mut buffer, length.min(CHUNK), nonblocking, &interrupted)?;
            return Ok(buffer);
        }
        Backing::Socket(_) => return super::sockets::read(call, file, length),
        Backing::Inet(socket) => return super::inet::read(call, file, socket, length),
        Backing::Netlink(socket) => return super::netlink::read(call, file, socket, length),
        Backing::EventCounter(counter) => {
            if length < 8 {
                return Err(Errno::EINVAL);
            }
            return Ok(counter.read(nonblocking, &interrupted)?.to_le_bytes().to_vec());
        }
        Backing::Timer(timer) => {
            if length < 8 {
                return Err(Errno::EINVAL);
            }
            return Ok(timer.read(nonblocking, &interrupted)?.to_le_bytes().to_vec());
        }
        Backing::Signals(signals) => return super::events::read_signals(call, signals, length, nonblocking),
        _ => {}
    }
    buffer.try_reserve_exact(length.min(CHUNK)).map_err(|_| Errno::ENOMEM)?;
    buffer.resize(length.min(CHUNK), 0);
    let count = match &file.backing {
        Backing::Inode(inode) => {
            let inode = *inode;
            file.with_offset(|offset| -> Result<usize, Errno> {
                let position = at.unwrap_or(*offset);
                let count = fs::with(|tree| crate::page_cache::read(tree, call.process.native.container(), inode, position, &mut buffer))?;
                if at.is_none() {
                    *offset += count as u64;
                }
                Ok(count)
            })?
        }
        Backing::Device(Device::Null, _) => 0,
        Backing::Device(Device::Zero, _) => buffer.len(),
        Backing::Device(Device::Random, _) => {
            crate::random::fill(&mut buffer);
            buffer.len()
        }
        Backing::Device(Device::Console, _) => console::read(&mut buffer, nonblocking, &interrupted)?,
        Backing::Device(Device::Disk(major, minor), _) => {
            let disk = crate::block_files::disk((*major, *minor)).ok_or(Errno::ENXIO)?;
            file.with_offset(|offset| -> Result<usize, Errno> {
                let count = crate::block_files::read_at(disk, at.unwrap_or(*offset), &mut buffer)?;
                if at.is_none() {
                    *offset += count as u64;
                }
                Ok(count)
            })?
        }
        Backing::Device(Device::ProcessMemory(pid), _) => file.with_offset(|offset| -> Result<usize, Errno> {
            let count = super::process_memory::read_memory_file(*pid, at.unwrap_or(*offset), &mut buffer)?;
            if at.is_none() {
                *offset += count as u64;
            }
            Ok(count)
        })?,
        Backing::PipeReader(_) | Backing::Socket(_) | Backing::Inet(_) | Backing::Netlink(_) | Backing::EventCounter(_) | Backing::Timer(_) | Backing::Signals(_) => 0, // handled above
        Backing::PipeWriter(_) => return Err(Errno::EBADF),
        // Linux reads a status line here; messages go by mq_timedreceive.
        Backing::MessageQueue(_) | Backing::Epoll(_) | Backing::Kvm(_) | Backing::Device(Device::Kvm, _) => return Err(Errno::EINVAL),
    };
    buffer.truncate(count);
    Ok(buffer)
}

/// Writes `data` to `file` (at `at`, or its offset / the end with `O_APPEND`).
pub(super) fn write_to(call: &Call<'_>, file: &OpenFile, data: &[u8], at: Option<u64>) -> Result<usize, Errno> {
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    let nonblocking = file.status() & flags::O_NONBLOCK != 0;
    let interrupted = || call.interrupted();
    match &file.backing {
        Backing::Inode(inode) => {
            let inode = *inode;
            let append = file.status() & flags::O_APPEND != 0;
            let size_limit = call.process.state().limits.soft(linux_abi::resource_limits::RLIMIT_FSIZE);
            let written = file.with_offset(|offset| {
                fs::with(|tree| {
                    let position = match (at, append) {
                        (Some(position), _) => position,
                        (None, true) => tree.stat(inode)?.size,
                        (None, false) => *offset,
                    };
                    // RLIMIT_FSIZE: a short write up to it, none past it.
                    let Some(allowed) = linux_abi::resource_limits::writable_under(size_limit, position, data.len() as u64) else { return Ok(None) };
                    let count = tree.write(inode, position, &data[..allowed as usize], now())?;
                    crate::page_cache::written(inode, position, &data[..count]);
                    if at.is_none() {
                        *offset = position + count as u64;
                    }
                    Ok(Some((position, count)))
                })
                .map(|written| written.map(|(_, count)| count))
            })?;
            written.ok_or_else(|| file_too_big(call))
        }
        Backing::Device(Device::Console, _) => {
            console::write(data);
            Ok(data.len())
        }
        Backing::Device(Device::Disk(major, minor), _) => {
            let disk = crate::block_files::disk((*major, *minor)).ok_or(Errno::ENXIO)?;
            file.with_offset(|offset| -> Result<usize, Errno> {
                let count = crate::block_files::write_at(disk, at.unwrap_or(*offset), data)?;
                if at.is_none() {
                    *offset += count as u64;
                }
                Ok(count)
            })
        }
        Backing::Device(Device::ProcessMemory(pid), _) => file.with_offset(|offset| -> Result<usize, Errno> {
            let count = super::process_memory::write_memory_file(*pid, at.unwrap_or(*offset), data)?;
            if at.is_none() {
                *offset += count as u64;
            }
            Ok(count)
        }),
        Backing::Device(Device::Kvm, _) | Backing::Kvm(_) => Err(Errno::EINVAL),
        Backing::Device(..) => Ok(data.len()),
        Backing::PipeWriter(pipe) => signal_broken_pipe(call, pipe.write(data, nonblocking, &interrupted)),
        Backing::Socket(_) => super::sockets::write(call, file, data),
        Backing::Inet(socket) => super::inet::send(call, file, socket, data, None, 0),
        Backing::Netlink(socket) => super::netlink::send(socket, data, None),
        Backing::EventCounter(counter) => {
            let value = data.get(..8).ok_or(Errno::EINVAL)?;
            counter.write(u64::from_le_bytes(value.try_into().map_err(|_| Errno::EINVAL)?), nonblocking, &interrupted)?;
            Ok(8)
        }
        Backing::PipeReader(_) => Err(Errno::EBADF),
        Backing::MessageQueue(_) | Backing::Epoll(_) | Backing::Timer(_) | Backing::Signals(_) => Err(Errno::EINVAL),
    }
}

/// A write to socket end `end` (EPIPE once writing was shut down).
pub(super) fn write_socket(end: &crate::unix_sockets::SocketEnd, data: &[u8], nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
    if !end.can_write() {
        return Err(Errno::EPIPE);
    }
    end.outgoing().write(data, nonblocking, interrupted)
}

/// A write's result; EPIPE sends SIGPIPE to the writing thread, as from
/// the process itself (Linux's `send_sig`).
/// The file-size limit refused a write or size change: SIGXFSZ to the
/// calling thread, EFBIG for the call (Linux's answer).
pub(super) fn file_too_big(call: &Call<'_>) -> Errno {
    const SIGXFSZ: u32 = crate::signals::numbers::SIGXFSZ;
    let info = linux_abi::signal_frame::SigInfo::from_process(SIGXFSZ, linux_abi::signal_frame::codes::SI_KERNEL, 0, 0);
    call.process.state().signals.raise_for_thread(call.thread.tid, SIGXFSZ, info);
    Errno::EFBIG
}

/// Refuses (SIGXFSZ, EFBIG) a file size past `RLIMIT_FSIZE`.
pub(super) fn check_file_size(call: &Call<'_>, size: u64) -> Result<(), Errno> {
    let limit = call.process.state().limits.soft(linux_abi::resource_limits::RLIMIT_FSIZE);
    if size > limit {
        return Err(file_too_big(call));
    }
    Ok(())
}

pub(super) fn signal_broken_pipe(call: &Call<'_>, written: Result<usize, Errno>) -> Result<usize, Errno> {
    if written == Err(Errno::EPIPE) {
        let info = linux_abi::signal_frame::SigInfo::from_process(SIGPIPE, linux_abi::signal_frame::codes::SI_USER, call.pid(), 0);
        call.process.state().signals.raise_for_thread(call.thread.tid, SIGPIPE, info);
    }
    written
}

pub fn read(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    if let (Backing::PipeReader(pipe), true) = (&file.backing, file.readable()) {
        // A copy that fails leaves the bytes in the pipe (Linux's EFAULT).
        let nonblocking = file.status() & flags::O_NONBLOCK != 0;
        let (address, length) = (call.argument(1), call.argument(2) as usize);
        let count = pipe.read_and_deliver(length.min(CHUNK), nonblocking, &|| call.interrupted(), |bytes| call.write_out(address, bytes))?;
        return value(count as u64);
    }
    if let (Backing::Socket(_), true) = (&file.backing, file.readable()) {
        let count = super::sockets::read_to(call, &file, call.argument(1), call.argument(2) as usize)?;
        return value(count as u64);
    }
    let data = read_from(call, &file, call.argument(2) as usize, None)?;
    call.write_out(call.argument(1), &data)?;
    value(data.len() as u64)
}

pub fn write(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    if matches!(file.backing, Backing::Device(Device::Null | Device::Zero | Device::Random, _)) && file.writable() {
        // Written bytes vanish: nothing to copy (Linux does not read them either).
        return value(call.argument(2).min(isize::MAX as u64));
    }
    if let (Backing::PipeWriter(pipe), true) = (&file.backing, file.writable()) {
        return value(super::pipe_writes::write_staged(call, &file, pipe, &[(call.argument(1), call.argument(2))])? as u64);
    }
    let mut data = super::buffers::transfer_buffer((call.argument(2) as usize).min(CHUNK))?;
    call.read_in(call.argument(1), &mut data)?;
    value(write_to(call, &file, &data, None)? as u64)
}

pub fn pread(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    positioned(&file)?;
    let offset = call.argument(3) as i64;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    let data = read_from(call, &file, call.argument(2) as usize, Some(offset as u64))?;
    call.write_out(call.argument(1), &data)?;
    value(data.len() as u64)
}

pub fn pwrite(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    positioned(&file)?;
    let offset = call.argument(3) as i64;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    let mut data = super::buffers::transfer_buffer((call.argument(2) as usize).min(CHUNK))?;
    call.read_in(call.argument(1), &mut data)?;
    value(write_to(call, &file, &data, Some(offset as u64))? as u64)
}

/// Positioned reads and writes need a seekable file.
fn positioned(file: &OpenFile) -> Result<(), Errno> {
    match file.backing {
        Backing::Inode(_) | Backing::Device(Device::Disk(..) | Device::ProcessMemory(_), _) => Ok(()),
        _ => Err(Errno::ESPIPE),
    }
}

/// The `(base, length)` pairs of an iovec array.
pub(super) fn io_vectors(call: &Call<'_>, address: u64, count: u64) -> Result<Vec<(u64, u64)>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let mut vectors = Vec::new();
    // Fallible: 1024 vectors are a 16 KiB allocation, which a short heap
    // refuses (CI once saw the fuzzer's writev panic the kernel here).
    vectors.try_reserve_exact(count as usize).map_err(|_| Errno::ENOMEM)?;
    for index in 0..count {
        let base = call.word_in(address + index * 16)?;
        let length = call.word_in(address + index * 16 + 8)?;
        if length as i64 <= -1 {
            return Err(Errno::EINVAL);
        }
        vectors.push((base, length));
    }
    Ok(vectors)
}

pub fn readv(call: &mut Call<'_>) -> CallResult {
    read_vectors(call, None)
}

pub fn writev(call: &mut Call<'_>) -> CallResult {
    write_vectors(call, None)
}

/// `preadv(fd, iov, count, offset)` / `pwritev`: at a position, which
/// must not be negative.
pub fn positioned_vectors(call: &mut Call<'_>, writing: bool) -> CallResult {
    let offset = call.argument(3) as i64;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    positioned(&*descriptor(call, call.argument(0))?)?;
    if writing { write_vectors(call, Some(offset as u64)) } else { read_vectors(call, Some(offset as u64)) }
}

/// `preadv2(fd, iov, count, offset, _, flags)` / `pwritev2`: offset -1
/// is the file's own offset; the `RWF_*` hints are accepted.
pub fn positioned_vectors2(call: &mut Call<'_>, writing: bool) -> CallResult {
    const KNOWN_RWF: u64 = 0x1f;
    if call.argument(5) & !KNOWN_RWF != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    match call.argument(3) as i64 {
        -1 if writing => write_vectors(call, None),
        -1 => read_vectors(call, None),
        _ => positioned_vectors(call, writing),
    }
}

/// Reads into the iovecs of arguments 1 and 2 in turn (at `at`, or the
/// file's offset), stopping at a short read.
fn read_vectors(call: &Call<'_>, at: Option<u64>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let vectors = io_vectors(call, call.argument(1), call.argument(2))?;
    let mut total = 0u64;
    for (base, length) in vectors {
        if length == 0 {
            continue;
        }
        let data = read_from(call, &file, length as usize, at.map(|at| at + total))?;
        call.write_out(base, &data)?;
        total += data.len() as u64;
        if (data.len() as u64) < length {
            break;
        }
    }
    value(total)
}

/// Writes the iovecs of arguments 1 and 2 (at `at`, or the file's
/// offset), gathered into one write so that the console sees it whole
/// (a pipe takes them a part at a time: `pipe_writes`).
fn write_vectors(call: &Call<'_>, at: Option<u64>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let vectors = io_vectors(call, call.argument(1), call.argument(2))?;
    if let (Backing::PipeWriter(pipe), true) = (&file.backing, file.writable()) {
        return value(super::pipe_writes::write_staged(call, &file, pipe, &vectors)? as u64);
    }
    let mut data = Vec::new();
    for (base, length) in vectors {
        let start = data.len();
        let length = (length as usize).min(CHUNK.saturating_sub(start));
        data.try_reserve(length).map_err(|_| Errno::ENOMEM)?;
        data.resize(start + length, 0);
        call.read_in(base, &mut data[start..])?;
    }
    if data.is_empty() {
        return value(0);
    }
    value(write_to(call, &file, &data, at)? as u64)
}

pub fn open(call: &mut Call<'_>) -> CallResult {
    open_at(call, AT_FDCWD as u64, call.argument(0), call.argument(1) as u32, call.argument(2) as u32)
}

pub fn openat(call: &mut Call<'_>) -> CallResult {
    open_at(call, call.argument(0), call.argument(1), call.argument(2) as u32, call.argument(3) as u32)
}

fn open_at(call: &Call<'_>, dirfd: u64, path_address: u64, open_flags: u32, mode: u32) -> CallResult {
    let path = path_in(call, path_address)?;
    let follow = open_flags & flags::O_NOFOLLOW == 0;
    let resolved = resolve_at(call, dirfd, &path, follow)?;
    let umask = call.process.state().umask;
    let accmode = open_flags & flags::O_ACCMODE;
    if accmode == 3 {
        return Err(Errno::EINVAL);
    }
    let inode = match resolved.inode {
        Some(_) if open_flags & flags::O_CREAT != 0 && open_flags & flags::O_EXCL != 0 => return Err(Errno::EEXIST),
        Some(inode) => inode,
        None if open_flags & flags::O_CREAT != 0 => {
            if resolved.trailing_slash {
                return Err(Errno::EISDIR);
            }
            super::permissions::check_directory_change(call, resolved.parent)?;
            let made = fs::with(|tree| tree.create(resolved.parent, &resolved.name, FileKind::Regular, mode & 0o7777 & !umask, now()))?;
            super::permissions::own_new(call, made)?;
            made
        }
        None => return Err(Errno::ENOENT),
    };
    let kind = fs::with(|tree| tree.kind(inode))?;
    if kind == FileKind::Symlink {
        // O_NOFOLLOW on a symbolic link: ELOOP, but O_PATH opens the link
        // itself (glibc's fchmodat(AT_SYMLINK_NOFOLLOW) looks at it so).
        if open_flags & flags::O_PATH == 0 {
            return Err(Errno::ELOOP);
        }
        return install(call, OpenFile::new(Backing::Inode(inode), open_flags), Placement::LowestFrom(0), open_flags & flags::O_CLOEXEC != 0);
    }
    if open_flags & flags::O_DIRECTORY != 0 && kind != FileKind::Directory {
        return Err(Errno::ENOTDIR);
    }
    if kind == FileKind::Directory && accmode != flags::O_RDONLY {
        return Err(Errno::EISDIR);
    }
    // `/proc/<pid>/mem`: Linux's memory access rule in place of the
    // file's permission bits.
    if let Some(pid) = crate::procfs::memory_file_owner(&path, call.pid()).filter(|_| kind == FileKind::Regular && open_flags & flags::O_PATH == 0) {
        let target = crate::process::owner_of_thread(pid).ok_or(Errno::ENOENT)?;
        if !super::process_memory::reaches(call, &target, super::process_memory::Ids::FileSystem) {
            return Err(Errno::EACCES);
        }
        let file = OpenFile::new(Backing::Device(Device::ProcessMemory(pid), inode), open_flags & !flags::O_TRUNC);
        return install(call, file, Placement::LowestFrom(0), open_flags & flags::O_CLOEXEC != 0);
    }
    if open_flags & flags::O_PATH == 0 {
        use super::permissions::{check, want};
        let reads = if accmode == flags::O_RDONLY || accmode == flags::O_RDWR { want::READ } else { 0 };
        let writes = if accmode != flags::O_RDONLY || (open_flags & flags::O_TRUNC != 0 && kind == FileKind::Regular) { want::WRITE } else { 0 };
        check(call, inode, reads | writes, false)?;
    }
    let backing = match kind {
        FileKind::CharDevice(major, minor) => Backing::Device(device((major, minor))?, inode),
        FileKind::BlockDevice(major, minor) => {
            crate::block_files::disk((major, minor)).ok_or(Errno::ENXIO)?;
            Backing::Device(Device::Disk(major, minor), inode)
        }
        // A socket's name is reached with connect, not open.
        FileKind::Socket => return Err(Errno::ENXIO),
        FileKind::Fifo => {
            // O_RDWR of a FIFO (one description both reading and
            // writing) is not supported yet.
            let reading = match accmode {
                flags::O_RDONLY => true,
                flags::O_WRONLY => false,
                _ => return Err(Errno::ENXIO),
            };
            let pipe = crate::fifos::pipe_of(inode)?;
            pipe.open_end(reading, open_flags & flags::O_NONBLOCK != 0, &|| call.interrupted())?;
            let backing = if reading { Backing::PipeReader(pipe) } else { Backing::PipeWriter(pipe) };
            return install(call, OpenFile::new(backing, open_flags), Placement::LowestFrom(0), open_flags & flags::O_CLOEXEC != 0);
        }
        _ => Backing::Inode(inode),
    };
    if kind == FileKind::Regular && open_flags & flags::O_TRUNC != 0 && accmode != flags::O_RDONLY {
        fs::with(|tree| crate::page_cache::truncate(tree, inode, 0))?;
    }
    fs::with(|tree| tree.opened(inode))?;
    install(call, OpenFile::new(backing, open_flags), Placement::LowestFrom(0), open_flags & flags::O_CLOEXEC != 0)
}

fn device(numbers: (u32, u32)) -> Result<Device, Errno> {
    match numbers {
        devices::NULL => Ok(Device::Null),
        devices::ZERO => Ok(Device::Zero),
        devices::RANDOM | devices::URANDOM => Ok(Device::Random),
        devices::TTY | devices::CONSOLE | devices::SERIAL => Ok(Device::Console),
        devices::KVM => Ok(Device::Kvm),
        _ => Err(Errno::ENXIO),
    }
}

/// Installs `file` as a descriptor and sets its close-on-exec flag.
pub fn install(call: &Call<'_>, file: OpenFile, placement: Placement, close_on_exec: bool) -> CallResult {
    value(u64::from(install_descriptor(call, file, placement, close_on_exec)?))
}

pub(super) fn install_descriptor(call: &Call<'_>, file: OpenFile, placement: Placement, close_on_exec: bool) -> Result<u32, Errno> {
    let fd = open_files::install(call.process.native.space(), file, placement)?;
    within_descriptor_limit(call, fd)?;
    call.process.state().set_close_on_exec(fd, close_on_exec)?;
    Ok(fd)
}

/// The soft `RLIMIT_NOFILE`: every descriptor is below it.
fn descriptor_limit(call: &Call<'_>) -> u64 {
    call.process.state().limits.descriptors()
}

/// Takes the new descriptor `fd` back (EMFILE) if it is at or past the
/// descriptor limit: the lowest free slot was there.
fn within_descriptor_limit(call: &Call<'_>, fd: u32) -> Result<(), Errno> {
    if u64::from(fd) < descriptor_limit(call) {
        return Ok(());
    }
    if let Ok(removed) = caps().with(|database| database.drop_capability(call.process.native.space(), fd)) {
        undo(&removed);
    }
    Err(Errno::EMFILE)
}

pub fn close(call: &mut Call<'_>) -> CallResult {
    let slot = Slot::try_from(call.argument(0)).map_err(|_| Errno::EBADF)?;
    drop_record_locks(call, call.argument(0));
    let removed = caps().with(|database| database.drop_capability(call.process.native.space(), slot)).map_err(|_| Errno::EBADF)?;
    undo(&removed);
    call.process.state().set_close_on_exec(slot, false)?;
    value(0)
}

/// `close_range(first, last, flags)`: closes every open descriptor from
/// `first` to `last` (inclusive; `last` may be ~0), or with
/// `CLOSE_RANGE_CLOEXEC` marks them close-on-exec. `CLOSE_RANGE_UNSHARE`
/// is accepted as a no-op: a process's descriptor table is already its own
/// (its threads share it, as with `CLONE_FILES`, and a thread that asks to
/// unshare still closes in the shared table — a documented difference).
pub fn close_range(call: &mut Call<'_>) -> CallResult {
    const CLOSE_RANGE_UNSHARE: u64 = 1 << 1;
    const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;
    let (first, last, options) = (call.argument(0) as u32, call.argument(1) as u32, call.argument(2));
    if options & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    let space = call.process.native.space();
    let open: Vec<Slot> = caps().with(|database| {
        database.contents(space).filter(|(slot, capability)| (first..=last).contains(slot) && open_files::is_descriptor(capability.object.kind())).map(|(slot, _)| slot).collect()
    });
    for slot in open {
        if options & CLOSE_RANGE_CLOEXEC != 0 {
            call.process.state().set_close_on_exec(slot, true)?;
            continue;
        }
        drop_record_locks(call, u64::from(slot));
        if let Ok(removed) = caps().with(|database| database.drop_capability(space, slot)) {
            undo(&removed);
        }
        call.process.state().set_close_on_exec(slot, false)?;
    }
    value(0)
}

/// A copy of descriptor `fd` at `placement` (same open file description).
fn duplicate(call: &Call<'_>, fd: u64, placement: Placement, close_on_exec: bool) -> CallResult {
    let slot = Slot::try_from(fd).map_err(|_| Errno::EBADF)?;
    descriptor(call, fd)?;
    let space = call.process.native.space();
    let copy = caps().with(|database| database.derive(space, slot, Rights::ALL, Narrowing::Whole, placement)).map_err(Errno::from)?;
    within_descriptor_limit(call, copy)?;
    call.process.state().set_close_on_exec(copy, close_on_exec)?;
    value(u64::from(copy))
}

pub fn dup(call: &mut Call<'_>) -> CallResult {
    duplicate(call, call.argument(0), Placement::LowestFrom(0), false)
}

pub fn dup2(call: &mut Call<'_>) -> CallResult {
    let (old, new) = (call.argument(0), call.argument(1));
    if old == new {
        descriptor(call, old)?;
        return value(new);
    }
    replace_descriptor(call, old, new, false)
}

pub fn dup3(call: &mut Call<'_>) -> CallResult {
    let (old, new, flags_value) = (call.argument(0), call.argument(1), call.argument(2) as u32);
    if old == new || flags_value & !flags::O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    replace_descriptor(call, old, new, flags_value & flags::O_CLOEXEC != 0)
}

/// POSIX: closing any descriptor of a file (`close`, `dup2` over it,
/// close-on-exec) drops the process's record locks on that file.
pub(super) fn drop_record_locks(call: &Call<'_>, fd: u64) {
    if let Ok(file) = descriptor(call, fd) {
        if let Backing::Inode(inode) = file.backing {
            crate::record_locks::closed(inode, call.pid());
        }
    }
}

fn replace_descriptor(call: &Call<'_>, old: u64, new: u64, close_on_exec: bool) -> CallResult {
    descriptor(call, old)?;
    let new_slot = Slot::try_from(new).ok().filter(|slot| *slot < kernel_objects::capabilities::SELF_SLOT && new < descriptor_limit(call)).ok_or(Errno::EBADF)?;
    drop_record_locks(call, new);
    if let Ok(removed) = caps().with(|database| database.drop_capability(call.process.native.space(), new_slot)) {
        undo(&removed);
    }
    duplicate(call, old, Placement::At(new_slot), close_on_exec)
}

pub fn fcntl(call: &mut Call<'_>) -> CallResult {
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
    let (fd, command, argument) = (call.argument(0), call.argument(1), call.argument(2));
    let file = descriptor(call, fd)?;
    match command {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let from = Slot::try_from(argument).ok().filter(|slot| *slot < kernel_objects::capabilities::SELF_SLOT && argument < descriptor_limit(call)).ok_or(Errno::EINVAL)?;
            duplicate(call, fd, Placement::LowestFrom(from), command == F_DUPFD_CLOEXEC)
        }
        F_GETFD => value(u64::from(call.process.state().close_on_exec(fd as u32))),
        F_SETFD => {
            call.process.state().set_close_on_exec(fd as u32, argument & 1 != 0)?;
            value(0)
        }
        F_GETFL => value(u64::from(file.status())),
        F_SETFL => {
            file.set_status(argument as u32);
            value(0)
        }
        F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW => record_lock(call, &file, command, argument),
        F_SETPIPE_SZ | F_GETPIPE_SZ => {
            let (Backing::PipeReader(pipe) | Backing::PipeWriter(pipe)) = &file.backing else { return Err(Errno::EBADF) };
            if command == F_GETPIPE_SZ {
                return value(pipe.capacity() as u64);
            }
            // Whole pages, a power of two of them, at most fs.pipe-max-size
            // (1 MiB) unless root.
            let wanted = (argument as u32 as u64).max(PAGE_BYTES).next_power_of_two();
            if wanted > PIPE_MAX_SIZE && call.process.state().credentials.user.effective != 0 {
                return Err(Errno::EPERM);
            }
            if wanted > 1 << 31 {
                return Err(Errno::EINVAL);
            }
            pipe.set_capacity(wanted as usize)?;
            value(wanted)
        }
        // Directory change notices (dnotify): accepted on a directory, never
        // delivered (nothing here watches directories yet).
        F_NOTIFY => {
            let Backing::Inode(inode) = file.backing else { return Err(Errno::ENOTDIR) };
            if fs::with(|tree| tree.kind(inode))? != FileKind::Directory {
                return Err(Errno::ENOTDIR);
            }
            value(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

const F_GETLK: u64 = 5;
const F_SETLK: u64 = 6;
const F_SETLKW: u64 = 7;
const F_OFD_GETLK: u64 = 36;
const F_OFD_SETLK: u64 = 37;
const F_OFD_SETLKW: u64 = 38;
const F_NOTIFY: u64 = 1026;

/// The record-lock commands on the `struct flock` at `address`: a
/// process's locks (`F_*LK*`) or the description's (`F_OFD_*`), with
/// Linux's checks (EBADF for a lock the descriptor's mode does not allow,
/// EINVAL for a bad type or range, or an OFD request with `l_pid` set).
fn record_lock(call: &Call<'_>, file: &Arc<OpenFile>, command: u64, address: u64) -> CallResult {
    use linux_abi::record_locks::{range_of, LockKind, LockOwner};
    const F_RDLCK: u16 = 0;
    const F_WRLCK: u16 = 1;
    const F_UNLCK: u16 = 2;
    let mut request = [0u8; 32];
    call.read_in(address, &mut request)?;
    let half = |at: usize| u16::from_le_bytes([request[at], request[at + 1]]);
    let word = |at: usize| i64::from_le_bytes(request[at..at + 8].try_into().unwrap_or_default());
    let (kind, whence, start, length, pid) = (half(0), half(2), word(8), word(16), i32::from_le_bytes(request[24..28].try_into().unwrap_or_default()));
    let description = matches!(command, F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW);
    if description && pid != 0 {
        return Err(Errno::EINVAL);
    }
    let Backing::Inode(inode) = file.backing else { return Err(Errno::EINVAL) };
    let size = fs::with(|tree| tree.stat(inode))?.size;
    let position = file.with_offset(|offset| *offset);
    let (from, to) = range_of(whence, start, length, position, size)?;
    let owner = if description { LockOwner::Description(Arc::as_ptr(file) as u64) } else { LockOwner::Process(call.pid()) };
    let lock_kind = match kind {
        F_RDLCK => Some(LockKind::Read),
        F_WRLCK => Some(LockKind::Write),
        F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    if matches!(command, F_GETLK | F_OFD_GETLK) {
        let kind = lock_kind.ok_or(Errno::EINVAL)?;
        let mut answer = request;
        match crate::record_locks::conflict(inode, owner, kind, from, to) {
            None => answer[0..2].copy_from_slice(&F_UNLCK.to_le_bytes()),
            Some(held) => {
                answer[0..2].copy_from_slice(&(if held.kind == LockKind::Read { F_RDLCK } else { F_WRLCK }).to_le_bytes());
                answer[2..4].copy_from_slice(&0u16.to_le_bytes()); // SEEK_SET
                answer[8..16].copy_from_slice(&held.start.to_le_bytes());
                let length = if held.end == u64::MAX { 0 } else { held.end - held.start };
                answer[16..24].copy_from_slice(&length.to_le_bytes());
                let holder = match held.owner {
                    LockOwner::Process(pid) => pid as i32,
                    LockOwner::Description(_) => -1,
                };
                answer[24..28].copy_from_slice(&holder.to_le_bytes());
            }
        }
        call.write_out(address, &answer)?;
        return value(0);
    }
    match lock_kind {
        None => crate::record_locks::unlock(inode, owner, from, to)?,
        Some(kind) => {
            let allowed = if kind == LockKind::Read { file.readable() } else { file.writable() };
            if !allowed {
                return Err(Errno::EBADF);
            }
            let wait = matches!(command, F_SETLKW | F_OFD_SETLKW);
            crate::record_locks::lock(inode, owner, kind, from, to, wait, &|| call.interrupted())?;
        }
    }
    value(0)
}
const F_SETPIPE_SZ: u64 = 1031;
const F_GETPIPE_SZ: u64 = 1032;
const PAGE_BYTES: u64 = 4096;
/// `fs.pipe-max-size`'s default: the most an unprivileged process may ask.
const PIPE_MAX_SIZE: u64 = 1 << 20;

pub fn lseek(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let (offset, whence) = (call.argument(1) as i64, call.argument(2));
    let size = match &file.backing {
        Backing::Inode(inode) => fs::with(|tree| tree.stat(*inode))?.size as i64,
        Backing::Device(Device::Disk(major, minor), _) => crate::block_files::size(crate::block_files::disk((*major, *minor)).ok_or(Errno::ENXIO)?) as i64,
        Backing::Device(Device::ProcessMemory(_), _) => 0,
        _ => return Err(Errno::ESPIPE),
    };
    file.with_offset(|position| {
        let base = match whence {
            SEEK_SET => 0,
            SEEK_CUR => *position as i64,
            SEEK_END => size,
            _ => return Err(Errno::EINVAL),
        };
        let target = base.checked_add(offset).filter(|target| *target >= 0).ok_or(Errno::EINVAL)?;
        *position = target as u64;
        value(target as u64)
    })
}

/// `fsync`/`fdatasync`: a disk's write cache is flushed; a file's file
/// system makes it durable (ext4 commits its journal; the tmpfs has
/// nothing to write back).
pub fn fsync(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    match file.backing {
        Backing::Device(Device::Disk(major, minor), _) => {
            crate::block_files::flush(crate::block_files::disk((major, minor)).ok_or(Errno::ENXIO)?)?;
        }
        Backing::Inode(inode) => fs::with(|tree| {
            // Stores through shared mappings first: fsync covers them.
            crate::page_cache::write_back(tree, inode)?;
            tree.sync_file(inode)
        })?,
        _ => {}
    }
    value(0)
}

pub fn ftruncate(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let length = call.argument(1) as i64;
    if length < 0 {
        return Err(Errno::EINVAL);
    }
    let Backing::Inode(inode) = file.backing else { return Err(Errno::EINVAL) };
    if !file.writable() {
        return Err(Errno::EINVAL);
    }
    check_file_size(call, length as u64)?;
    fs::with(|tree| crate::page_cache::truncate(tree, inode, length as u64))?;
    value(0)
}

pub fn fchmod(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let inode = file.inode().ok_or(Errno::EINVAL)?;
    super::permissions::check_owner(call, inode)?;
    fs::with(|tree| tree.set_permissions(inode, call.argument(1) as u32, now()))?;
    value(0)
}

/// Which of the two pipe calls: `pipe` has no flags argument.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PipeCall {
    Pipe,
    Pipe2,
}

/// `pipe`, `pipe2`. The two descriptors become the caller's only once
/// their numbers reached user memory: when writing the pair fails
/// (EFAULT), both are dropped again, as Linux never installs them.
pub fn pipe(call: &mut Call<'_>, which: PipeCall) -> CallResult {
    let pipe_flags = if which == PipeCall::Pipe2 { call.argument(1) as u32 } else { 0 };
    if pipe_flags & !(flags::O_CLOEXEC | flags::O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let pipe = Arc::new(Pipe::new());
    let close_on_exec = pipe_flags & flags::O_CLOEXEC != 0;
    let nonblocking = pipe_flags & flags::O_NONBLOCK;
    let reader = OpenFile::new(Backing::PipeReader(pipe.clone()), flags::O_RDONLY | nonblocking);
    let writer = OpenFile::new(Backing::PipeWriter(pipe), flags::O_WRONLY | nonblocking);
    let read_end = install_descriptor(call, reader, Placement::LowestFrom(0), close_on_exec)?;
    let write_end = match install_descriptor(call, writer, Placement::LowestFrom(0), close_on_exec) {
        Ok(fd) => fd,
        Err(errno) => {
            drop_descriptor(call, read_end);
            return Err(errno);
        }
    };
    let written = UserPtr::<[i32; 2]>::argument(call, 0).ok_or(Errno::EFAULT).and_then(|pair| pair.write(call, &[read_end as i32, write_end as i32]));
    if let Err(errno) = written {
        drop_descriptor(call, write_end);
        drop_descriptor(call, read_end);
        return Err(errno);
    }
    value(0)
}

/// Takes back descriptor `fd` this call installed (nobody saw it yet).
pub(super) fn drop_descriptor(call: &Call<'_>, fd: u32) {
    if let Ok(removed) = caps().with(|database| database.drop_capability(call.process.native.space(), fd)) {
        undo(&removed);
    }
    let _ = call.process.state().set_close_on_exec(fd, false);
}

/// The `struct stat` bytes of `stat` (the layout is `linux-abi`'s).
pub fn stat_bytes(stat: &Stat) -> [u8; linux_abi::STAT_BYTES] {
    file_status(stat).stat_bytes()
}

/// `st_dev` of what has no file system (pipes, sockets, anonymous inodes):
/// Linux's pipefs, sockfs and anon_inodefs are anonymous devices too.
const ANONYMOUS_DEVICE: (u32, u32) = (0, 1);

/// What a file system says of a file, in the ABI's terms: 4 KiB is the
/// preferred I/O size everywhere.
fn file_status(stat: &Stat) -> linux_abi::FileStatus {
    linux_abi::FileStatus {
        device: stat.file_system_device,
        inode: stat.inode,
        links: stat.links,
        mode: stat.mode,
        uid: stat.uid,
        gid: stat.gid,
        represented_device: stat.device,
        size: stat.size,
        block_size: 4096,
        blocks: stat.blocks,
        accessed: stat.accessed,
        modified: stat.modified,
        changed: stat.changed,
    }
}

/// The status of what a descriptor is open on.
fn descriptor_stat(file: &OpenFile, fd: u64) -> Result<Stat, Errno> {
    match &file.backing {
        Backing::Inode(inode) | Backing::Device(_, inode) => fs::with(|tree| tree.stat(*inode)),
        Backing::MessageQueue(_) => Ok(anonymous_stat(fd, 0o100600)),
        Backing::PipeReader(_) | Backing::PipeWriter(_) => Ok(anonymous_stat(fd, 0o010600)),
        Backing::Socket(_) | Backing::Netlink(_) => Ok(anonymous_stat(fd, 0o140777)),
        Backing::Inet(socket) => Ok(Stat { inode: crate::inet_sockets::inode_number(socket.id), ..anonymous_stat(fd, 0o140777) }),
        // Linux's anonymous inodes have no file type bits.
        Backing::EventCounter(_) | Backing::Epoll(_) | Backing::Timer(_) | Backing::Signals(_) | Backing::Kvm(_) => Ok(anonymous_stat(fd, 0o600)),
    }
}

/// The inode number `fstat` gives descriptor `fd` with no file behind it.
pub(super) fn anonymous_inode_number(fd: u64) -> u64 {
    0x1000 + fd
}

/// The status of a descriptor with no file behind it.
fn anonymous_stat(fd: u64, mode: u32) -> Stat {
    let now = now();
    Stat { inode: anonymous_inode_number(fd), mode, links: 1, uid: 0, gid: 0, device: (0, 0), file_system_device: ANONYMOUS_DEVICE, size: 0, blocks: 0, accessed: now, modified: now, changed: now }
}

pub fn fstat(call: &mut Call<'_>) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let stat = descriptor_stat(&file, call.argument(0))?;
    call.write_out(call.argument(1), &stat_bytes(&stat))?;
    value(0)
}

/// `stat` follows a final symbolic link, `lstat` does not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FinalLink {
    Follow,
    DoNotFollow,
}

pub fn stat(call: &mut Call<'_>, final_link: FinalLink) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    let inode = super::paths::lookup_at(call, AT_FDCWD as u64, &path, final_link == FinalLink::Follow)?;
    let stat = fs::with(|tree| tree.stat(inode))?;
    call.write_out(call.argument(1), &stat_bytes(&stat))?;
    value(0)
}

/// What `*at` status calls look at: a path from `dirfd`, or `dirfd`
/// itself with `AT_EMPTY_PATH` and an empty path.
fn stat_at(call: &Call<'_>, dirfd: u64, path_address: u64, at_flags: u64) -> Result<Stat, Errno> {
    const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
    let path = call.string_in(path_address, vfs::MAX_PATH - 1)?;
    if path.is_empty() {
        if at_flags & AT_EMPTY_PATH == 0 {
            return Err(Errno::ENOENT);
        }
        if dirfd as i64 as i32 == AT_FDCWD as i32 {
            let cwd = call.process.state().cwd;
            return fs::with(|tree| tree.stat(cwd));
        }
        let file = descriptor(call, dirfd)?;
        return descriptor_stat(&file, dirfd);
    }
    let inode = super::paths::lookup_at(call, dirfd, &path, at_flags & AT_SYMLINK_NOFOLLOW == 0)?;
    fs::with(|tree| tree.stat(inode))
}

pub fn newfstatat(call: &mut Call<'_>) -> CallResult {
    let stat = stat_at(call, call.argument(0), call.argument(1), call.argument(3))?;
    call.write_out(call.argument(2), &stat_bytes(&stat))?;
    value(0)
}

pub fn statx(call: &mut Call<'_>) -> CallResult {
    let stat = stat_at(call, call.argument(0), call.argument(1), call.argument(2))?;
    let bytes = file_status(&stat).statx_bytes();
    call.write_out(call.argument(4), &bytes)?;
    value(0)
}

/// `getdents` and `getdents64`: the directory's next entries in `format`.
pub fn getdents(call: &mut Call<'_>, format: linux_abi::DirentFormat) -> CallResult {
    let file = descriptor(call, call.argument(0))?;
    let (buffer, size) = (call.argument(1), call.argument(2) as usize);
    let Backing::Inode(inode) = file.backing else { return Err(Errno::ENOTDIR) };
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve(size.min(CHUNK)).map_err(|_| Errno::ENOMEM)?;
    file.with_offset(|position| -> Result<(), Errno> {
        let start = *position as usize;
        let mut index = start;
        let end = fs::with(|tree| {
            tree.visit_entries(inode, start, |name, id, kind| {
                let length = format.record_length(name.len());
                if out.len() + length > size {
                    return false;
                }
                let appended = format.append(&mut out, id.number.0, index as u64 + 1, kind.dirent_type(), name).is_some();
                index += usize::from(appended);
                appended
            })
        })?;
        if out.is_empty() {
            // Nothing fit: an error if an entry was there (buffer too small).
            let mut remaining = false;
            fs::with(|tree| {
                tree.visit_entries(inode, end, |_, _, _| {
                    remaining = true;
                    false
                })
            })?;
            if remaining {
                return Err(Errno::EINVAL);
            }
        }
        *position = end as u64;
        Ok(())
    })?;
    call.write_out(buffer, &out)?;
    value(out.len() as u64)
}

/// The block-device ioctls tools ask a disk: its size in bytes and in
/// 512-byte sectors, its sector sizes, whether it is read-only, and a
/// flush (Linux's `BLKFLSBUF` also drops cached buffers; there are none).
fn disk_ioctl(call: &Call<'_>, numbers: (u32, u32), request: u64, argument: u64) -> CallResult {
    const BLKROGET: u64 = 0x125E;
    const BLKGETSIZE: u64 = 0x1260;
    const BLKFLSBUF: u64 = 0x1261;
    const BLKSSZGET: u64 = 0x1268;
    const BLKPBSZGET: u64 = 0x127B;
    const BLKGETSIZE64: u64 = 0x8008_1272;
    let disk = crate::block_files::disk(numbers).ok_or(Errno::ENXIO)?;
    let bytes = crate::block_files::size(disk);
    match request {
        BLKGETSIZE64 => call.write_out(argument, &bytes.to_le_bytes())?,
        BLKGETSIZE => call.write_out(argument, &(bytes / 512).to_le_bytes())?,
        BLKSSZGET | BLKPBSZGET => call.write_out(argument, &512u32.to_le_bytes())?,
        BLKROGET => call.write_out(argument, &u32::from(disk.is_read_only()).to_le_bytes())?,
        BLKFLSBUF => crate::block_files::flush(disk)?,
        _ => return Err(Errno::ENOTTY),
    }
    value(0)
}

pub fn ioctl(call: &mut Call<'_>) -> CallResult {
    const TCGETS: u64 = 0x5401;
    const TCSETS: u64 = 0x5402;
    const TCSETSW: u64 = 0x5403;
    const TCSETSF: u64 = 0x5404;
    const TIOCSCTTY: u64 = 0x540E;
    const TIOCGPGRP: u64 = 0x540F;
    const TIOCSPGRP: u64 = 0x5410;
    const TIOCGWINSZ: u64 = 0x5413;
    const TIOCSWINSZ: u64 = 0x5414;
    const FIONREAD: u64 = 0x541B;
    const TIOCNOTTY: u64 = 0x5422;
    const FIONBIO: u64 = 0x5421;
    const TIOCGSID: u64 = 0x5429;
    // The request is an `unsigned int` (C callers that pass an `int`,
    // as musl's `ioctl` does, sign-extend requests with bit 31 set, such
    // as every `_IOR`).
    let (request, argument) = (u64::from(call.argument(1) as u32), call.argument(2));
    let file = descriptor(call, call.argument(0))?;
    if request == FIONBIO {
        let mut word = [0u8; 4];
        call.read_in(argument, &mut word)?;
        let status = file.status();
        let nonblocking = if u32::from_le_bytes(word) != 0 { flags::O_NONBLOCK } else { 0 };
        file.set_status((status & !flags::O_NONBLOCK) | nonblocking);
        return value(0);
    }
    if let Backing::Device(Device::Disk(major, minor), _) = file.backing {
        return disk_ioctl(call, (major, minor), request, argument);
    }
    if matches!(file.backing, Backing::Device(Device::Kvm, _) | Backing::Kvm(_)) {
        return super::kvm::ioctl(call, &file, request, argument);
    }
    if matches!(file.backing, Backing::Socket(_) | Backing::Inet(_) | Backing::Netlink(_)) && super::interface_ioctls::is_interface_request(request) {
        return super::interface_ioctls::ioctl(call, request, argument, matches!(file.backing, Backing::Inet(_)));
    }
    if !matches!(file.backing, Backing::Device(Device::Console, _)) {
        return Err(Errno::ENOTTY);
    }
    match request {
        TCGETS => {
            call.write_out(argument, &console::termios().to_bytes())?;
            value(0)
        }
        TCSETS | TCSETSW | TCSETSF => {
            let mut bytes = [0u8; 36];
            call.read_in(argument, &mut bytes)?;
            console::set_termios(Termios::from_bytes(&bytes), request == TCSETSF);
            value(0)
        }
        TIOCGPGRP => {
            call.write_out(argument, &console::foreground().to_le_bytes())?;
            value(0)
        }
        TIOCSPGRP => {
            let mut group = [0u8; 4];
            call.read_in(argument, &mut group)?;
            console::set_foreground(u32::from_le_bytes(group));
            value(0)
        }
        TIOCGSID => {
            call.write_out(argument, &console::session().to_le_bytes())?;
            value(0)
        }
        TIOCGWINSZ => {
            let (rows, columns) = console::window();
            let mut size = [0u8; 8];
            size[0..2].copy_from_slice(&rows.to_le_bytes());
            size[2..4].copy_from_slice(&columns.to_le_bytes());
            call.write_out(argument, &size)?;
            value(0)
        }
        TIOCSWINSZ => {
            let mut size = [0u8; 8];
            call.read_in(argument, &mut size)?;
            console::set_window(u16::from_le_bytes([size[0], size[1]]), u16::from_le_bytes([size[2], size[3]]));
            value(0)
        }
        FIONREAD => {
            call.write_out(argument, &u32::from(console::readable()).to_le_bytes())?;
            value(0)
        }
        TIOCSCTTY | TIOCNOTTY => value(0),
        _ => Err(Errno::EINVAL),
    }
}

/// The descriptions behind descriptors `fds` (`None`: no such descriptor),
/// in order. `poll` and `select` look them up once for the first check,
/// which also tells whether to watch the network. Each later check (after
/// a sleep) looks them up again, so a descriptor closed meanwhile reads
/// as closed, as on Linux. Before, the network question and the first
/// check looked each descriptor up separately: two look-ups per
/// descriptor per call.
/// They go through the thread's descriptor cache, whose batch table
/// answers without a lock while no capability anywhere was withdrawn;
/// otherwise `open_files::files` takes each lock once for all of them.
fn look_up_all(call: &Call<'_>, fds: impl Iterator<Item = u64> + Clone) -> Result<Vec<Option<Arc<OpenFile>>>, Errno> {
    let space = call.process.native.space();
    match call.thread.descriptors.try_borrow_mut() {
        Ok(mut cache) => cache.files(space, fds),
        Err(_) => open_files::files(space, fds),
    }
}

/// Whether any of `files` may report the network's changes (an Internet
/// socket, or an epoll instance, which may hold one): a `poll` or
/// `select` of none waits for local changes only.
fn watches_network(files: &[Option<Arc<OpenFile>>]) -> bool {
    files.iter().flatten().any(|file| matches!(file.backing, Backing::Inet(_) | Backing::Epoll(_)))
}

/// Waits until `check` finds something ready, the deadline passes
/// (nanoseconds of uptime; `None`: forever) or a signal comes. `network`:
/// whether what `check` looks at may change with the network.
pub(super) fn wait_ready(call: &Call<'_>, deadline: Option<u64>, network: bool, check: impl FnMut() -> Result<usize, Errno>) -> Result<usize, Errno> {
    // A zero timeout returns after its first check: no wake-up to ask for.
    let registration = if deadline.is_some_and(is_due) {
        crate::poll_wakeups::Registration::none()
    } else if network {
        crate::poll_wakeups::Registration::new()
    } else {
        crate::poll_wakeups::Registration::only(crate::poll_wakeups::Source::Local)
    };
    wait_ready_in(call, deadline, registration, check)
}

/// The poller registration for a `poll` or `select` of `files`: every
/// set when one may report the network's changes; the pipes' own sets
/// when all are pipes (a change of another pipe wakes nobody here); else
/// the local set.
fn registration_for(files: &[Option<Arc<OpenFile>>]) -> crate::poll_wakeups::Registration {
    use crate::poll_wakeups::{HasOwnPollers, Registration, Source};
    if watches_network(files) {
        return Registration::new();
    }
    let all_pipes = files.iter().flatten().all(|file| matches!(file.backing, Backing::PipeReader(_) | Backing::PipeWriter(_)));
    let count = distinct_pipes(files).count();
    // Each own set costs a registration per check; past a few dozen
    // pipes, the local set's spurious wake-ups cost less.
    if !all_pipes || count == 0 || count > OWN_SETS_AT_MOST {
        return Registration::only(Source::Local);
    }
    Registration::in_own_sets(distinct_pipes(files).map(|pipe| pipe.clone() as Arc<dyn HasOwnPollers>), count)
}

/// [`registration_for`], unless `deadline` has passed already (a zero
/// timeout): a wait that returns after its first check needs no wake-up.
fn registration_unless_due(deadline: Option<u64>, files: &[Option<Arc<OpenFile>>]) -> crate::poll_wakeups::Registration {
    if deadline.is_some_and(is_due) {
        return crate::poll_wakeups::Registration::none();
    }
    registration_for(files)
}

/// The pipes `files` names, a run of descriptors naming one pipe (dup'ed
/// ends) once; a pipe named again later comes again (and registers
/// again, harmlessly).
fn distinct_pipes(files: &[Option<Arc<OpenFile>>]) -> impl Iterator<Item = &Arc<crate::pipes::Pipe>> {
    let mut last: Option<&Arc<crate::pipes::Pipe>> = None;
    files
        .iter()
        .flatten()
        .filter_map(|file| match &file.backing {
            Backing::PipeReader(pipe) | Backing::PipeWriter(pipe) => Some(pipe),
            _ => None,
        })
        .filter(move |pipe| !core::mem::replace(&mut last, Some(*pipe)).is_some_and(|last| Arc::ptr_eq(last, pipe)))
}

/// The most pipes a `poll` or `select` waits on in their own sets.
const OWN_SETS_AT_MOST: usize = 32;

/// [`wait_ready`] with the poller registration made by the caller.
fn wait_ready_in(call: &Call<'_>, deadline: Option<u64>, mut registration: crate::poll_wakeups::Registration, mut check: impl FnMut() -> Result<usize, Errno>) -> Result<usize, Errno> {
    // Registered before the first check: a pipe, socket or eventfd change
    // after it ends the sleep at once (`poll_wakeups`).
    loop {
        registration.renew();
        let ready = check()?;
        if ready > 0 {
            return Ok(ready);
        }
        let now = machine::timer::uptime_nanoseconds();
        if deadline.is_some_and(|deadline| now >= deadline) {
            return Ok(0);
        }
        if call.interrupted() {
            // Without a time limit the call runs again when no handler
            // runs (Linux: ERESTARTNOHAND); with one, EINTR (Linux goes
            // on with the time left, which is not kept here yet).
            return Err(if deadline.is_none() { linux_abi::restart::ERESTARTNOHAND } else { Errno::EINTR });
        }
        let next = (now + 10_000_000).min(deadline.unwrap_or(u64::MAX));
        sched::sleep_until(next, || registration.changed() || call.interrupted());
    }
}

/// `pollfd` entries a `poll` keeps on the kernel stack; more go to the heap.
const POLL_ENTRIES_ON_STACK: usize = 32;

/// The entry in `raw`, one whole `pollfd` (a buffer of whole entries cut
/// by `chunks(PollFd::SIZE)` gives nothing shorter, so decoding cannot fail).
fn decoded_poll_entry(raw: &[u8]) -> linux_abi::poll::PollFd {
    use linux_abi::UserValue;
    linux_abi::poll::PollFd::decode(raw).expect("a whole pollfd")
}

/// The descriptors `pollfd` entries `bytes` name; a negative one is
/// ignored (u64::MAX names none).
fn poll_descriptors(bytes: &[u8]) -> impl Iterator<Item = u64> + Clone + '_ {
    use linux_abi::UserValue;
    bytes.chunks(linux_abi::poll::PollFd::SIZE).map(decoded_poll_entry).map(|entry| if entry.fd >= 0 { entry.fd as u64 } else { u64::MAX })
}

fn poll_entries(call: &Call<'_>, address: u64, count: u64, deadline: Option<u64>) -> CallResult {
    use linux_abi::poll::PollFd;
    use linux_abi::UserValue;
    if count > 4096 {
        return Err(Errno::EINVAL);
    }
    let length = count as usize * PollFd::SIZE;
    // The caller's entries as they are in its memory: each check decodes
    // them (a few instructions each) and writes only their `revents`.
    let mut on_stack = [0u8; POLL_ENTRIES_ON_STACK * PollFd::SIZE];
    let mut on_heap = Vec::new();
    let bytes: &mut [u8] = if length <= on_stack.len() {
        &mut on_stack[..length]
    } else {
        on_heap.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
        on_heap.resize(length, 0);
        &mut on_heap
    };
    call.read_in(address, bytes)?;
    let mut first = Some(look_up_all(call, poll_descriptors(bytes))?);
    let registration = registration_unless_due(deadline, first.as_deref().unwrap_or(&[]));
    let ready = wait_ready_in(call, deadline, registration, || {
        let files = match first.take() {
            Some(files) => files,
            None => look_up_all(call, poll_descriptors(bytes))?,
        };
        let mut ready = 0;
        for (raw, file) in bytes.chunks_mut(PollFd::SIZE).zip(&files) {
            let mut entry = decoded_poll_entry(raw);
            entry.revents = entry.revents_for(file.as_ref().map(|file| file.readiness(0)));
            ready += usize::from(entry.revents != 0);
            entry.encode(raw);
        }
        Ok(ready)
    })?;
    call.write_out(address, bytes)?;
    value(ready as u64)
}

pub fn poll(call: &mut Call<'_>) -> CallResult {
    let timeout = call.argument(2) as i32;
    let deadline = (timeout >= 0).then(|| deadline_after(timeout as u64 * 1_000_000));
    poll_entries(call, call.argument(0), call.argument(1), deadline)
}

pub fn ppoll(call: &mut Call<'_>) -> CallResult {
    let deadline = timespec_deadline(call, 2)?;
    poll_entries(call, call.argument(0), call.argument(1), deadline)
}

/// The deadline the `timespec` timeout in argument `index` sets (`None`
/// for NULL: no timeout).
pub(super) fn timespec_deadline(call: &Call<'_>, index: usize) -> Result<Option<u64>, Errno> {
    let Some(timeout) = UserPtr::<linux_abi::Timespec>::argument(call, index) else { return Ok(None) };
    Ok(Some(deadline_after(timeout.read(call)?.as_nanoseconds())))
}

/// A deadline that is already due: a zero timeout's, known without a
/// clock read (uptime is never below it).
const DUE_AT_ONCE: u64 = 0;

/// The deadline `nanoseconds` from now (a zero timeout: [`DUE_AT_ONCE`]).
pub(super) fn deadline_after(nanoseconds: u64) -> u64 {
    if nanoseconds == 0 {
        return DUE_AT_ONCE;
    }
    machine::timer::uptime_nanoseconds().saturating_add(nanoseconds)
}

/// Whether `deadline` has passed.
fn is_due(deadline: u64) -> bool {
    deadline == DUE_AT_ONCE || machine::timer::uptime_nanoseconds() >= deadline
}

/// `select` takes a `timeval`; `pselect6` a `timespec` (and a mask).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SelectCall {
    Select,
    Pselect6,
}

/// Words of a `select` set: 1,024 descriptors (`FD_SETSIZE`).
const SELECT_WORDS: usize = 1024 / 64;

pub fn select(call: &mut Call<'_>, which: SelectCall) -> CallResult {
    let pselect = which == SelectCall::Pselect6;
    let count = call.argument(0);
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let deadline = if pselect {
        timespec_deadline(call, 4)?
    } else {
        let timeout = UserPtr::<linux_abi::Timeval>::argument(call, 4).map(|timeout| timeout.read(call)).transpose()?;
        timeout.map(|timeout| deadline_after(timeout.as_nanoseconds()))
    };
    // The three sets, each read in one copy, live on the kernel stack
    // (1,024 descriptors at most: 128 bytes a set).
    let words = count.div_ceil(64) as usize;
    let addresses = [call.argument(1), call.argument(2), call.argument(3)];
    let mut sets = [[0u64; SELECT_WORDS]; 3];
    for (set, &address) in sets.iter_mut().zip(&addresses) {
        if address != 0 {
            let mut bytes = [0u8; SELECT_WORDS * 8];
            call.read_in(address, &mut bytes[..words * 8])?;
            for (word, chunk) in set.iter_mut().zip(bytes[..words * 8].chunks_exact(8)) {
                *word = u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
            }
        }
    }
    let mut results = [[0u64; SELECT_WORDS]; 3];
    let wanted = |fd: u64| (sets[0][(fd / 64) as usize] | sets[1][(fd / 64) as usize]) & (1u64 << (fd % 64)) != 0;
    let mut first = Some(look_up_all(call, (0..count).filter(|&fd| wanted(fd)))?);
    let registration = registration_unless_due(deadline, first.as_deref().unwrap_or(&[]));
    let ready = wait_ready_in(call, deadline, registration, || {
        let files = match first.take() {
            Some(files) => files,
            None => look_up_all(call, (0..count).filter(|&fd| wanted(fd)))?,
        };
        let mut files = files.iter();
        let mut ready = 0;
        for set in results.iter_mut() {
            set.fill(0);
        }
        for fd in 0..count {
            let (word, bit) = ((fd / 64) as usize, 1u64 << (fd % 64));
            let wanted = [sets[0][word] & bit != 0, sets[1][word] & bit != 0];
            if !wanted[0] && !wanted[1] {
                continue;
            }
            // `files` holds one per wanted descriptor, in this order.
            let readiness = files.next().and_then(Option::as_ref).ok_or(Errno::EBADF)?.readiness(0);
            // A pending error counts as both, as Linux's `POLLIN_SET` and
            // `POLLOUT_SET` hold `POLLERR`.
            let (readable, writable) = (readiness.readable || readiness.error, readiness.writable || readiness.error);
            for (kind, is_ready) in [(0, readable), (1, writable)] {
                if wanted[kind] && is_ready {
                    results[kind][word] |= bit;
                    ready += 1;
                }
            }
        }
        Ok(ready)
    })?;
    for (set, &address) in results.iter().zip(&addresses) {
        if address != 0 {
            let mut bytes = [0u8; SELECT_WORDS * 8];
            for (chunk, word) in bytes.chunks_exact_mut(8).zip(&set[..words]) {
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            call.write_out(address, &bytes[..words * 8])?;
        }
    }
    value(ready as u64)
}

pub fn sendfile(call: &mut Call<'_>) -> CallResult {
    let (out_fd, in_fd, offset_address, count) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3) as usize);
    let input = descriptor(call, in_fd)?;
    let output = descriptor(call, out_fd)?;
    if !input.readable() || !output.writable() {
        return Err(Errno::EBADF);
    }
    if !matches!(input.backing, Backing::Inode(_)) {
        return Err(Errno::EINVAL);
    }
    let at = if offset_address != 0 { Some(call.word_in(offset_address)?) } else { None };
    if at.is_some_and(|offset| (offset as i64) < 0) {
        return Err(Errno::EINVAL);
    }
    let data = read_from(call, &input, count, at)?;
    let written = if data.is_empty() { 0 } else { write_to(call, &output, &data, None)? };
    if let Some(start) = at {
        call.write_out(offset_address, &(start + written as u64).to_le_bytes())?;
    } else if written < data.len() {
        // Give back what was read but not written.
        input.with_offset(|offset| *offset -= (data.len() - written) as u64);
    }
    value(written as u64)
}

const LOCK_SH: u64 = 1;
const LOCK_EX: u64 = 2;
const LOCK_NB: u64 = 4;
const LOCK_UN: u64 = 8;

/// `flock(fd, operation)`: a whole-file advisory lock held by the open file
/// description (shared by `dup` and `fork`), released by `LOCK_UN` or when
/// its last descriptor closes.
pub fn flock(call: &mut Call<'_>) -> CallResult {
    let (fd, operation) = (call.argument(0), call.argument(1));
    let file = open_files::file(call.process.native.space(), fd)?;
    let description = Arc::as_ptr(&file) as usize;
    let target = match &file.backing {
        Backing::Inode(inode) | Backing::Device(_, inode) => (u64::from(inode.file_system.0) << 48) ^ inode.number.0,
        // Pipes have no inode here: Linux locks them too, but no program
        // of ours relies on it.
        _ => return Err(Errno::EINVAL),
    };
    let nonblocking = operation & LOCK_NB != 0;
    let kind = match operation & !LOCK_NB {
        LOCK_SH => linux_abi::flock_table::FlockKind::Shared,
        LOCK_EX => linux_abi::flock_table::FlockKind::Exclusive,
        LOCK_UN => {
            crate::flocks::unlock(target, description);
            return value(0);
        }
        _ => return Err(Errno::EINVAL),
    };
    let interrupted = || call.interrupted();
    crate::flocks::lock(target, description, kind, nonblocking, &interrupted)?;
    value(0)
}
