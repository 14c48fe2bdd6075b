//! The jbd2 journal that ext4 uses, as host-tested logic: its on-disk
//! format, recovery, and a writer of transactions.
//!
//! **Provides** [`recover`]: the kernel's three-pass replay of a journal
//! left dirty (scan for the end of the log checking sequence numbers and
//! checksums, collect revokes, replay committed blocks), leaving the
//! journal as e2fsck does; [`Journal`]: open a clean journal, join
//! operations into one running transaction ([`TransactionHandle`]), commit
//! it (descriptors, escaped data copies, flush, commit block, flush),
//! checkpoint it home and reuse the circular log. Below that, the format
//! one module each ([`format`]) and [`crc32c_update`].
//!
//! **Relies on** a [`JournalArea`] (the journal's own blocks: inode 8 in
//! ext4) and [`FileSystemBlocks`] (where blocks go home), both supplied by
//! the caller, and on `alloc`. Nothing else: no `std`, no global state, no
//! dependencies (not even the `ext4` crate, which sits above this one).
//!
//! **Must never** panic, loop without bound or allocate beyond a few
//! blocks per step, whatever the journal holds: every loop is bounded by
//! the log's length, every damaged structure is an error value or the end
//! of the log exactly where the kernel would stop.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;

mod big_endian;
mod crc32_be;
mod crc32c;
mod error;
pub mod format;
mod log_context;
mod log_geometry;
mod recovery;
mod storage;
mod writer;

pub use crc32c::crc32c_update;
pub use error::{JournalError, Pass, RecoveryError, SuperblockError};
pub use format::commit_block::CommitTime;
pub use format::features::Features;
pub use log_geometry::LogGeometry;
pub use recovery::recover::{discard_log, recover, RecoveryReport};
pub use storage::{FileSystemBlocks, IoError, JournalArea};
pub use writer::journal::{CommittedTransaction, Journal, Room};
pub use writer::transaction::{TransactionBuilder, TransactionHandle};
