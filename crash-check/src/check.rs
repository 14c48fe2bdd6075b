//! What every crash state must satisfy: it opens (the journal replayed),
//! recovery is idempotent, e2fsck finds it clean (on a sample), and every
//! path shows a version the model allows: promised contents exactly, a
//! renamed-over name the old or the new file whole, and no file a byte it
//! never held.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Command;

use ext4::{Access, CommitPolicy, Ext4, FileType, Mount};

use crate::model::{Model, Node};
use crate::states::{CrashDisk, CrashState};
use crate::{read_all, TempDir, E2FSCK, UNIT};

/// What a crashed file system shows at a path.
#[derive(Debug)]
enum Seen {
    Directory,
    File(Vec<u8>),
    Other(FileType),
}

/// Whether to run e2fsck on a state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fsck {
    Run,
    Skip,
}

/// Every path below the root (but `lost+found`), with what it names;
/// fails on an inode reached by two names (no workload makes hard links).
fn walk(fs: &Ext4<CrashDisk>) -> Result<BTreeMap<String, Seen>, String> {
    let mut seen = BTreeMap::new();
    let mut inodes = BTreeSet::new();
    let mut pending = vec![(String::new(), fs.root())];
    while let Some((path, number)) = pending.pop() {
        let inode = fs.inode(number).map_err(|error| format!("{path}: inode: {error}"))?;
        for entry in fs.read_dir(&inode).map_err(|error| format!("{path}/: read_dir: {error}"))? {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            if name == "." || name == ".." || (path.is_empty() && name == "lost+found") {
                continue;
            }
            let child = format!("{path}/{name}");
            if !inodes.insert(entry.inode) {
                return Err(format!("{child}: inode {} has a second name", entry.inode.0));
            }
            let target = fs.inode(entry.inode).map_err(|error| format!("{child}: inode: {error}"))?;
            let view = match target.file_type {
                FileType::Directory => {
                    pending.push((child.clone(), entry.inode));
                    Seen::Directory
                }
                FileType::Regular => Seen::File(
                    read_all(fs, &target, 16 << 20).map_err(|error| format!("{child}: read: {error}"))?,
                ),
                other => Seen::Other(other),
            };
            seen.insert(child, view);
        }
    }
    Ok(seen)
}

/// Whether `content` is, piece by piece, one file's versions among `allowed`.
fn file_matches(content: &[u8], allowed: &[&Option<Node>]) -> bool {
    let mut by_identity: BTreeMap<u32, Vec<&Vec<u8>>> = BTreeMap::new();
    for node in allowed {
        if let Some(Node::File { identity, content }) = node {
            by_identity.entry(*identity).or_default().push(content);
        }
    }
    by_identity.values().any(|versions| {
        versions.iter().any(|version| version.len() == content.len())
            && content.chunks(UNIT).enumerate().all(|(index, piece)| {
                let range = index * UNIT..index * UNIT + piece.len();
                versions.iter().any(|version| version.get(range.clone()) == Some(piece))
            })
    })
}

/// The model's verdict on what the file system shows.
fn judge(model: &Model, seen: &BTreeMap<String, Seen>, bound: usize) -> Vec<String> {
    let paths: BTreeSet<&String> = model.history.keys().chain(seen.keys()).collect();
    let mut problems = Vec::new();
    for path in paths.into_iter().filter(|path| !model.is_opaque(path)) {
        let allowed = model.allowed(path, bound);
        let fine = match seen.get(path) {
            None => allowed.contains(&&None),
            Some(Seen::Directory) => allowed.contains(&&Some(Node::Directory)),
            Some(Seen::File(content)) => file_matches(content, &allowed),
            Some(Seen::Other(_)) => false,
        };
        if !fine {
            let shown = match seen.get(path) {
                None => "missing".to_string(),
                Some(Seen::File(content)) => format!("a file of {} bytes", content.len()),
                Some(Seen::Directory) => "a directory".to_string(),
                Some(Seen::Other(kind)) => format!("a {kind:?}"),
            };
            let allowed: Vec<String> = allowed.iter().map(|node| describe(node)).collect();
            problems.push(format!("{path}: {shown}, allowed {allowed:?}"));
        }
    }
    problems
}

fn describe(node: &Option<Node>) -> String {
    match node {
        None => "absent".to_string(),
        Some(Node::Directory) => "directory".to_string(),
        Some(Node::File { identity, content }) => format!("file #{identity} of {} bytes", content.len()),
    }
}

/// Runs `e2fsck -fn` on `image`.
fn fsck(image: &[u8]) -> Result<(), String> {
    let dir = TempDir::new("crash-fsck");
    let path = dir.0.join("image");
    fs::write(&path, image).unwrap();
    let output = Command::new(E2FSCK).arg("-fn").arg(&path).output().unwrap();
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "e2fsck -fn exited with {:?}:\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Opens a crashed disk the way a reboot would.
fn mount(disk: CrashDisk) -> Result<Ext4<CrashDisk>, String> {
    let fs = Ext4::open_with(disk, Access::ReadWrite, CommitPolicy::EveryOperation)
        .map_err(|error| format!("open (recovery) failed: {error}"))?;
    if fs.mount() != Mount::ReadWrite {
        return Err(format!("mounted {:?}", fs.mount()));
    }
    Ok(fs)
}

/// Whether a crash state had a journal to replay.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Found {
    /// `needs_recovery` was set: the log was replayed.
    LogInUse,
    /// The disk was clean.
    Clean,
}

fn needs_recovery(disk: &CrashDisk) -> bool {
    let mut sector = [0u8; ext4::SECTOR_SIZE];
    ext4::BlockDevice::read_sectors(disk, 2, &mut sector).unwrap();
    u32::from_le_bytes(sector[0x60..0x64].try_into().unwrap()) & 0x4 != 0
}

/// A verdict of its own on the recovered file system of a crash at log
/// position `bound` (for what the model leaves opaque: a database).
pub type ExtraVerdict<'a> = &'a dyn Fn(&Ext4<CrashDisk>, usize) -> Result<(), String>;

/// Checks one crash state against `model` (and `extra`, if given).
pub fn check_state(state: CrashState, model: &Model, run_fsck: Fsck, extra: Option<ExtraVerdict<'_>>) -> Result<Found, String> {
    let base = state.disk.base.clone();
    let found = if needs_recovery(&state.disk) { Found::LogInUse } else { Found::Clean };
    let fs = mount(state.disk)?;
    let seen = walk(&fs)?;
    let problems = judge(model, &seen, state.bound);
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    if let Some(extra) = extra {
        extra(&fs, state.bound)?;
    }
    let recovered = fs.into_device();
    let patches = recovered.patches.borrow().clone();
    let again = mount(CrashDisk::new(base, patches.clone()))?.into_device();
    if *again.patches.borrow() != patches {
        return Err("opening the recovered image again changed it".to_string());
    }
    if run_fsck == Fsck::Run {
        fsck(&recovered.materialize())?;
    }
    Ok(found)
}
