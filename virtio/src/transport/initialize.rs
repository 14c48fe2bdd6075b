//! Bringing a device up (virtio 1.2 §3.1.1; §4.1.4.10's legacy variant):
//! reset, ACKNOWLEDGE, DRIVER, feature negotiation, FEATURES_OK (modern),
//! the caller's queue setup, DRIVER_OK; FAILED on any error.
//!
//! Must never: negotiate a feature the device did not offer or this crate
//! cannot do ([`Features::UNSUPPORTED`]); drive a modern device without
//! `VERSION_1` or offer `VERSION_1` to a legacy one; poll a reset forever.

use super::{DeviceStatus, Features, InitError, Transport, TransportKind};

/// How many status reads a reset may take before giving up.
pub const RESET_POLL_LIMIT: usize = 100_000;

/// Resets the device and waits (boundedly) until its status reads 0.
pub fn reset<T: Transport + ?Sized, E>(transport: &mut T) -> Result<(), InitError<E>> {
    transport.set_status(DeviceStatus::RESET);
    for _ in 0..RESET_POLL_LIMIT {
        if transport.status() == DeviceStatus::RESET {
            return Ok(());
        }
    }
    Err(InitError::ResetTimedOut)
}

/// The features to accept: what the device offers and the driver wants,
/// minus what this crate cannot do; `VERSION_1` is required and added for
/// a modern device and never given to a legacy one.
pub fn negotiate<E>(kind: TransportKind, offered: Features, wanted: Features) -> Result<Features, InitError<E>> {
    let common = (offered & wanted).without(Features::UNSUPPORTED);
    match kind {
        TransportKind::Modern if !offered.contains(Features::VERSION_1) => Err(InitError::DeviceLacksVersion1),
        TransportKind::Modern => Ok(common | Features::VERSION_1),
        TransportKind::Legacy => Ok(Features::from_halves(common.low_half(), 0)),
    }
}

/// Initializes the device: negotiates features from `wanted`, then calls
/// `setup_queues` with the negotiated features (it sets up the queues with
/// [`Transport::setup_queue`]), then sets `DRIVER_OK`. Returns the
/// negotiated features. On error the device is left with `FAILED` set.
pub fn initialize<T: Transport + ?Sized, E>(
    transport: &mut T,
    wanted: Features,
    setup_queues: impl FnOnce(&mut T, Features) -> Result<(), E>,
) -> Result<Features, InitError<E>> {
    reset(transport)?;
    let outcome = bring_up(transport, wanted, setup_queues);
    if outcome.is_err() {
        let status = transport.status();
        transport.set_status(status | DeviceStatus::FAILED);
    }
    outcome
}

fn bring_up<T: Transport + ?Sized, E>(
    transport: &mut T,
    wanted: Features,
    setup_queues: impl FnOnce(&mut T, Features) -> Result<(), E>,
) -> Result<Features, InitError<E>> {
    let mut status = DeviceStatus::ACKNOWLEDGE;
    transport.set_status(status);
    status = status | DeviceStatus::DRIVER;
    transport.set_status(status);
    let offered = transport.device_features();
    let negotiated = negotiate(transport.kind(), offered, wanted)?;
    transport.set_driver_features(negotiated);
    if transport.kind() == TransportKind::Modern {
        status = status | DeviceStatus::FEATURES_OK;
        transport.set_status(status);
        if !transport.status().contains(DeviceStatus::FEATURES_OK) {
            return Err(InitError::FeaturesRejected);
        }
    }
    setup_queues(transport, negotiated).map_err(InitError::Setup)?;
    transport.set_status(status | DeviceStatus::DRIVER_OK);
    let shown = transport.status();
    if shown.contains(DeviceStatus::DEVICE_NEEDS_RESET) {
        return Err(InitError::DeviceNeedsReset { status: shown });
    }
    Ok(negotiated)
}
