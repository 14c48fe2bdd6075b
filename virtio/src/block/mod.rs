//! The virtio block device (virtio 1.2 §5.2): feature bits, the device
//! configuration, the request format, and the bookkeeping that turns used
//! chains into request outcomes. Declarations only.

mod config;
mod error;
mod features;
mod header;
mod requests;

#[cfg(test)]
mod fake_disk;
#[cfg(test)]
mod format_tests;
#[cfg(test)]
mod tests;

pub use config::{Access, BlockConfig, Flush};
pub use error::{BlockError, RequestFailure};
pub use features::{wanted_block_features, BlockFeatures};
pub use header::{RequestHeader, RequestType, Status, HEADER_BYTES, ID_BYTES, SECTOR_SIZE};
pub use requests::{BlockRequests, Completion, DataBuffer, RequestKind, SLOT_BYTES};
