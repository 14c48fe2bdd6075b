//! Host tests of both transports and the initialization sequence against
//! fake register blocks: the status sequence, feature negotiation, queue
//! setup and its refusals, doorbells, ISR and device configuration.

use super::fake_legacy::{FakeLegacy, LegacyState};
use super::fake_modern::{fake_modern, modern_state};
use super::*;
use crate::pci::MsixState;
use crate::queue::RingLayout;
use std::cell::RefCell;
use std::rc::Rc;
use std::vec;

const FLUSH: Features = Features::bit(9);
const READ_ONLY: Features = Features::bit(5);

fn modern_ring(size: u16) -> RingLayout {
    RingLayout::modern(size, 0x10_0000, 0x11_0000, 0x12_0000).unwrap()
}

#[test]
fn modern_initialization_walks_the_status_bits_and_negotiates_the_intersection() {
    let offered =
        Features::VERSION_1 | Features::RING_EVENT_IDX | FLUSH | Features::RING_PACKED | Features::RING_INDIRECT_DESC;
    let (mut transport, state) = fake_modern(modern_state(offered, 1, 256), 4);
    let wanted = FLUSH | READ_ONLY | Features::RING_EVENT_IDX | Features::RING_PACKED;
    let negotiated = initialize(&mut transport, wanted, |transport, negotiated| {
        assert_eq!(
            transport.status(),
            DeviceStatus::ACKNOWLEDGE | DeviceStatus::DRIVER | DeviceStatus::FEATURES_OK
        );
        assert!(negotiated.contains(Features::VERSION_1));
        transport.setup_queue(0, &modern_ring(64)).map(|_| ())
    });
    let expected = Features::VERSION_1 | Features::RING_EVENT_IDX | FLUSH;
    assert_eq!(negotiated, Ok::<_, InitError<TransportError>>(expected));
    let state = state.borrow();
    assert_eq!(state.driver_features, expected.bits());
    assert_eq!(state.status_writes, [0, 1, 3, 11, 15]);
    let queue = state.queues[0];
    assert_eq!((queue.size, queue.enabled), (64, 1));
    assert_eq!(
        (queue.descriptors, queue.driver, queue.device),
        (0x10_0000, 0x11_0000, 0x12_0000)
    );
}

#[test]
fn a_modern_device_without_version_1_is_failed() {
    let (mut transport, state) = fake_modern(modern_state(FLUSH, 1, 256), 4);
    let outcome = initialize(&mut transport, FLUSH, |_, _| Ok::<(), ()>(()));
    assert_eq!(outcome, Err(InitError::DeviceLacksVersion1));
    assert!(
        transport.status().contains(DeviceStatus::FAILED),
        "status {:?}",
        state.borrow().status
    );
}

#[test]
fn a_device_clearing_features_ok_is_failed() {
    let mut device = modern_state(Features::VERSION_1 | FLUSH, 1, 256);
    device.acceptable = Features::VERSION_1.bits();
    let (mut transport, _state) = fake_modern(device, 4);
    let outcome = initialize(&mut transport, FLUSH, |_, _| Ok::<(), ()>(()));
    assert_eq!(outcome, Err(InitError::FeaturesRejected));
    assert!(transport.status().contains(DeviceStatus::FAILED));
}

#[test]
fn a_failing_queue_setup_fails_the_device_with_the_callers_error() {
    let (mut transport, _state) = fake_modern(modern_state(Features::VERSION_1, 1, 256), 4);
    let outcome = initialize(&mut transport, Features::NONE, |_, _| Err("out of frames"));
    assert_eq!(outcome, Err(InitError::Setup("out of frames")));
    assert!(transport.status().contains(DeviceStatus::FAILED));
    assert!(!transport.status().contains(DeviceStatus::DRIVER_OK));
}

#[test]
fn reset_waits_for_the_status_to_read_zero_but_not_forever() {
    let mut device = modern_state(Features::VERSION_1, 1, 256);
    device.reset_delay = 3;
    let (mut transport, _state) = fake_modern(device, 4);
    assert_eq!(reset::<_, ()>(&mut transport), Ok(()));
    let mut device = modern_state(Features::VERSION_1, 1, 256);
    device.reset_delay = RESET_POLL_LIMIT as u32 + 1;
    let (mut transport, _state) = fake_modern(device, 4);
    assert_eq!(reset::<_, ()>(&mut transport), Err(InitError::ResetTimedOut));
}

#[test]
fn modern_queue_setup_refuses_what_the_device_cannot_take() {
    let (mut transport, _state) = fake_modern(modern_state(Features::VERSION_1, 2, 128), 4);
    assert_eq!(transport.max_queue_size(1), Ok(128));
    assert_eq!(
        transport.setup_queue(2, &modern_ring(64)),
        Err(TransportError::NoSuchQueue { queue: 2 })
    );
    assert_eq!(
        transport.max_queue_size(u16::MAX),
        Err(TransportError::NoSuchQueue { queue: u16::MAX })
    );
    let too_large = TransportError::QueueTooLarge {
        size: 256,
        maximum: 128,
    };
    assert_eq!(transport.setup_queue(0, &modern_ring(256)), Err(too_large));
    let notifier = transport.setup_queue(1, &modern_ring(64)).unwrap();
    assert_eq!((notifier.queue(), notifier.offset()), (1, 4));
    assert_eq!(
        transport.setup_queue(1, &modern_ring(64)),
        Err(TransportError::QueueAlreadyEnabled { queue: 1 })
    );
}

#[test]
fn doorbells_outside_the_notify_structure_are_refused() {
    let (mut transport, _state) = fake_modern(modern_state(Features::VERSION_1, 2, 128), 0x1000);
    assert!(transport.setup_queue(0, &modern_ring(8)).is_ok());
    assert_eq!(
        transport.setup_queue(1, &modern_ring(8)),
        Err(TransportError::NotifyOutOfRange { queue: 1 })
    );
    let (mut transport, _state) = fake_modern(modern_state(Features::VERSION_1, 2, 128), u32::MAX);
    assert_eq!(
        transport.setup_queue(1, &modern_ring(8)),
        Err(TransportError::NotifyOutOfRange { queue: 1 })
    );
}

#[test]
fn notify_isr_and_device_configuration_reach_their_blocks() {
    let mut device = modern_state(Features::VERSION_1, 2, 128);
    device.device_config = vec![0x00, 0x10, 0, 0, 0, 0, 0, 0, 0xAA, 0xBB, 0xCC, 0xDD];
    device.isr = 3;
    let (mut transport, state) = fake_modern(device, 4);
    let notifier = transport.setup_queue(1, &modern_ring(8)).unwrap();
    transport.notify(notifier);
    assert_eq!(state.borrow().doorbells, [(4, 1)]);
    let isr = transport.take_interrupt_status();
    assert!(isr.queue_interrupt() && isr.configuration_changed());
    assert!(
        !transport.take_interrupt_status().queue_interrupt(),
        "reading the ISR clears it"
    );
    assert_eq!(read_config_u64(&transport, 0), Ok(0x1000));
    assert_eq!(transport.read_config_u32(8), Ok(0xDDCC_BBAA));
    assert_eq!(transport.read_config_u16(10), Ok(0xDDCC));
    assert_eq!(transport.read_config_u8(11), Ok(0xDD));
    assert_eq!(
        transport.read_config_u32(9),
        Err(TransportError::ConfigOutOfRange { offset: 9, width: 4 })
    );
    assert_eq!(
        transport.read_config_u8(u32::MAX),
        Err(TransportError::ConfigOutOfRange {
            offset: u32::MAX,
            width: 1
        })
    );
    assert_eq!(
        read_config_u64(&transport, u32::MAX - 2),
        Err(TransportError::ConfigOutOfRange {
            offset: u32::MAX - 2,
            width: 8
        })
    );
    state.borrow_mut().unsettled = true;
    assert_eq!(read_config_u64(&transport, 0), Err(TransportError::ConfigKeepsChanging));
}

#[test]
fn a_short_common_structure_is_refused() {
    let state = Rc::new(RefCell::new(LegacyState::default()));
    let region = |length| Region {
        registers: FakeLegacy(state.clone()),
        length,
    };
    let notify = NotifyRegion {
        region: region(2),
        offset_multiplier: 0,
    };
    let made = ModernTransport::new(region(40), notify, region(1), None);
    assert_eq!(
        made.err(),
        Some(TransportError::RegionTooShort { length: 40, needed: 56 })
    );
}

fn legacy(offered: u32, queue_size: u16, msix: MsixState) -> (LegacyTransport<FakeLegacy>, Rc<RefCell<LegacyState>>) {
    let config_start = match msix {
        MsixState::Disabled => 0x14,
        MsixState::Enabled => 0x18,
    };
    let state = LegacyState {
        offered,
        queues: vec![(queue_size, 0)],
        config_start,
        device_config: vec![0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01],
        ..LegacyState::default()
    };
    let state = Rc::new(RefCell::new(state));
    let region = Region {
        registers: FakeLegacy(state.clone()),
        length: config_start + 8,
    };
    (LegacyTransport::new(region, msix).unwrap(), state)
}

#[test]
fn legacy_initialization_skips_features_ok_and_never_offers_version_1() {
    let offered = (FLUSH | READ_ONLY | Features::RING_INDIRECT_DESC).low_half();
    let (mut transport, state) = legacy(offered, 128, MsixState::Disabled);
    let wanted = FLUSH | Features::RING_INDIRECT_DESC | Features::VERSION_1;
    let negotiated = initialize(&mut transport, wanted, |transport, _| {
        let layout = RingLayout::legacy(128, 0x20_0000).unwrap();
        transport.setup_queue(0, &layout).map(|_| ())
    });
    assert_eq!(negotiated, Ok(FLUSH));
    let state = state.borrow();
    assert_eq!(state.driver_features, FLUSH.low_half());
    assert_eq!(state.status, 7, "ACKNOWLEDGE | DRIVER | DRIVER_OK, no FEATURES_OK");
    assert_eq!(state.queues[0].1, 0x200, "page number of 0x20_0000");
}

#[test]
fn legacy_queue_setup_needs_one_contiguous_ring_of_the_devices_size() {
    let (mut transport, state) = legacy(0, 128, MsixState::Disabled);
    assert_eq!(
        transport.setup_queue(0, &modern_ring(128)),
        Err(TransportError::NeedsLegacyLayout)
    );
    let small = RingLayout::legacy(64, 0x20_0000).unwrap();
    assert_eq!(
        transport.setup_queue(0, &small),
        Err(TransportError::QueueSizeMismatch { size: 64, device: 128 })
    );
    assert_eq!(
        transport.max_queue_size(1),
        Err(TransportError::NoSuchQueue { queue: 1 })
    );
    let high = RingLayout::legacy(128, 1 << 44).unwrap();
    assert_eq!(transport.setup_queue(0, &high), Err(TransportError::RingAddressTooHigh));
    let layout = RingLayout::legacy(128, 0x20_0000).unwrap();
    let notifier = transport.setup_queue(0, &layout).unwrap();
    assert_eq!(
        transport.setup_queue(0, &layout),
        Err(TransportError::QueueAlreadyEnabled { queue: 0 })
    );
    transport.notify(notifier);
    assert_eq!(state.borrow().notified, [0]);
}

#[test]
fn legacy_device_configuration_moves_with_msix() {
    for msix in [MsixState::Disabled, MsixState::Enabled] {
        let (transport, state) = legacy(0, 8, msix);
        assert_eq!(read_config_u64(&transport, 0), Ok(0x0102_0304_0506_0708));
        assert_eq!(
            transport.read_config_u8(8),
            Err(TransportError::ConfigOutOfRange { offset: 8, width: 1 })
        );
        state.borrow_mut().isr = 1;
        assert!(transport.take_interrupt_status().queue_interrupt());
        assert_eq!(transport.config_generation(), 0);
    }
    let state = Rc::new(RefCell::new(LegacyState::default()));
    let region = Region {
        registers: FakeLegacy(state),
        length: 0x14,
    };
    let refused = LegacyTransport::new(region, MsixState::Enabled).err();
    assert_eq!(
        refused,
        Some(TransportError::RegionTooShort {
            length: 0x14,
            needed: 0x18
        })
    );
}
