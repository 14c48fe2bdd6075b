//! System calls that name files by path: resolution relative to the
//! working directory or a directory descriptor (`AT_FDCWD` = -100), and
//! the calls that make, remove, rename and inspect names.

use alloc::vec::Vec;

use vfs::{FileKind, InodeId, Resolved, Timestamp, MAX_PATH};

use super::{value, Call, CallResult};
use linux_abi::Errno;
use crate::clock::now;
use crate::fs;
use crate::open_files;
use crate::procfs;

/// `AT_FDCWD`.
pub const AT_FDCWD: i64 = -100;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_REMOVEDIR: u64 = 0x200;
const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub const AT_EMPTY_PATH: u64 = 0x1000;

/// The path argument at `address`.
pub fn path_in(call: &Call<'_>, address: u64) -> Result<Vec<u8>, Errno> {
    let path = call.string_in(address, MAX_PATH - 1)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    Ok(path)
}

/// The directory relative paths start from: the working directory or `dirfd`'s.
pub fn start_directory(call: &Call<'_>, dirfd: u64) -> Result<InodeId, Errno> {
    if dirfd as i64 as i32 == AT_FDCWD as i32 {
        return Ok(call.process.state().cwd);
    }
    let file = open_files::file(call.process.native.space(), dirfd)?;
    let inode = file.inode().ok_or(Errno::ENOTDIR)?;
    if fs::with(|tree| tree.kind(inode))? != FileKind::Directory {
        return Err(Errno::ENOTDIR);
    }
    Ok(inode)
}

/// Resolves `path` from `dirfd` (see [`vfs::Tmpfs::resolve`]), bringing
/// `/proc` up to date first when the path leads there.
pub fn resolve_at(call: &Call<'_>, dirfd: u64, path: &[u8], follow: bool) -> Result<Resolved, Errno> {
    let start = if path.first() == Some(&b'/') { fs::with(|tree| Ok(tree.root()))? } else { start_directory(call, dirfd)? };
    let may_search = super::permissions::search_rule(call);
    if follow {
        if let Some((owner, fd)) = linux_abi::procfs_text::descriptor_link(path) {
            return descriptor_file(call, owner, fd);
        }
    }
    if procfs::concerns(path) {
        let facts = procfs::snapshot()?;
        let caller = call.pid();
        let descriptors = match procfs::descriptor_directory_owner(path, caller) {
            Some(pid) => descriptor_listing(call, pid)?,
            None => None,
        };
        let network = procfs::concerns_network(path).then(crate::inet_sockets::proc_net_files);
        let scheduler = procfs::concerns_scheduler(path).then(|| procfs::scheduler_report(&call.process));
        return fs::with(|tree| {
            procfs::refresh(tree, path, &facts, caller, descriptors.as_ref(), network.as_deref(), scheduler.as_deref())?;
            tree.resolve_as(start, path, follow, &may_search)
        });
    }
    fs::with(|tree| tree.resolve_as(start, path, follow, &may_search))
}

/// What `/proc/…/fd/N` leads to when followed: that descriptor's file
/// itself, as Linux's magic links do (musl's `fchmodat` and `fexecve` and
/// shells' process substitution rely on it). Another process's needs its
/// user or root (EACCES); a descriptor without a file in the tree (a pipe,
/// a socket) cannot be reopened here (ENXIO).
fn descriptor_file(call: &Call<'_>, owner: linux_abi::procfs_text::DescriptorOwner, fd: u32) -> Result<Resolved, Errno> {
    let file = descriptor_of(call, owner, fd)?;
    let inode = match file.backing {
        crate::open_files::Backing::Inode(inode) | crate::open_files::Backing::Device(_, inode) => inode,
        _ => return Err(Errno::ENXIO),
    };
    let root = fs::with(|tree| Ok(tree.root()))?;
    Ok(Resolved { parent: root, name: b".".to_vec(), inode: Some(inode), trailing_slash: false })
}

/// The open file behind descriptor `fd` of the caller or another process
/// (whose user, or root, the caller must be: EACCES); ENOENT for none.
fn descriptor_of(call: &Call<'_>, owner: linux_abi::procfs_text::DescriptorOwner, fd: u32) -> Result<alloc::sync::Arc<crate::open_files::OpenFile>, Errno> {
    use linux_abi::procfs_text::DescriptorOwner;
    let process = match owner {
        DescriptorOwner::Caller => call.process.clone(),
        DescriptorOwner::Process(pid) => crate::process::find(pid).filter(|found| found.state().exit_status.is_none()).ok_or(Errno::ENOENT)?,
    };
    if process.pid != call.pid() {
        let (mine, theirs) = (call.process.state().credentials.user, process.state().credentials.user);
        if mine.effective != 0 && mine.effective != theirs.real {
            return Err(Errno::EACCES);
        }
    }
    crate::open_files::file(process.native.space(), u64::from(fd)).map_err(|_| Errno::ENOENT)
}

/// What `readlink` gives for `/proc/…/fd/N`: the file's path, or for what
/// has none the kind and the inode number `fstat` reports, as Linux
/// writes them (`pipe:[…]`, `socket:[…]`, `anon_inode:[eventfd]`, …).
fn descriptor_target(call: &Call<'_>, owner: linux_abi::procfs_text::DescriptorOwner, fd: u32) -> Result<Vec<u8>, Errno> {
    let file = descriptor_of(call, owner, fd)?;
    match link_target(&file, fd) {
        procfs::LinkTarget::Inode(inode) => fs::with(|tree| tree.some_path_of(inode)),
        procfs::LinkTarget::Text(text) => Ok(text),
    }
}

/// The descriptors of process `pid` for its `/proc/<pid>/fd` (None when
/// there is no such live process, or the caller may not look: the
/// directory then stays as it was, and lookups in it fail as before).
fn descriptor_listing(call: &Call<'_>, pid: u32) -> Result<Option<procfs::DescriptorListing>, Errno> {
    use linux_abi::procfs_text::DescriptorOwner;
    let owner = if pid == call.pid() { DescriptorOwner::Caller } else { DescriptorOwner::Process(pid) };
    let process = match owner {
        DescriptorOwner::Caller => call.process.clone(),
        DescriptorOwner::Process(pid) => match crate::process::find(pid) {
            Some(process) => process,
            None => return Ok(None),
        },
    };
    let space = process.native.space();
    let slots: Vec<u32> = kernel_objects::capabilities::caps().with(|database| {
        database.contents(space).filter(|(_, capability)| open_files::is_descriptor(capability.object.kind())).map(|(slot, _)| slot).collect()
    });
    let mut entries = Vec::new();
    entries.try_reserve_exact(slots.len()).map_err(|_| Errno::ENOMEM)?;
    for fd in slots {
        match descriptor_of(call, owner, fd) {
            Ok(file) => entries.push((fd, link_target(&file, fd))),
            Err(Errno::EACCES) => return Ok(None),
            Err(_) => {} // closed meanwhile
        }
    }
    Ok(Some(procfs::DescriptorListing { pid, entries }))
}

/// Where descriptor `fd`'s link points.
fn link_target(file: &open_files::OpenFile, fd: u32) -> procfs::LinkTarget {
    use crate::open_files::Backing;
    let inode_number = super::files::anonymous_inode_number(u64::from(fd));
    let text = match &file.backing {
        Backing::Inode(inode) | Backing::Device(_, inode) => return procfs::LinkTarget::Inode(*inode),
        Backing::PipeReader(_) | Backing::PipeWriter(_) => alloc::format!("pipe:[{inode_number}]"),
        Backing::Socket(_) | Backing::Netlink(_) => alloc::format!("socket:[{inode_number}]"),
        Backing::Inet(socket) => alloc::format!("socket:[{}]", crate::inet_sockets::inode_number(socket.id)),
        Backing::EventCounter(_) => "anon_inode:[eventfd]".into(),
        Backing::Epoll(_) => "anon_inode:[eventpoll]".into(),
        Backing::Timer(_) => "anon_inode:[timerfd]".into(),
        Backing::Signals(_) => "anon_inode:[signalfd]".into(),
        Backing::MessageQueue(_) => "anon_inode:[mqueue]".into(),
        Backing::Kvm(open_files::KvmFile::Machine(_)) => "anon_inode:kvm-vm".into(),
        Backing::Kvm(open_files::KvmFile::Processor(vcpu)) => alloc::format!("anon_inode:kvm-vcpu:{}", vcpu.id),
    };
    procfs::LinkTarget::Text(text.into_bytes())
}

/// The inode `path` names from `dirfd`.
pub fn lookup_at(call: &Call<'_>, dirfd: u64, path: &[u8], follow: bool) -> Result<InodeId, Errno> {
    resolve_at(call, dirfd, path, follow)?.inode.ok_or(Errno::ENOENT)
}

/// `access` names a path from the working directory; `faccessat` and
/// `faccessat2` from a directory descriptor (`faccessat2` has flags).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum AccessCall {
    Access,
    Faccessat,
    Faccessat2,
}

pub fn access(call: &mut Call<'_>, which: AccessCall) -> CallResult {
    let (dirfd, path_address, mode) = if which == AccessCall::Access { (AT_FDCWD as u64, call.argument(0), call.argument(1)) } else { (call.argument(0), call.argument(1), call.argument(2)) };
    if mode & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_in(call, path_address)?;
    let inode = lookup_at(call, dirfd, &path, true)?;
    // The real ids decide, unless faccessat2 asks for the effective ones.
    const AT_EACCESS: u64 = 0x200;
    let effective = which == AccessCall::Faccessat2 && call.argument(3) & AT_EACCESS != 0;
    super::permissions::check(call, inode, mode as u32, !effective)?;
    value(0)
}

pub fn getcwd(call: &mut Call<'_>) -> CallResult {
    let (buffer, size) = (call.argument(0), call.argument(1) as usize);
    let cwd = call.process.state().cwd;
    let mut path = fs::with(|tree| tree.path_of(cwd))?;
    path.push(0);
    if path.len() > size {
        return Err(Errno::ERANGE);
    }
    call.write_out(buffer, &path)?;
    value(path.len() as u64)
}

pub fn chdir(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    let inode = lookup_at(call, AT_FDCWD as u64, &path, true)?;
    set_cwd(call, inode)
}

pub fn fchdir(call: &mut Call<'_>) -> CallResult {
    let file = open_files::file(call.process.native.space(), call.argument(0))?;
    let inode = file.inode().ok_or(Errno::ENOTDIR)?;
    set_cwd(call, inode)
}

fn set_cwd(call: &Call<'_>, inode: InodeId) -> CallResult {
    if fs::with(|tree| tree.kind(inode))? != FileKind::Directory {
        return Err(Errno::ENOTDIR);
    }
    call.process.state().cwd = inode;
    value(0)
}

pub fn mkdir(call: &mut Call<'_>) -> CallResult {
    make_directory(call, AT_FDCWD as u64, call.argument(0), call.argument(1))
}

pub fn mkdirat(call: &mut Call<'_>) -> CallResult {
    make_directory(call, call.argument(0), call.argument(1), call.argument(2))
}

fn make_directory(call: &Call<'_>, dirfd: u64, path_address: u64, mode: u64) -> CallResult {
    make_node(call, dirfd, path_address, FileKind::Directory, mode as u32)
}

/// Makes a `kind` node at the path (EEXIST for an existing name) with
/// `mode` less the umask, owned by the caller, if it may change the
/// directory.
fn make_node(call: &Call<'_>, dirfd: u64, path_address: u64, kind: FileKind, mode: u32) -> CallResult {
    let path = path_in(call, path_address)?;
    make_node_at(call, dirfd, &path, kind, mode)?;
    value(0)
}

/// Makes a node of `kind` at `path` (EEXIST when the name is taken), owned
/// by the caller, with `mode` less the umask; its inode (`bind` makes a
/// socket's name this way).
pub(super) fn make_node_at(call: &Call<'_>, dirfd: u64, path: &[u8], kind: FileKind, mode: u32) -> Result<vfs::InodeId, Errno> {
    let resolved = resolve_at(call, dirfd, path, false)?;
    if resolved.inode.is_some() {
        return Err(Errno::EEXIST);
    }
    let umask = call.process.state().umask;
    super::permissions::check_directory_change(call, resolved.parent)?;
    let made = fs::with(|tree| tree.create(resolved.parent, &resolved.name, kind, mode & 0o7777 & !umask, now()))?;
    super::permissions::own_new(call, made)?;
    Ok(made)
}

/// `mknod(path, mode, device)` and `mknodat(dirfd, …)`: a regular file,
/// a FIFO, a socket node or a character device node (root may make them);
/// EPERM for a directory or a block device (not supported), EINVAL for an
/// unknown type, EEXIST for an existing name.
pub fn mknod(call: &mut Call<'_>, at: bool) -> CallResult {
    const S_IFMT: u32 = 0o170000;
    const S_IFREG: u32 = 0o100000;
    const S_IFCHR: u32 = 0o020000;
    const S_IFIFO: u32 = 0o010000;
    const S_IFDIR: u32 = 0o040000;
    const S_IFBLK: u32 = 0o060000;
    const S_IFSOCK: u32 = 0o140000;
    let first = usize::from(at);
    let (dirfd, path_address) = if at { (call.argument(0), call.argument(1)) } else { (AT_FDCWD as u64, call.argument(0)) };
    let (mode, device) = (call.argument(first + 1) as u32, call.argument(first + 2));
    let kind = match mode & S_IFMT {
        0 | S_IFREG => FileKind::Regular,
        S_IFIFO => FileKind::Fifo,
        S_IFSOCK => FileKind::Socket,
        S_IFCHR => FileKind::CharDevice(((device >> 8) & 0xfff) as u32 | ((device >> 32) & !0xfff) as u32, (device & 0xff) as u32 | ((device >> 12) & !0xff) as u32),
        S_IFDIR | S_IFBLK => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    make_node(call, dirfd, path_address, kind, mode)
}

pub fn rmdir(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    remove(call, AT_FDCWD as u64, &path, true)
}

pub fn unlink(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    remove(call, AT_FDCWD as u64, &path, false)
}

pub fn unlinkat(call: &mut Call<'_>) -> CallResult {
    let flags = call.argument(2);
    if flags & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_in(call, call.argument(1))?;
    remove(call, call.argument(0), &path, flags & AT_REMOVEDIR != 0)
}

/// Removes the name `path` (a directory when `directory`), as `unlinkat`.
pub(super) fn remove(call: &Call<'_>, dirfd: u64, path: &[u8], directory: bool) -> CallResult {
    let resolved = resolve_at(call, dirfd, path, false)?;
    if resolved.inode.is_none() {
        return Err(Errno::ENOENT);
    }
    if let Some(victim) = resolved.inode {
        super::permissions::check_removal(call, resolved.parent, victim)?;
    }
    if directory {
        fs::with(|tree| tree.rmdir(resolved.parent, &resolved.name, now()))?;
    } else {
        if resolved.trailing_slash {
            return Err(Errno::EISDIR);
        }
        fs::with(|tree| tree.unlink(resolved.parent, &resolved.name, now()))?;
        if let Some(inode) = resolved.inode {
            crate::file_mappings::unlinked(inode);
        }
    }
    value(0)
}

pub fn rename(call: &mut Call<'_>) -> CallResult {
    rename_paths(call, AT_FDCWD as u64, call.argument(0), AT_FDCWD as u64, call.argument(1), 0)
}

/// `renameat` has no flags argument; `renameat2` has.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RenameCall {
    Renameat,
    Renameat2,
}

pub fn renameat(call: &mut Call<'_>, which: RenameCall) -> CallResult {
    let flags = if which == RenameCall::Renameat2 { call.argument(4) } else { 0 };
    rename_paths(call, call.argument(0), call.argument(1), call.argument(2), call.argument(3), flags)
}

fn rename_paths(call: &Call<'_>, from_dir: u64, from_address: u64, to_dir: u64, to_address: u64, flags: u64) -> CallResult {
    const RENAME_NOREPLACE: u64 = 1;
    if flags & !RENAME_NOREPLACE != 0 {
        return Err(Errno::EINVAL);
    }
    let from_path = path_in(call, from_address)?;
    let to_path = path_in(call, to_address)?;
    let from = resolve_at(call, from_dir, &from_path, false)?;
    let to = resolve_at(call, to_dir, &to_path, false)?;
    if from.inode.is_none() {
        return Err(Errno::ENOENT);
    }
    if flags & RENAME_NOREPLACE != 0 && to.inode.is_some() {
        return Err(Errno::EEXIST);
    }
    if let Some(moved) = from.inode {
        super::permissions::check_removal(call, from.parent, moved)?;
    }
    match to.inode {
        Some(replaced) => super::permissions::check_removal(call, to.parent, replaced)?,
        None => super::permissions::check_directory_change(call, to.parent)?,
    }
    fs::with(|tree| tree.rename(from.parent, &from.name, to.parent, &to.name, now()))?;
    if let Some(replaced) = to.inode.filter(|replaced| Some(*replaced) != from.inode) {
        crate::file_mappings::unlinked(replaced);
    }
    value(0)
}

pub fn link(call: &mut Call<'_>) -> CallResult {
    link_paths(call, AT_FDCWD as u64, call.argument(0), AT_FDCWD as u64, call.argument(1), 0)
}

pub fn linkat(call: &mut Call<'_>) -> CallResult {
    link_paths(call, call.argument(0), call.argument(1), call.argument(2), call.argument(3), call.argument(4))
}

fn link_paths(call: &Call<'_>, from_dir: u64, from_address: u64, to_dir: u64, to_address: u64, flags: u64) -> CallResult {
    let from_path = path_in(call, from_address)?;
    let to_path = path_in(call, to_address)?;
    let target = lookup_at(call, from_dir, &from_path, flags & AT_SYMLINK_FOLLOW != 0)?;
    let to = resolve_at(call, to_dir, &to_path, false)?;
    if to.inode.is_some() {
        return Err(Errno::EEXIST);
    }
    super::permissions::check_directory_change(call, to.parent)?;
    fs::with(|tree| tree.link(to.parent, &to.name, target, now()))?;
    value(0)
}

pub fn symlink(call: &mut Call<'_>) -> CallResult {
    make_symlink(call, call.argument(0), AT_FDCWD as u64, call.argument(1))
}

pub fn symlinkat(call: &mut Call<'_>) -> CallResult {
    make_symlink(call, call.argument(0), call.argument(1), call.argument(2))
}

fn make_symlink(call: &Call<'_>, target_address: u64, dirfd: u64, path_address: u64) -> CallResult {
    let target = path_in(call, target_address)?;
    let path = path_in(call, path_address)?;
    let resolved = resolve_at(call, dirfd, &path, false)?;
    if resolved.inode.is_some() {
        return Err(Errno::EEXIST);
    }
    super::permissions::check_directory_change(call, resolved.parent)?;
    let made = fs::with(|tree| tree.symlink(resolved.parent, &resolved.name, &target, now()))?;
    super::permissions::own_new(call, made)?;
    value(0)
}

pub fn readlink(call: &mut Call<'_>) -> CallResult {
    read_link_at(call, AT_FDCWD as u64, call.argument(0), call.argument(1), call.argument(2))
}

pub fn readlinkat(call: &mut Call<'_>) -> CallResult {
    read_link_at(call, call.argument(0), call.argument(1), call.argument(2), call.argument(3))
}

fn read_link_at(call: &Call<'_>, dirfd: u64, path_address: u64, buffer: u64, size: u64) -> CallResult {
    if size as i64 <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_in(call, path_address)?;
    let magic = if let Some((owner, fd)) = linux_abi::procfs_text::descriptor_link(&path) {
        Some(descriptor_target(call, owner, fd)?)
    } else if let Some(who) = path.strip_prefix(b"/proc/").and_then(|rest| rest.strip_suffix(b"/exe")) {
        let process = match who {
            b"self" | b"thread-self" => Some(call.process.clone()),
            pid => core::str::from_utf8(pid).ok().and_then(|pid| pid.parse().ok()).and_then(crate::process::find),
        };
        Some(process.ok_or(Errno::ENOENT)?.state().executable.clone())
    } else {
        None
    };
    if let Some(target) = magic {
        let count = target.len().min(size as usize);
        call.write_out(buffer, &target[..count])?;
        return value(count as u64);
    }
    let inode = lookup_at(call, dirfd, &path, false)?;
    let target = fs::with(|tree| tree.read_link(inode).map(alloc::borrow::Cow::into_owned))?;
    let count = target.len().min(size as usize);
    call.write_out(buffer, &target[..count])?;
    value(count as u64)
}

pub fn chmod(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    let inode = lookup_at(call, AT_FDCWD as u64, &path, true)?;
    super::permissions::check_owner(call, inode)?;
    fs::with(|tree| tree.set_permissions(inode, call.argument(1) as u32, now()))?;
    value(0)
}

pub fn fchmodat(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(1))?;
    let inode = lookup_at(call, call.argument(0), &path, true)?;
    super::permissions::check_owner(call, inode)?;
    fs::with(|tree| tree.set_permissions(inode, call.argument(2) as u32, now()))?;
    value(0)
}

pub fn truncate(call: &mut Call<'_>) -> CallResult {
    let path = path_in(call, call.argument(0))?;
    let length = call.argument(1) as i64;
    if length < 0 {
        return Err(Errno::EINVAL);
    }
    let inode = lookup_at(call, AT_FDCWD as u64, &path, true)?;
    super::files::check_file_size(call, length as u64)?;
    fs::with(|tree| crate::page_cache::truncate(tree, inode, length as u64))?;
    value(0)
}

/// `chown`, `lchown` (`at` false: the path is argument 0) and `fchownat`
/// (`at`: directory, path, ids, flags). One user (root) owns every file,
/// so ownership stays as it is; the file must exist, with the errors of
/// the lookup (ENOENT, ENOTDIR, ELOOP, EBADF …). `follow`: follow a final
/// symbolic link (`fchownat`: unless `AT_SYMLINK_NOFOLLOW`).
pub fn chown(call: &mut Call<'_>, at: bool, follow: bool) -> CallResult {
    let (dirfd, path_address, flags) = if at { (call.argument(0), call.argument(1), call.argument(4)) } else { (AT_FDCWD as u64, call.argument(0), 0) };
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = if flags & AT_EMPTY_PATH != 0 && call.string_in(path_address, MAX_PATH - 1)?.is_empty() {
        open_files::file(call.process.native.space(), dirfd)?.inode().ok_or(Errno::EBADF)?
    } else {
        let path = path_in(call, path_address)?;
        lookup_at(call, dirfd, &path, follow && flags & AT_SYMLINK_NOFOLLOW == 0)?
    };
    let first = if at { 2 } else { 1 };
    super::permissions::change_owner(call, inode, call.argument(first) as u32, call.argument(first + 1) as u32)?;
    value(0)
}

pub fn utimensat(call: &mut Call<'_>) -> CallResult {
    const UTIME_NOW: u64 = (1 << 30) - 1;
    const UTIME_OMIT: u64 = (1 << 30) - 2;
    let (dirfd, path_address, times, flags) = (call.argument(0), call.argument(1), call.argument(2), call.argument(3));
    let inode = if path_address == 0 {
        open_files::file(call.process.native.space(), dirfd)?.inode().ok_or(Errno::EBADF)?
    } else {
        let path = path_in(call, path_address)?;
        lookup_at(call, dirfd, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?
    };
    let current = fs::with(|tree| tree.stat(inode))?;
    let mut chosen = [now(), now()];
    // Explicit times need the owner or root (EPERM); "now" also suits a
    // caller that may write the file (EACCES otherwise).
    let mut explicit = false;
    if times != 0 {
        for (index, slot) in chosen.iter_mut().enumerate() {
            let seconds = call.word_in(times + index as u64 * 16)?;
            let nanoseconds = call.word_in(times + index as u64 * 16 + 8)?;
            *slot = match nanoseconds {
                UTIME_NOW => now(),
                UTIME_OMIT => if index == 0 { current.accessed } else { current.modified },
                n if n < 1_000_000_000 => {
                    explicit = true;
                    Timestamp { seconds, nanoseconds: n as u32 }
                }
                _ => return Err(Errno::EINVAL),
            };
        }
    }
    if explicit {
        super::permissions::check_owner(call, inode)?;
    } else if super::permissions::check_owner(call, inode).is_err() {
        super::permissions::check(call, inode, super::permissions::want::WRITE, false)?;
    }
    fs::with(|tree| tree.set_times(inode, chosen[0], chosen[1], now()))?;
    value(0)
}

/// Which extended-attribute call: by path (following a final symlink or
/// not) or by descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrTarget {
    Path,
    LinkPath,
    Descriptor,
}

/// Checks the file an `*xattr` call names exists (the errors of a bad path
/// or descriptor come first, as on Linux).
fn xattr_file(call: &Call<'_>, target: XattrTarget) -> Result<(), Errno> {
    match target {
        XattrTarget::Descriptor => crate::open_files::file(call.process.native.space(), call.argument(0)).map(drop),
        XattrTarget::Path | XattrTarget::LinkPath => {
            let path = path_in(call, call.argument(0))?;
            lookup_at(call, AT_FDCWD as u64, &path, target == XattrTarget::Path).map(drop)
        }
    }
}

/// `getxattr` family: the file system keeps no extended attributes (as a
/// tmpfs without security modules), so every name is ENODATA.
pub fn getxattr(call: &mut Call<'_>, target: XattrTarget) -> CallResult {
    xattr_file(call, target)?;
    Err(Errno::ENODATA)
}

/// `listxattr` family: an empty list.
pub fn listxattr(call: &mut Call<'_>, target: XattrTarget) -> CallResult {
    xattr_file(call, target)?;
    value(0)
}

/// `setxattr` and `removexattr` families: not supported by this file
/// system (EOPNOTSUPP), after the file is checked.
pub fn setxattr(call: &mut Call<'_>, target: XattrTarget) -> CallResult {
    xattr_file(call, target)?;
    Err(Errno::EOPNOTSUPP)
}
