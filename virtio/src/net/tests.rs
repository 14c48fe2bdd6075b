//! Host tests of the network device's packet slots against the fake
//! device side of a split queue: frames received whole, runts dropped,
//! transmit slots freed once sent, a full transmit queue refusing.

use super::*;
use crate::queue::fake_device::FakeDevice;
use crate::queue::{Direction, DmaMemory, EventIndex, RingLayout, SplitQueue};
use crate::testing::VecMemory;
use std::vec::Vec;

const BASE: u64 = 0x10_0000;
const SLOTS: u64 = BASE + 0x4_0000;

fn rig(slot_count: u64, direction: Direction) -> (VecMemory, SplitQueue, PacketSlots, FakeDevice) {
    let memory = VecMemory::new(BASE, 0x10_0000);
    let layout = RingLayout::modern(16, BASE, BASE + 0x1_0000, BASE + 0x2_0000).unwrap();
    let queue = SplitQueue::new(&memory, layout, EventIndex::NotNegotiated);
    let addresses: Vec<u64> = (0..slot_count).map(|slot| SLOTS + slot * u64::from(SLOT_BYTES)).collect();
    let slots = PacketSlots::new(addresses, &queue, direction);
    (memory, queue, slots, FakeDevice::new(layout))
}

#[test]
fn a_received_frame_comes_back_without_its_header_and_the_slot_is_lent_again() {
    let (memory, mut queue, mut slots, mut device) = rig(4, Direction::DeviceWrites);
    assert_eq!(slots.lend_free(&mut queue, &memory), Ok(4));
    let chains = device.pop_all(&memory);
    assert_eq!(chains.len(), 4);
    assert!(chains.iter().all(|chain| chain.descriptors.len() == 1 && chain.descriptors[0].device_writes && chain.descriptors[0].length == SLOT_BYTES));
    let target = chains[2].descriptors[0].physical;
    memory.write_bytes(target, &[0; HEADER_BYTES]);
    memory.write_bytes(target + HEADER_BYTES as u64, b"a frame of sixty bytes or so");
    device.push_used(&memory, u32::from(chains[2].head), (HEADER_BYTES + 28) as u32);
    assert_eq!(slots.take_used(&mut queue, &memory), Some(Ok(Received::Frame(b"a frame of sixty bytes or so".to_vec()))));
    assert_eq!(slots.take_used(&mut queue, &memory), None);
    assert_eq!(slots.free_count(), 1);
    assert_eq!(slots.lend_free(&mut queue, &memory), Ok(1));
    assert_eq!(device.pop_all(&memory)[0].descriptors[0].physical, target);
}

#[test]
fn a_used_slot_shorter_than_the_header_is_a_runt() {
    let (memory, mut queue, mut slots, mut device) = rig(1, Direction::DeviceWrites);
    slots.lend_free(&mut queue, &memory).unwrap();
    let chain = device.pop(&memory).unwrap();
    device.push_used(&memory, u32::from(chain.head), 5);
    assert_eq!(slots.take_used(&mut queue, &memory), Some(Ok(Received::Runt)));
    assert_eq!(slots.free_count(), 1);
}

#[test]
fn a_device_claiming_more_than_the_slot_breaks_the_queue_not_the_driver() {
    let (memory, mut queue, mut slots, mut device) = rig(1, Direction::DeviceWrites);
    slots.lend_free(&mut queue, &memory).unwrap();
    let chain = device.pop(&memory).unwrap();
    device.push_used(&memory, u32::from(chain.head), SLOT_BYTES + 1);
    assert!(matches!(slots.take_used(&mut queue, &memory), Some(Err(PacketError::Device(_)))));
}

#[test]
fn a_sent_frame_carries_a_zero_header_and_frees_its_slot_once_used() {
    let (memory, mut queue, mut slots, mut device) = rig(2, Direction::DeviceReads);
    slots.send(&mut queue, &memory, b"first").unwrap();
    slots.send(&mut queue, &memory, b"second").unwrap();
    assert_eq!(slots.send(&mut queue, &memory, b"third"), Err(PacketError::Busy));
    assert_eq!(slots.send(&mut queue, &memory, &[0; LARGEST_FRAME + 1]), Err(PacketError::TooLarge));
    let chains = device.pop_all(&memory);
    let descriptor = chains[1].descriptors[0];
    assert!(!descriptor.device_writes);
    assert_eq!(descriptor.length as usize, HEADER_BYTES + 6);
    let mut bytes = [0xffu8; HEADER_BYTES + 6];
    memory.read_bytes(descriptor.physical, &mut bytes);
    assert_eq!(&bytes[..HEADER_BYTES], &[0; HEADER_BYTES]);
    assert_eq!(&bytes[HEADER_BYTES..], b"second");
    device.push_used(&memory, u32::from(chains[0].head), 0);
    assert_eq!(slots.take_used(&mut queue, &memory), Some(Ok(Received::Sent)));
    assert!(slots.send(&mut queue, &memory, b"third").is_ok());
}

#[test]
fn frames_past_the_ring_wait_and_leave_in_order_as_slots_come_back() {
    let (memory, mut queue, slots, mut device) = rig(2, Direction::DeviceReads);
    let mut transmit = TransmitQueue::new(slots, 3);
    let frames: Vec<Vec<u8>> = (0..6u8).map(|index| std::vec![index; 20]).collect();
    let outcomes: Vec<Transmitted> = frames.iter().map(|frame| transmit.send(&mut queue, &memory, frame).unwrap()).collect();
    use Transmitted::*;
    assert_eq!(outcomes, [Sent, Sent, Waiting, Waiting, Waiting, Dropped]);
    assert_eq!(transmit.unsent(), 5, "two in slots, three waiting");
    assert_eq!(transmit.send(&mut queue, &memory, &[0; LARGEST_FRAME + 1]), Ok(Dropped));
    // The device sends both; the waiting frames go out, oldest first.
    let mut seen = Vec::new();
    for _ in 0..3 {
        for chain in device.pop_all(&memory) {
            let descriptor = chain.descriptors[0];
            let mut bytes = std::vec![0u8; descriptor.length as usize];
            memory.read_bytes(descriptor.physical, &mut bytes);
            seen.push(bytes[HEADER_BYTES]);
            device.push_used(&memory, u32::from(chain.head), 0);
        }
        transmit.reclaim(&mut queue, &memory).unwrap();
    }
    assert_eq!(seen, [0, 1, 2, 3, 4]);
    assert_eq!(transmit.waiting(), 0);
    assert_eq!(transmit.unsent(), 0, "the device said it sent every frame");
}
