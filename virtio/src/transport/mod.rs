//! The virtio PCI register interfaces behind one [`Transport`] trait
//! (legacy I/O BAR 0, virtio 1.2 §4.1.4.10; modern capabilities, §4.1.4)
//! and the initialization sequence over it (§3.1). Declarations only.

mod device_config;
mod error;
mod features;
mod initialize;
mod interface;
mod legacy;
mod modern;
mod registers;
mod status;

#[cfg(test)]
pub(crate) mod fake_legacy;
#[cfg(test)]
pub(crate) mod fake_modern;
#[cfg(test)]
mod tests;

pub use device_config::{read_config_consistently, read_config_u64, CONFIG_READ_ATTEMPTS};
pub use error::{InitError, TransportError};
pub use features::Features;
pub use initialize::{initialize, negotiate, reset, RESET_POLL_LIMIT};
pub use interface::{InterruptStatus, QueueNotifier, Transport, TransportKind};
pub use legacy::LegacyTransport;
pub use modern::{ModernTransport, NotifyRegion, COMMON_CONFIG_LENGTH};
pub use registers::{Region, Registers, RegistersByWidth};
pub use status::DeviceStatus;
