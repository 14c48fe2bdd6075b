//! Host tests of the split virtqueue against the fake device over the same
//! memory: chains, out-of-order completion, a full queue, the 16-bit index
//! wrap, notification decisions and a misbehaving device.

use super::fake_device::FakeDevice;
use super::*;
use crate::testing::VecMemory;
use std::vec::Vec;

const BASE: u64 = 0x10_0000;

fn legacy_queue(size: u16) -> (VecMemory, SplitQueue, FakeDevice) {
    let memory = VecMemory::new(BASE, RingLayout::legacy_bytes(size).unwrap() as usize);
    let layout = RingLayout::legacy(size, BASE).unwrap();
    let queue = SplitQueue::new(&memory, layout, EventIndex::NotNegotiated);
    (memory, queue, FakeDevice::new(layout))
}

fn modern_queue(size: u16, event_index: EventIndex) -> (VecMemory, SplitQueue, FakeDevice) {
    let memory = VecMemory::new(BASE, 0x4_0000);
    let layout = RingLayout::modern(size, BASE, BASE + 0x1_0000, BASE + 0x2_0000).unwrap();
    let queue = SplitQueue::new(&memory, layout, event_index);
    (memory, queue, FakeDevice::new(layout))
}

fn reads(physical: u64, length: u32) -> Buffer {
    Buffer {
        physical,
        length,
        direction: Direction::DeviceReads,
    }
}

fn writes(physical: u64, length: u32) -> Buffer {
    Buffer {
        physical,
        length,
        direction: Direction::DeviceWrites,
    }
}

#[test]
fn legacy_layout_puts_the_used_ring_on_the_next_page_like_linux_vring_size() {
    assert_eq!(RingLayout::legacy_bytes(256), Ok(8192 + 6 + 8 * 256));
    assert_eq!(RingLayout::legacy_bytes(128), Ok(4096 + 6 + 8 * 128));
    let layout = RingLayout::legacy(256, 0x20_0000).unwrap();
    assert_eq!(layout.driver_area(), 0x20_0000 + 4096);
    assert_eq!(layout.device_area(), 0x20_0000 + 8192);
    assert_eq!(layout.shape(), RingShape::Legacy);
}

#[test]
fn layouts_refuse_bad_sizes_alignment_overlap_and_wrapping() {
    for size in [0, 3, 48, 65535] {
        assert_eq!(RingLayout::legacy_bytes(size), Err(LayoutError::BadSize { size }));
    }
    assert_eq!(
        RingLayout::legacy(8, 0x1001),
        Err(LayoutError::Misaligned { address: 0x1001 })
    );
    assert_eq!(RingLayout::legacy(8, !0xFFF), Err(LayoutError::PastAddressSpace));
    assert_eq!(
        RingLayout::modern(8, 0x1008, 0x2000, 0x3000),
        Err(LayoutError::Misaligned { address: 0x1008 })
    );
    assert_eq!(
        RingLayout::modern(8, 0x1000, 0x2001, 0x3000),
        Err(LayoutError::Misaligned { address: 0x2001 })
    );
    assert_eq!(
        RingLayout::modern(8, 0x1000, 0x2000, 0x3002),
        Err(LayoutError::Misaligned { address: 0x3002 })
    );
    assert_eq!(
        RingLayout::modern(8, 0x1000, 0x1070, 0x3000),
        Err(LayoutError::AreasOverlap)
    );
    assert_eq!(
        RingLayout::modern(8, 0x1000, 0x2000, u64::MAX - 3),
        Err(LayoutError::PastAddressSpace)
    );
    assert!(RingLayout::modern(MAX_QUEUE_SIZE, 0, 0x8_0000, 0x10_0000).is_ok());
}

#[test]
fn a_chain_reaches_the_device_and_comes_back_with_its_length() {
    for (memory, mut queue, mut device) in [legacy_queue(8), modern_queue(8, EventIndex::NotNegotiated)] {
        let chain = [reads(0xA000, 16), writes(0xB000, 512), writes(0xC000, 1)];
        let token = queue.add(&memory, &chain).unwrap();
        assert_eq!(queue.free_descriptors(), 5);
        let seen = device.pop(&memory).expect("the device sees the chain");
        assert_eq!(seen.head, token.head());
        let expected: Vec<_> = chain
            .iter()
            .map(|b| (b.physical, b.length, b.direction == Direction::DeviceWrites))
            .collect();
        let got: Vec<_> = seen
            .descriptors
            .iter()
            .map(|d| (d.physical, d.length, d.device_writes))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(queue.take_used(&memory), None, "nothing used yet");
        device.push_used(&memory, u32::from(seen.head), 513);
        assert_eq!(
            queue.take_used(&memory),
            Some(Ok(Used {
                token,
                written_length: 513
            }))
        );
        assert_eq!(queue.take_used(&memory), None);
        assert_eq!((queue.free_descriptors(), queue.in_flight()), (8, 0));
    }
}

#[test]
fn several_requests_in_flight_complete_out_of_order() {
    let (memory, mut queue, mut device) = modern_queue(16, EventIndex::NotNegotiated);
    let tokens: Vec<Token> = (0..5u64)
        .map(|n| {
            queue
                .add(&memory, &[reads(0x1000 * n, 16), writes(0x1000 * n + 16, 8)])
                .unwrap()
        })
        .collect();
    assert_eq!(queue.in_flight(), 5);
    assert_eq!(queue.in_flight_tokens().collect::<Vec<_>>().len(), 5);
    let seen = device.pop_all(&memory);
    assert_eq!(seen.len(), 5);
    for chain in [&seen[3], &seen[0], &seen[4], &seen[1], &seen[2]] {
        device.push_used(&memory, u32::from(chain.head), 8);
    }
    let order: Vec<Token> = core::iter::from_fn(|| queue.take_used(&memory))
        .map(|used| used.unwrap().token)
        .collect();
    assert_eq!(order, [tokens[3], tokens[0], tokens[4], tokens[1], tokens[2]]);
    assert_eq!(queue.free_descriptors(), 16);
}

#[test]
fn a_full_queue_refuses_until_a_chain_comes_back() {
    let (memory, mut queue, mut device) = legacy_queue(4);
    let first = queue.add(&memory, &[reads(0x100, 1), writes(0x200, 1)]).unwrap();
    queue.add(&memory, &[reads(0x300, 1)]).unwrap();
    assert_eq!(
        queue.add(&memory, &[reads(0, 1), reads(0, 1)]),
        Err(AddError::QueueFull)
    );
    queue.add(&memory, &[writes(0x400, 1)]).unwrap();
    assert_eq!(queue.add(&memory, &[reads(0, 1)]), Err(AddError::QueueFull));
    let seen = device.pop_all(&memory);
    device.push_used(&memory, u32::from(seen[0].head), 1);
    assert_eq!(queue.take_used(&memory).unwrap().unwrap().token, first);
    assert!(queue.add(&memory, &[reads(0, 1), writes(0, 1)]).is_ok());
}

#[test]
fn chains_the_queue_cannot_take_are_refused_without_changing_it() {
    let (memory, mut queue, _device) = legacy_queue(4);
    assert_eq!(queue.add(&memory, &[]), Err(AddError::EmptyChain));
    assert_eq!(
        queue.add(&memory, &[reads(0, 1); 5]),
        Err(AddError::ChainLongerThanQueue)
    );
    assert_eq!(
        queue.add(&memory, &[writes(0, 0), reads(0, 1)]),
        Err(AddError::ReadableAfterWritable)
    );
    assert_eq!(
        queue.add(&memory, &[writes(0, u32::MAX), writes(0, 1)]),
        Err(AddError::WritableTooLarge)
    );
    assert_eq!((queue.free_descriptors(), queue.in_flight()), (4, 0));
}

#[test]
fn indices_wrap_past_65536_with_requests_in_flight() {
    let (memory, mut queue, mut device) = modern_queue(8, EventIndex::NotNegotiated);
    let mut completed: u32 = 0;
    let mut round: u64 = 0;
    while completed < 70_000 {
        let tokens: Vec<Token> = (0..3u64)
            .map(|n| {
                queue
                    .add(&memory, &[reads(round * 8 + n, 4), writes(0x9000, 2)])
                    .expect("room for 3 chains of 2")
            })
            .collect();
        let seen = device.pop_all(&memory);
        assert_eq!(seen.len(), 3);
        for chain in seen.iter().rev() {
            device.push_used(&memory, u32::from(chain.head), 2);
        }
        for expected in tokens.iter().rev() {
            let used = queue
                .take_used(&memory)
                .expect("a used chain")
                .expect("a valid used chain");
            assert_eq!(
                used,
                Used {
                    token: *expected,
                    written_length: 2
                }
            );
            completed += 1;
        }
        assert_eq!(queue.free_descriptors(), 8);
        round += 1;
    }
}

#[test]
fn notification_follows_the_no_notify_flag() {
    let (memory, mut queue, device) = legacy_queue(8);
    assert!(!queue.should_notify(&memory), "nothing added yet");
    queue.add(&memory, &[reads(0, 1)]).unwrap();
    assert!(queue.should_notify(&memory));
    assert!(!queue.should_notify(&memory), "nothing added since");
    device.set_used_flags(&memory, 1);
    queue.add(&memory, &[reads(0, 1)]).unwrap();
    assert!(!queue.should_notify(&memory), "the device said it polls");
}

#[test]
fn notification_follows_the_available_event_index() {
    let (memory, mut queue, device) = modern_queue(8, EventIndex::Negotiated);
    device.set_available_event(&memory, 5);
    queue.add(&memory, &[reads(0, 1)]).unwrap();
    queue.add(&memory, &[reads(0, 1)]).unwrap();
    assert!(!queue.should_notify(&memory), "index 0..2 does not pass event 5");
    device.set_available_event(&memory, 2);
    queue.add(&memory, &[reads(0, 1)]).unwrap();
    assert!(queue.should_notify(&memory), "index 2..3 passes event 2");
}

#[test]
fn interrupts_are_asked_for_by_flag_or_by_used_event() {
    let (memory, mut queue, device) = legacy_queue(8);
    queue.set_interrupts(&memory, Interrupts::Suppressed);
    assert_eq!(device.available_flags(&memory), 1);
    queue.set_interrupts(&memory, Interrupts::Wanted);
    assert_eq!(device.available_flags(&memory), 0);

    let (memory, mut queue, mut device) = modern_queue(8, EventIndex::Negotiated);
    let token = queue.add(&memory, &[writes(0, 4)]).unwrap();
    device.pop(&memory).unwrap();
    device.push_used(&memory, u32::from(token.head()), 4);
    queue.take_used(&memory).unwrap().unwrap();
    assert_eq!(device.used_event(&memory), 1, "interrupt at the next used chain");
    assert_eq!(device.available_flags(&memory), 0, "flags stay 0 with EVENT_IDX");
}

#[test]
fn barriers_separate_entry_from_index_and_index_from_element() {
    let (memory, mut queue, mut device) = legacy_queue(8);
    memory.barriers.borrow_mut().clear();
    queue.add(&memory, &[writes(0, 4)]).unwrap();
    assert_eq!(*memory.barriers.borrow(), [Barrier::StoresBeforeStores]);
    queue.should_notify(&memory);
    device.pop(&memory).unwrap();
    device.push_used(&memory, 0, 4);
    queue.take_used(&memory).unwrap().unwrap();
    let expected = [
        Barrier::StoresBeforeStores,
        Barrier::StoresBeforeLoads,
        Barrier::LoadsBeforeLoads,
    ];
    assert_eq!(*memory.barriers.borrow(), expected);
}

/// Puts two chains in flight and has the device answer (`id`, `length`);
/// returns what the queue says and the queue.
fn answer(id: u32, length: u32) -> (Option<Result<Used, DeviceError>>, SplitQueue, VecMemory) {
    let (memory, mut queue, mut device) = legacy_queue(8);
    queue.add(&memory, &[reads(0, 16), writes(0, 8)]).unwrap();
    queue.add(&memory, &[writes(0, 8)]).unwrap();
    device.pop_all(&memory);
    device.push_used(&memory, id, length);
    (queue.take_used(&memory), queue, memory)
}

#[test]
fn bogus_used_elements_are_errors_and_break_the_queue() {
    assert_eq!(answer(8, 0).0, Some(Err(DeviceError::IdOutOfRange { id: 8 })));
    assert_eq!(
        answer(u32::MAX, 0).0,
        Some(Err(DeviceError::IdOutOfRange { id: u32::MAX }))
    );
    assert_eq!(
        answer(1, 0).0,
        Some(Err(DeviceError::IdNotInFlight { id: 1 })),
        "1 is inside the chain at 0"
    );
    assert_eq!(
        answer(5, 0).0,
        Some(Err(DeviceError::IdNotInFlight { id: 5 })),
        "5 is free"
    );
    let (taken, mut queue, memory) = answer(0, 9);
    let token = Token::new(0);
    assert_eq!(
        taken,
        Some(Err(DeviceError::LengthTooLarge {
            token,
            written: 9,
            writable: 8
        }))
    );
    assert!(queue.is_broken());
    assert_eq!(queue.take_used(&memory), None, "a broken queue reports nothing more");
    assert_eq!(queue.add(&memory, &[reads(0, 1)]), Err(AddError::Broken));
}

#[test]
fn a_used_index_beyond_the_chains_in_flight_is_an_error() {
    let (memory, mut queue, mut device) = legacy_queue(8);
    queue.add(&memory, &[writes(0, 8)]).unwrap();
    device.set_used_index(&memory, 2);
    let expected = DeviceError::UsedIndexTooFar {
        device_index: 2,
        expected_from: 0,
    };
    assert_eq!(queue.take_used(&memory), Some(Err(expected)));
    device.set_used_index(&memory, 0xFFFF);
    assert_eq!(queue.take_used(&memory), None);
}

#[test]
fn a_device_answering_the_same_chain_twice_is_caught() {
    let (memory, mut queue, mut device) = legacy_queue(8);
    queue.add(&memory, &[writes(0, 8)]).unwrap();
    queue.add(&memory, &[writes(0, 8)]).unwrap();
    device.pop_all(&memory);
    device.push_used(&memory, 0, 8);
    device.push_used(&memory, 0, 8);
    assert!(matches!(queue.take_used(&memory), Some(Ok(_))));
    assert_eq!(
        queue.take_used(&memory),
        Some(Err(DeviceError::IdNotInFlight { id: 0 }))
    );
}
