//! Open file descriptions and file descriptors. A descriptor is a slot
//! of the process's capability space holding a file or pipe capability;
//! the capability's object is an open file description in this table
//! (what `open` made: the file, the offset, the status flags). `dup`
//! derives a capability (same description, shared offset), `close`
//! drops one, `fork` grants every descriptor to the child; when the last
//! capability of a description goes, the description is released.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use caps::{ObjectKind, Placement, Rights, Slot, SpaceId};
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use linux_abi::poll::Readiness;
use vfs::InodeId;

use super::fs;
use super::pipes::Pipe;
use kernel_objects::capabilities::caps;
use linux_abi::Errno;

/// Level of the description table and of each description's offset lock.
const TABLE_LEVEL: Level = Level::new(5);
const OFFSET_LEVEL: Level = Level::new(9);

/// `O_*` flags (x86-64 Linux values).
pub mod flags {
    /// Read only.
    pub const O_RDONLY: u32 = 0;
    /// Write only.
    pub const O_WRONLY: u32 = 1;
    /// Read and write.
    pub const O_RDWR: u32 = 2;
    /// Access-mode bits.
    pub const O_ACCMODE: u32 = 3;
    /// Create if missing.
    pub const O_CREAT: u32 = 0o100;
    /// With `O_CREAT`: fail if it exists.
    pub const O_EXCL: u32 = 0o200;
    /// Truncate to 0 on open.
    pub const O_TRUNC: u32 = 0o1000;
    /// Every write appends.
    pub const O_APPEND: u32 = 0o2000;
    /// Never wait.
    pub const O_NONBLOCK: u32 = 0o4000;
    /// Must be a directory.
    pub const O_DIRECTORY: u32 = 0o200000;
    /// Do not follow a final symbolic link.
    pub const O_NOFOLLOW: u32 = 0o400000;
    /// Close on exec.
    pub const O_CLOEXEC: u32 = 0o2000000;
    /// Only a path (no reading or writing).
    pub const O_PATH: u32 = 0o10000000;
    /// Flags `F_SETFL` may change.
    pub const SETTABLE: u32 = O_APPEND | O_NONBLOCK;
}

/// A character device.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Device {
    /// Reads end at once, writes vanish.
    Null,
    /// Reads give zeros.
    Zero,
    /// Reads give random bytes.
    Random,
    /// The console terminal.
    Console,
    /// A disk (`/dev/vda`…), by its device numbers.
    Disk(u32, u32),
    /// `/proc/<pid>/mem`: that process's memory, the offset its address.
    ProcessMemory(u32),
    /// `/dev/kvm`: virtual machines are made through it.
    Kvm,
}

/// What a description reads and writes.
pub enum Backing {
    /// A regular file or directory of the tree.
    Inode(InodeId),
    /// A device node.
    Device(Device, InodeId),
    /// The reading end of a pipe.
    PipeReader(Arc<Pipe>),
    /// The writing end of a pipe.
    PipeWriter(Arc<Pipe>),
    /// A POSIX message queue (`mq_open`).
    MessageQueue(Arc<crate::mqueues::MessageQueue>),
    /// One end of a connected Unix stream socket pair.
    Socket(alloc::sync::Arc<crate::named_sockets::UnixSocket>),
    /// An Internet socket (TCP or UDP).
    Inet(alloc::sync::Arc<crate::inet_sockets::InetSocket>),
    /// A route netlink socket.
    Netlink(alloc::sync::Arc<crate::netlink_sockets::NetlinkSocket>),
    /// An `eventfd` counter.
    EventCounter(crate::event_counters::EventCounter),
    /// An epoll instance.
    Epoll(crate::epoll::EpollSet),
    /// A `timerfd` timer.
    Timer(crate::timer_fds::TimerFd),
    /// A `signalfd` descriptor.
    Signals(crate::signal_fds::SignalFd),
    /// A virtual machine or one of its vCPUs.
    Kvm(KvmFile),
}

/// What a KVM descriptor is open on (`/dev/kvm` itself is a device).
pub enum KvmFile {
    /// A VM (`KVM_CREATE_VM`).
    Machine(Arc<kernel_objects::virtual_machines::VirtualMachine>),
    /// A vCPU (`KVM_CREATE_VCPU`).
    Processor(Arc<kernel_objects::virtual_machines::VirtualCpu>),
}

/// An open file description.
pub struct OpenFile {
    /// What it is open on.
    pub backing: Backing,
    status: AtomicU32,
    /// Sleeping: a read or write holds it while it waits for a disk.
    offset: crate::sleep_lock::SleepLock<u64>,
}

impl OpenFile {
    /// A description on `backing` with `O_*` status flags `status`.
    pub fn new(backing: Backing, status: u32) -> Self {
        Self { backing, status: AtomicU32::new(status & !flags::O_CLOEXEC), offset: crate::sleep_lock::SleepLock::new(OFFSET_LEVEL, 0) }
    }

    /// The status flags (access mode included).
    pub fn status(&self) -> u32 {
        self.status.load(Ordering::Relaxed)
    }

    /// Changes the settable status flags (`F_SETFL`).
    pub fn set_status(&self, status: u32) {
        let kept = self.status() & !flags::SETTABLE;
        self.status.store(kept | (status & flags::SETTABLE), Ordering::Relaxed);
    }

    /// Whether a read would not wait, a write would not wait, the other
    /// side has hung up, and an error is pending (`poll`, `select`,
    /// `epoll`). `depth`: how many epoll instances were looked through to
    /// get here.
    pub fn readiness(&self, depth: u32) -> Readiness {
        let (readable, writable, hung_up) = match &self.backing {
            Backing::Device(Device::Console, _) => (crate::tty::readable(), true, false),
            Backing::PipeReader(pipe) => (pipe.readiness().0, false, pipe.writers_gone()),
            // With no reader left a write does not wait (it is EPIPE), and
            // the end reports an error, as Linux's.
            Backing::PipeWriter(pipe) => {
                let (writable, readers_gone) = pipe.write_readiness();
                return Readiness { writable, error: readers_gone, ..Readiness::default() };
            }
            Backing::MessageQueue(queue) => {
                let (readable, writable) = queue.readiness();
                (readable, writable, false)
            }
            Backing::Socket(socket) => socket.readiness(),
            Backing::Inet(socket) => socket.readiness(),
            Backing::Netlink(socket) => socket.readiness(),
            Backing::EventCounter(counter) => {
                let (readable, writable) = counter.readiness();
                (readable, writable, false)
            }
            Backing::Epoll(set) => (set.any_ready(depth), false, false),
            Backing::Timer(timer) => (timer.readable(), false, false),
            Backing::Signals(signals) => (signals.readable(), false, false),
            Backing::Inode(_) | Backing::Device(..) | Backing::Kvm(_) => (true, true, false),
        };
        Readiness { readable, writable, hung_up, error: false }
    }

    /// A count that moves with everything that arrives or leaves (bytes
    /// written in or read out, connections), for edge-triggered epoll; 0
    /// where none is kept (such files report edges on readiness changes only).
    pub fn activity(&self) -> u64 {
        match &self.backing {
            Backing::PipeReader(pipe) | Backing::PipeWriter(pipe) => pipe.activity(),
            Backing::Inet(socket) => socket.activity(),
            _ => 0,
        }
    }

    /// Whether it was opened for reading.
    pub fn readable(&self) -> bool {
        self.status() & flags::O_ACCMODE != flags::O_WRONLY && self.status() & flags::O_PATH == 0
    }

    /// Whether it was opened for writing.
    pub fn writable(&self) -> bool {
        matches!(self.status() & flags::O_ACCMODE, flags::O_WRONLY | flags::O_RDWR) && self.status() & flags::O_PATH == 0
    }

    /// Runs `operation` on the offset under its lock.
    pub fn with_offset<R>(&self, operation: impl FnOnce(&mut u64) -> R) -> R {
        self.offset.with(operation)
    }

    /// The inode behind it, if it has one.
    pub fn inode(&self) -> Option<InodeId> {
        match self.backing {
            Backing::Inode(inode) | Backing::Device(_, inode) => Some(inode),
            _ => None,
        }
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        match &self.backing {
            Backing::Inode(inode) | Backing::Device(_, inode) => {
                // Its flock locks go with the description (only files have any).
                crate::flocks::release(self as *const OpenFile as usize);
                let _ = fs::with(|tree| {
                    tree.closed(*inode);
                    crate::page_cache::closed(tree, *inode);
                    Ok(())
                });
            }
            Backing::PipeReader(pipe) => pipe.end_closed(true),
            Backing::PipeWriter(pipe) => pipe.end_closed(false),
            // A socket end closes its directions as it drops.
            Backing::MessageQueue(_) | Backing::Socket(_) | Backing::Inet(_) | Backing::Netlink(_) | Backing::EventCounter(_) | Backing::Epoll(_) | Backing::Timer(_) | Backing::Signals(_) | Backing::Kvm(_) => {}
        }
    }
}

struct Entry {
    generation: u32,
    file: Option<Arc<OpenFile>>,
}

static TABLE: KernelTicketLock<Vec<Entry>> = KernelTicketLock::new(TABLE_LEVEL, Vec::new());

fn register(file: Arc<OpenFile>) -> Result<u64, Errno> {
    let mut table = TABLE.lock();
    let index = match table.iter().position(|entry| entry.file.is_none()) {
        Some(index) => index,
        None => {
            table.try_reserve(1).map_err(|_| Errno::ENFILE)?;
            table.push(Entry { generation: 0, file: None });
            table.len() - 1
        }
    };
    let entry = &mut table[index];
    entry.generation = entry.generation.wrapping_add(1);
    entry.file = Some(file);
    Ok(u64::from(entry.generation) << 32 | index as u64)
}

fn get(handle: u64) -> Option<Arc<OpenFile>> {
    file_in(&TABLE.lock(), handle)
}

/// The description `handle` names in `table`, if it is still there.
fn file_in(table: &[Entry], handle: u64) -> Option<Arc<OpenFile>> {
    let entry = table.get((handle & 0xFFFF_FFFF) as usize)?;
    if entry.generation != (handle >> 32) as u32 {
        return None;
    }
    entry.file.clone()
}

/// The description's last capability is gone: forget it (the `Arc`'s
/// drop closes the file or pipe end once no call still uses it).
pub fn release(handle: u64) {
    let released = {
        let mut table = TABLE.lock();
        match table.get_mut((handle & 0xFFFF_FFFF) as usize) {
            Some(entry) if entry.generation == (handle >> 32) as u32 => entry.file.take(),
            _ => None,
        }
    };
    // Its open-file-description locks go with it.
    if let Some(file) = &released {
        crate::record_locks::release(linux_abi::record_locks::LockOwner::Description(Arc::as_ptr(file) as u64));
    }
    drop(released);
    // A description that crossed CPU groups: its root capability goes.
    crate::group_descriptors::description_released(handle);
}

/// Installs `file` as a new descriptor of the process with capability
/// space `space`, at `placement`; returns the descriptor.
pub fn install(space: SpaceId, file: OpenFile, placement: Placement) -> Result<u32, Errno> {
    let (kind, rights) = kind_and_rights(&file);
    let handle = register(Arc::new(file))?;
    let made = caps().with(|database| database.create_object(space, kind, handle, 0, rights, placement));
    made.map_err(|error| {
        release(handle);
        Errno::from(error)
    })
}

fn kind_and_rights(file: &OpenFile) -> (ObjectKind, Rights) {
    let kind = match file.backing {
        Backing::PipeReader(_) | Backing::PipeWriter(_) | Backing::Socket(_) | Backing::Inet(_) | Backing::Netlink(_) => ObjectKind::Pipe,
        _ => ObjectKind::File,
    };
    let mut rights = Rights::GRANT.union(Rights::REVOKE);
    if file.readable() {
        rights = rights.union(Rights::READ);
    }
    if file.writable() {
        rights = rights.union(Rights::WRITE);
    }
    (kind, rights)
}

/// The description behind descriptor `fd`.
pub fn file(space: SpaceId, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    let slot = Slot::try_from(fd).map_err(|_| Errno::EBADF)?;
    let capability = caps().with(|database| database.capability(space, slot)).map_err(|_| Errno::EBADF)?;
    if !matches!(capability.object.kind(), ObjectKind::File | ObjectKind::Pipe) {
        return Err(Errno::EBADF);
    }
    get(capability.object.handle).ok_or(Errno::EBADF)
}

/// Handles [`files`] keeps on the stack.
const HANDLES_ON_STACK: usize = 32;

/// The descriptions behind descriptors `fds` of `space`, in order (`None`:
/// no descriptor there), as [`file()`] gives each. `poll` and `select` use
/// this for every descriptor they watch. It takes the capability
/// database's lock once and then the description table's once (the
/// database's level is above the table's, so the second is not taken
/// inside the first). A look-up of its own per descriptor took both locks
/// each time, and past four descriptors it also missed the per-thread
/// cache: about 260 instructions per descriptor.
pub fn files(space: SpaceId, fds: impl Iterator<Item = u64>) -> Result<Vec<Option<Arc<OpenFile>>>, Errno> {
    const NONE: u64 = u64::MAX;
    // The handles, found under the database's lock and then looked up in
    // the table under its own: on the stack for a few (a `poll` of ten
    // made five heap vectors per call), on the heap past that.
    let mut on_stack = [NONE; HANDLES_ON_STACK];
    let mut on_heap: Vec<u64> = Vec::new();
    let mut count = 0;
    let wanted = fds.size_hint().0;
    caps().with(|database| {
        let objects = database.objects_in(space).ok();
        for fd in fds {
            let handle = Slot::try_from(fd)
                .ok()
                .zip(objects.as_ref())
                .and_then(|(slot, objects)| objects.object_of(slot).ok())
                .filter(|&(kind, _)| is_descriptor(kind))
                .map_or(NONE, |(_, handle)| handle);
            if count < HANDLES_ON_STACK {
                on_stack[count] = handle;
            } else {
                if on_heap.is_empty() {
                    on_heap.try_reserve(wanted.max(2 * HANDLES_ON_STACK)).map_err(|_| Errno::ENOMEM)?;
                    on_heap.extend_from_slice(&on_stack);
                }
                on_heap.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                on_heap.push(handle);
            }
            count += 1;
        }
        Ok::<(), Errno>(())
    })?;
    let handles = if count <= HANDLES_ON_STACK { &on_stack[..count] } else { &on_heap[..] };
    let mut files = Vec::new();
    files.try_reserve_exact(handles.len()).map_err(|_| Errno::ENOMEM)?;
    let table = TABLE.lock();
    for &handle in handles {
        files.push((handle != NONE).then(|| file_in(&table, handle)).flatten());
    }
    Ok(files)
}

/// Whether `object` kinds are descriptors.
pub fn is_descriptor(kind: ObjectKind) -> bool {
    matches!(kind, ObjectKind::File | ObjectKind::Pipe)
}
