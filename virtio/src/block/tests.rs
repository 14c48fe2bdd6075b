//! Host tests of block requests: full round trips against the fake disk
//! (write, flush, read back, answers out of order), bring-up through the
//! modern transport, failures the device reports, requests refused before
//! they reach the queue, and slot accounting.

use super::fake_disk::{AnswerOrder, FakeDisk};
use super::*;
use crate::queue::{AddError, DeviceError, DmaMemory, EventIndex, RingLayout, SplitQueue, Token, Used};
use crate::testing::VecMemory;
use crate::transport::fake_modern::{fake_modern, modern_state};
use crate::transport::{initialize, Features, InitError, Transport, TransportError};
use std::vec;
use std::vec::Vec;

const BASE: u64 = 0x10_0000;
const RING: u64 = BASE;
const AREA: u64 = BASE + 0x4_0000;
const DATA: u64 = BASE + 0x8_0000;
pub(super) const DISK_SECTORS: usize = 64;

pub(super) fn config(capacity_sectors: u64) -> BlockConfig {
    BlockConfig {
        capacity_sectors,
        segment_size_limit: None,
        segment_limit: None,
        block_size: None,
        queue_count: None,
        access: Access::ReadWrite,
        flush: Flush::Negotiated,
    }
}

struct Rig {
    memory: VecMemory,
    queue: SplitQueue,
    requests: BlockRequests,
    disk: FakeDisk,
}

fn rig(layout: RingLayout, config: BlockConfig) -> Rig {
    let memory = VecMemory::new(BASE, 0x10_0000);
    let queue = SplitQueue::new(&memory, layout, EventIndex::NotNegotiated);
    let requests = BlockRequests::new(AREA, &queue, config).unwrap();
    Rig {
        memory,
        queue,
        requests,
        disk: FakeDisk::new(layout, DISK_SECTORS),
    }
}

fn modern_rig(size: u16, config: BlockConfig) -> Rig {
    rig(
        RingLayout::modern(size, RING, RING + 0x1_0000, RING + 0x2_0000).unwrap(),
        config,
    )
}

fn sector(physical: u64, sectors: u32) -> DataBuffer {
    DataBuffer {
        physical,
        length: sectors * SECTOR_SIZE,
    }
}

fn pattern(seed: u8, length: usize) -> Vec<u8> {
    (0..length)
        .map(|n| seed.wrapping_mul(31).wrapping_add(n as u8))
        .collect()
}

impl Rig {
    fn complete_all(&mut self) -> Vec<Completion> {
        core::iter::from_fn(|| self.requests.complete_next(&mut self.queue, &self.memory))
            .map(|c| c.unwrap())
            .collect()
    }
}

pub(super) fn device_config_bytes() -> Vec<u8> {
    let mut bytes = vec![0u8; 60];
    bytes[0..8].copy_from_slice(&(DISK_SECTORS as u64).to_le_bytes());
    bytes[8..12].copy_from_slice(&4096u32.to_le_bytes());
    bytes[12..16].copy_from_slice(&126u32.to_le_bytes());
    bytes[20..24].copy_from_slice(&4096u32.to_le_bytes());
    bytes[34..36].copy_from_slice(&4u16.to_le_bytes());
    bytes
}

/// Writes sectors 0..8 in four requests, flushes, crashes the disk, reads
/// everything back in three requests; the disk answers in reverse order.
fn write_flush_crash_read(rig: &mut Rig) {
    let written: Vec<Vec<u8>> = (0..4).map(|n| pattern(n, 2 * SECTOR_SIZE as usize)).collect();
    let mut tokens = Vec::new();
    for (n, bytes) in written.iter().enumerate() {
        let physical = DATA + 0x1000 * n as u64;
        rig.memory.write_bytes(physical, bytes);
        let data = [sector(physical, 1), sector(physical + 512, 1)];
        tokens.push(
            rig.requests
                .write(&mut rig.queue, &rig.memory, 2 * n as u64, &data)
                .unwrap(),
        );
    }
    assert_eq!(rig.requests.in_flight(), 4);
    assert_eq!(rig.disk.serve(&rig.memory, AnswerOrder::Reversed), 4);
    let done = rig.complete_all();
    let mut expected_tokens = tokens.clone();
    expected_tokens.reverse();
    assert_eq!(done.iter().map(|c| c.token).collect::<Vec<_>>(), expected_tokens);
    assert!(done
        .iter()
        .all(|c| c.outcome == Ok(()) && matches!(c.request, RequestKind::Write { sectors: 2, .. })));
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    assert_eq!(rig.complete_all()[0].request, RequestKind::Flush);
    rig.disk.crash();
    let reads: [(u32, u32); 3] = [(0, 3), (3, 4), (7, 1)];
    for (first, count) in reads {
        let physical = DATA + 0x1_0000 + u64::from(first) * 512;
        rig.requests
            .read(
                &mut rig.queue,
                &rig.memory,
                u64::from(first),
                &[sector(physical, count)],
            )
            .unwrap();
    }
    assert_eq!(rig.disk.serve(&rig.memory, AnswerOrder::Reversed), 3);
    assert!(rig.complete_all().iter().all(|c| c.outcome == Ok(())));
    let mut read_back = vec![0u8; 8 * 512];
    rig.memory.read_bytes(DATA + 0x1_0000, &mut read_back);
    assert_eq!(read_back, written.concat(), "sectors 0..8 as written");
    assert_eq!((rig.requests.in_flight(), rig.queue.in_flight()), (0, 0));
}

#[test]
fn sectors_written_flushed_and_read_back_over_a_modern_ring() {
    write_flush_crash_read(&mut modern_rig(16, config(DISK_SECTORS as u64)));
}

#[test]
fn sectors_written_flushed_and_read_back_over_a_legacy_ring() {
    write_flush_crash_read(&mut rig(
        RingLayout::legacy(16, RING).unwrap(),
        config(DISK_SECTORS as u64),
    ));
}

#[test]
fn unflushed_writes_are_lost_in_a_crash() {
    let mut rig = modern_rig(16, config(DISK_SECTORS as u64));
    rig.memory.write_bytes(DATA, &pattern(7, 512));
    rig.requests
        .write(&mut rig.queue, &rig.memory, 5, &[sector(DATA, 1)])
        .unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    rig.complete_all();
    rig.disk.crash();
    assert!(rig.disk.durable[5 * 512..6 * 512].iter().all(|byte| *byte == 0));
}

#[test]
fn a_block_device_comes_up_through_the_modern_transport() {
    let offered = Features::VERSION_1 | BlockFeatures::FLUSH | BlockFeatures::BLK_SIZE | BlockFeatures::MQ;
    let mut device = modern_state(offered, 1, 256);
    device.device_config = device_config_bytes();
    let (mut transport, state) = fake_modern(device, 4);
    let memory = VecMemory::new(BASE, 0x10_0000);
    let layout = RingLayout::modern(64, RING, RING + 0x1_0000, RING + 0x2_0000).unwrap();
    let mut setup = None;
    let negotiated = initialize(&mut transport, wanted_block_features(), |transport, negotiated| {
        let queue = SplitQueue::new(&memory, layout, EventIndex::NotNegotiated);
        let notifier = transport.setup_queue(0, queue.layout())?;
        let config = BlockConfig::read(&*transport, negotiated)?;
        setup = Some((queue, notifier, config));
        Ok::<(), TransportError>(())
    });
    assert_eq!(
        negotiated,
        Ok::<_, InitError<TransportError>>(Features::VERSION_1 | BlockFeatures::FLUSH | BlockFeatures::BLK_SIZE)
    );
    let (mut queue, notifier, config) = setup.unwrap();
    assert_eq!(
        (config.block_size, config.queue_count, config.flush),
        (Some(4096), None, Flush::Negotiated)
    );
    let mut requests = BlockRequests::new(AREA, &queue, config).unwrap();
    let mut disk = FakeDisk::new(layout, DISK_SECTORS);
    disk.id = Some(*b"lamina-disk-0\0\0\0\0\0\0\0");
    requests
        .get_id(
            &mut queue,
            &memory,
            DataBuffer {
                physical: DATA,
                length: 20,
            },
        )
        .unwrap();
    if queue.should_notify(&memory) {
        transport.notify(notifier);
    }
    assert_eq!(state.borrow().doorbells, [(0, 0)]);
    disk.serve(&memory, AnswerOrder::AsTaken);
    let completion = requests.complete_next(&mut queue, &memory).unwrap().unwrap();
    assert_eq!((completion.request, completion.outcome), (RequestKind::GetId, Ok(())));
    let mut id = [0u8; 13];
    memory.read_bytes(DATA, &mut id);
    assert_eq!(&id, b"lamina-disk-0");
}

#[test]
fn failures_the_device_reports_become_request_failures() {
    let mut rig = modern_rig(16, config(DISK_SECTORS as u64 + 8));
    rig.requests
        .read(&mut rig.queue, &rig.memory, DISK_SECTORS as u64, &[sector(DATA, 1)])
        .unwrap();
    rig.requests
        .get_id(
            &mut rig.queue,
            &rig.memory,
            DataBuffer {
                physical: DATA,
                length: 20,
            },
        )
        .unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    let outcomes: Vec<_> = rig.complete_all().iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [Err(RequestFailure::IoError), Err(RequestFailure::Unsupported)]
    );
    rig.disk.status_override = Some(7);
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    assert_eq!(
        rig.complete_all()[0].outcome,
        Err(RequestFailure::UnknownStatus { status: 7 })
    );
    rig.disk.status_override = None;
    rig.disk.skip_status = true;
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    assert_eq!(
        rig.complete_all()[0].outcome,
        Err(RequestFailure::UnknownStatus { status: 0xFF })
    );
    rig.disk.skip_status = false;
    rig.disk.length_override = Some(0);
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    assert_eq!(rig.complete_all()[0].outcome, Err(RequestFailure::StatusNotWritten));
    assert_eq!(rig.requests.in_flight(), 0);
}

#[test]
fn a_length_beyond_the_chain_abandons_the_request_and_reports_the_device() {
    let mut rig = modern_rig(16, config(DISK_SECTORS as u64));
    let token = rig
        .requests
        .read(&mut rig.queue, &rig.memory, 0, &[sector(DATA, 1)])
        .unwrap();
    rig.disk.length_override = Some(514);
    rig.disk.serve(&rig.memory, AnswerOrder::AsTaken);
    let error = DeviceError::LengthTooLarge {
        token,
        written: 514,
        writable: 513,
    };
    assert_eq!(
        rig.requests.complete_next(&mut rig.queue, &rig.memory),
        Some(Err(BlockError::Device(error)))
    );
    assert_eq!(rig.requests.in_flight(), 0);
    assert_eq!(rig.requests.complete_next(&mut rig.queue, &rig.memory), None);
}

#[test]
fn requests_the_device_must_not_see_are_refused_before_the_queue() {
    let mut limited = config(DISK_SECTORS as u64);
    limited.segment_limit = Some(2);
    limited.segment_size_limit = Some(1024);
    limited.flush = Flush::NotNegotiated;
    let mut rig = modern_rig(16, limited);
    let (queue, memory, requests) = (&mut rig.queue, &rig.memory, &mut rig.requests);
    let last = DISK_SECTORS as u64 - 1;
    assert_eq!(
        requests.read(queue, memory, last, &[sector(DATA, 2)]),
        Err(BlockError::PastCapacity)
    );
    assert_eq!(
        requests.read(queue, memory, last, &[sector(DATA, 1), sector(DATA, 1)]),
        Err(BlockError::PastCapacity)
    );
    assert_eq!(
        requests.read(queue, memory, u64::MAX, &[sector(DATA, 1)]),
        Err(BlockError::PastCapacity)
    );
    assert_eq!(
        requests.read(
            queue,
            memory,
            0,
            &[DataBuffer {
                physical: DATA,
                length: 100
            }]
        ),
        Err(BlockError::NotWholeSectors)
    );
    assert_eq!(requests.read(queue, memory, 0, &[]), Err(BlockError::NoData));
    assert_eq!(
        requests.read(queue, memory, 0, &[sector(DATA, 1); 3]),
        Err(BlockError::TooManySegments)
    );
    assert_eq!(
        requests.write(queue, memory, 0, &[sector(DATA, 4)]),
        Err(BlockError::SegmentTooLarge)
    );
    assert_eq!(requests.flush(queue, memory), Err(BlockError::FlushNotNegotiated));
    assert_eq!(
        requests.get_id(
            queue,
            memory,
            DataBuffer {
                physical: DATA,
                length: 19
            }
        ),
        Err(BlockError::IdBufferTooSmall)
    );
    assert_eq!((queue.in_flight(), requests.in_flight()), (0, 0));
    let mut read_only = config(DISK_SECTORS as u64);
    read_only.access = Access::ReadOnly;
    let mut rig = modern_rig(16, read_only);
    assert_eq!(
        rig.requests.write(&mut rig.queue, &rig.memory, 0, &[sector(DATA, 1)]),
        Err(BlockError::ReadOnly)
    );
}

#[test]
fn slots_run_out_and_come_back_and_a_refused_chain_keeps_none() {
    let mut rig = modern_rig(4, config(DISK_SECTORS as u64));
    let five_buffers = [sector(DATA, 1); 3];
    let refused = rig.requests.read(&mut rig.queue, &rig.memory, 0, &five_buffers);
    assert_eq!(refused, Err(BlockError::Queue(AddError::ChainLongerThanQueue)));
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    assert_eq!(rig.requests.flush(&mut rig.queue, &rig.memory), Err(BlockError::Busy));
    rig.disk.serve(&rig.memory, AnswerOrder::Reversed);
    assert_eq!(rig.complete_all().len(), 2);
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    rig.requests.flush(&mut rig.queue, &rig.memory).unwrap();
    assert_eq!(rig.disk.serve(&rig.memory, AnswerOrder::AsTaken), 2);
    assert_eq!(rig.disk.flushes, 4);
}

#[test]
fn completions_for_other_tokens_or_queues_are_refused() {
    let mut rig = modern_rig(16, config(DISK_SECTORS as u64));
    let stranger = rig
        .queue
        .add(
            &rig.memory,
            &[crate::queue::Buffer {
                physical: 0,
                length: 1,
                direction: crate::queue::Direction::DeviceWrites,
            }],
        )
        .unwrap();
    let used = Used {
        token: stranger,
        written_length: 1,
    };
    assert_eq!(
        rig.requests.complete(&rig.memory, used),
        Err(BlockError::UnknownToken { token: stranger })
    );
    assert_eq!(rig.requests.abandon(Token::new(15)), None);
    let memory = VecMemory::new(BASE, 0x10_0000);
    let mut other = SplitQueue::new(&memory, RingLayout::legacy(8, RING).unwrap(), EventIndex::NotNegotiated);
    assert_eq!(rig.requests.flush(&mut other, &memory), Err(BlockError::OtherQueue));
    assert_eq!(
        BlockRequests::new(u64::MAX - 8, &other, config(1)).err(),
        Some(BlockError::BadArea)
    );
}
