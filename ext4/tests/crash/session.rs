//! A workload's driver: each call runs one file-system operation by path
//! on the recording disk and records what it did in the [`Model`].
//!
//! Under `CommitPolicy::EveryOperation` each operation is promised
//! durable when it returns (the policy's contract); under `Grouped` only
//! `fsync` (the file's path) and `sync` (every path) promise anything.

use std::cell::RefCell;
use std::rc::Rc;

use ext4::{Access, CommitPolicy, Ext4, InodeNumber, Owner, Resolution, Timestamp};

use crash_check::model::{Model, Node};
use crash_check::plan::{Op, Step};
use crash_check::Event;

use super::recording::{Recording, RecordingDisk};

const OWNER: Owner = Owner { uid: 0, gid: 0 };

/// A workload in progress.
pub struct Session {
    fs: Ext4<RecordingDisk>,
    recording: Rc<RefCell<Recording>>,
    pub model: Model,
    policy: CommitPolicy,
    clock: i64,
    seed: u32,
}

/// A finished workload: the image it started from, the log, the model.
pub struct Finished {
    pub initial: Vec<u8>,
    pub events: Vec<Event>,
    pub model: Model,
}

pub use crash_check::plan::bytes_for;

fn split(path: &str) -> (&str, &str) {
    let at = path.rfind('/').expect("absolute path");
    (if at == 0 { "/" } else { &path[..at] }, &path[at + 1..])
}

impl Session {
    /// Opens `image` read-write with `policy` on a recording disk.
    pub fn start(image: Vec<u8>, policy: CommitPolicy) -> Session {
        let (disk, recording) = RecordingDisk::new(image);
        let fs = Ext4::open_with(disk, Access::ReadWrite, policy).expect("open the fresh image");
        assert_eq!(fs.mount(), ext4::Mount::ReadWrite);
        Session { fs, recording, model: Model::default(), policy, clock: 0, seed: 0 }
    }

    fn position(&self) -> usize {
        self.recording.borrow().events.len()
    }

    fn now(&mut self) -> Timestamp {
        self.clock += 1;
        Timestamp { seconds: 1_700_000_000 + self.clock, nanoseconds: 0 }
    }

    fn inode(&self, path: &str) -> InodeNumber {
        match self.fs.resolve(path.as_bytes()).unwrap() {
            Resolution::Found(number) => number,
            other => panic!("{path}: {other:?}"),
        }
    }

    /// After an operation: under EveryOperation it is durable now.
    fn returned(&mut self) {
        if self.policy == CommitPolicy::EveryOperation {
            let position = self.position();
            self.model.promise_all(position);
        }
    }

    /// Fresh bytes for the next write.
    pub fn fresh_bytes(&mut self, length: usize) -> Vec<u8> {
        self.seed += 1;
        bytes_for(self.seed, length)
    }

    /// Creates the empty file `path`.
    pub fn create(&mut self, path: &str) {
        let start = self.position();
        let (parent, name) = split(path);
        let parent = self.inode(parent);
        let now = self.now();
        self.fs.create(parent, name.as_bytes(), 0o644, OWNER, now).unwrap();
        self.model.create_file(path, start);
        self.returned();
    }

    /// Writes `length` fresh bytes at `offset` of file `path`.
    pub fn write(&mut self, path: &str, offset: usize, length: usize) {
        let data = self.fresh_bytes(length);
        self.write_data(path, offset, &data);
    }

    /// Writes `data` at `offset` of file `path`.
    pub fn write_data(&mut self, path: &str, offset: usize, data: &[u8]) {
        let start = self.position();
        let inode = self.inode(path);
        let now = self.now();
        self.fs.write(inode, offset as u64, data, now).unwrap();
        self.model.write_file(path, offset, data, start).unwrap_or_else(|| panic!("{path} is no file"));
        self.returned();
    }

    /// Runs a plan (`crash_check::plan`), one step after another in plan
    /// order whatever process it names; SQL steps have no host form.
    pub fn run_plan(&mut self, steps: &[Step]) {
        for step in steps {
            match &step.op {
                Op::Mkdir(path) => self.mkdir(path),
                Op::Rmdir(path) => self.rmdir(path),
                Op::Create { path, seed, length } => {
                    self.create(path);
                    if *length > 0 {
                        self.write_data(path, 0, &bytes_for(*seed, *length));
                    }
                }
                Op::Write { path, seed, offset, length } => self.write_data(path, *offset, &bytes_for(*seed, *length)),
                Op::Fsync(path) => self.fsync(path),
                Op::Sync => self.sync(),
                Op::Rename(from, to) => self.rename(from, to),
                Op::Unlink(path) => self.unlink(path),
                Op::Sql { .. } => panic!("SQL steps run only on a kernel"),
            }
        }
    }

    /// Creates `path` holding `length` fresh bytes.
    pub fn create_with(&mut self, path: &str, length: usize) {
        self.create(path);
        if length > 0 {
            self.write(path, 0, length);
        }
    }

    /// fsync(2) of `path`: its current version is durable on return.
    pub fn fsync(&mut self, path: &str) {
        let inode = self.inode(path);
        self.fs.fsync(inode).unwrap();
        let position = self.position();
        self.model.promise(path, position);
    }

    /// sync(2): every path's current version is durable on return.
    pub fn sync(&mut self) {
        self.fs.sync().unwrap();
        let position = self.position();
        self.model.promise_all(position);
    }

    /// Creates directory `path`.
    pub fn mkdir(&mut self, path: &str) {
        let start = self.position();
        let (parent, name) = split(path);
        let parent = self.inode(parent);
        let now = self.now();
        self.fs.mkdir(parent, name.as_bytes(), 0o755, OWNER, now).unwrap();
        self.model.set(path, Some(Node::Directory), start);
        self.returned();
    }

    /// Removes the empty directory `path`.
    pub fn rmdir(&mut self, path: &str) {
        let start = self.position();
        let (parent, name) = split(path);
        let parent = self.inode(parent);
        let now = self.now();
        self.fs.rmdir(parent, name.as_bytes(), now).unwrap();
        self.model.set(path, None, start);
        self.returned();
    }

    /// Removes file `path`.
    pub fn unlink(&mut self, path: &str) {
        let start = self.position();
        let (parent, name) = split(path);
        let parent = self.inode(parent);
        let now = self.now();
        self.fs.unlink(parent, name.as_bytes(), now).unwrap();
        self.model.set(path, None, start);
        self.returned();
    }

    /// Renames `from` to `to` (replacing a file there), moving everything
    /// below a directory along.
    pub fn rename(&mut self, from: &str, to: &str) {
        let start = self.position();
        let ((from_parent, from_name), (to_parent, to_name)) = (split(from), split(to));
        let (from_parent, to_parent) = (self.inode(from_parent), self.inode(to_parent));
        let now = self.now();
        self.fs.rename(from_parent, from_name.as_bytes(), to_parent, to_name.as_bytes(), now).unwrap();
        self.model.rename(from, to, start);
        self.returned();
    }

    /// Unmounts (commit, checkpoint, clean journal): everything durable.
    pub fn finish(self) -> Finished {
        let Session { fs, recording, mut model, .. } = self;
        fs.unmount().expect("unmount");
        let recording = Rc::try_unwrap(recording).ok().expect("the file system is gone").into_inner();
        model.promise_all(recording.events.len());
        Finished { initial: recording.initial, events: recording.events, model }
    }
}
