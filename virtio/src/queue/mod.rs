//! The split virtqueue (virtio 1.2 §2.7) as a data structure over an
//! abstract DMA memory. Declarations only.

mod chain;
mod dma;
mod error;
mod layout;
mod split;

#[cfg(test)]
pub(crate) mod fake_device;
#[cfg(test)]
mod tests;

pub use chain::{Buffer, Direction, Token, Used};
pub use dma::{Barrier, DmaMemory};
pub use error::{AddError, DeviceError, LayoutError};
pub use layout::{RingLayout, RingShape, LEGACY_ALIGNMENT, MAX_QUEUE_SIZE};
pub use split::{EventIndex, Interrupts, SplitQueue};
