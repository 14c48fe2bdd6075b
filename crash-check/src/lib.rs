//! Crash states of an ext4 disk, and what each must satisfy (host only).
//!
//! The raw material is what a disk saw, in order ([`Event`]s): from a
//! host test's recording disk (`ext4/tests/crash`), or from QEMU's
//! `blklogwrites` driver while a kernel ran a workload ([`log_writes`]).
//! [`states`] cuts crash states from it (every flush; random subsets and
//! orders of the writes between two flushes), [`model`] says what each
//! path may show after a crash at a log position, and [`check`] opens
//! each state with the `ext4` crate (replaying the journal), checks that
//! recovery is idempotent, runs `e2fsck -fn` and judges every path.
//!
//! Must never decide a verdict from anything but the disk's bytes and
//! the model: a state the checker cannot read is a failure, not a skip.

pub mod check;
mod events;
pub mod log_writes;
pub mod model;
pub mod plan;
pub mod states;
pub mod verdicts;

/// The crate the states are opened with, for verdicts of their own.
pub use ext4;
pub use events::{is_commit_block, log_wraps, lose_flushes, AroundCommit, Event, UNIT};

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use ext4::{BlockDevice, Error, Ext4, Inode};

/// Debian's e2fsck.
pub const E2FSCK: &str = "/usr/sbin/e2fsck";

/// A directory under the system temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("ext4-test-{}-{label}-{unique}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("the temporary directory is writable");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Reads all of a file in 64 KiB steps (at most `limit` bytes).
pub fn read_all<D: BlockDevice>(fs: &Ext4<D>, inode: &Inode, limit: u64) -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 65536];
    while (data.len() as u64) < limit {
        let count = fs.read(inode, data.len() as u64, &mut chunk)?;
        if count == 0 {
            break;
        }
        data.extend_from_slice(&chunk[..count]);
    }
    Ok(data)
}
