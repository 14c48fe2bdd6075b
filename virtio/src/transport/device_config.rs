//! Consistent reads of device configuration: fields wider than 32 bits,
//! or several fields together, are read between two equal
//! `config_generation` values (virtio 1.2 §2.5.1).
//!
//! Must never: loop forever on a device whose generation keeps moving.

use super::{Transport, TransportError};

/// How many times a read is retried while the generation moves.
pub const CONFIG_READ_ATTEMPTS: usize = 16;

/// Runs `read` until the configuration generation is the same before and
/// after it.
pub fn read_config_consistently<T: Transport + ?Sized, V>(
    transport: &T,
    read: impl Fn(&T) -> Result<V, TransportError>,
) -> Result<V, TransportError> {
    for _ in 0..CONFIG_READ_ATTEMPTS {
        let before = transport.config_generation();
        let value = read(transport)?;
        if transport.config_generation() == before {
            return Ok(value);
        }
    }
    Err(TransportError::ConfigKeepsChanging)
}

/// Reads the 64-bit device configuration field at `offset` as two 32-bit
/// halves of the same generation.
pub fn read_config_u64<T: Transport + ?Sized>(transport: &T, offset: u32) -> Result<u64, TransportError> {
    let high_offset = offset
        .checked_add(4)
        .ok_or(TransportError::ConfigOutOfRange { offset, width: 8 })?;
    read_config_consistently(transport, |transport| {
        let low = transport.read_config_u32(offset)?;
        let high = transport.read_config_u32(high_offset)?;
        Ok(u64::from(high) << 32 | u64::from(low))
    })
}
