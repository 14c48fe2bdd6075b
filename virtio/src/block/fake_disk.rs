//! A virtio-blk device for tests: takes requests from the available ring
//! (through the queue's fake device), executes IN / OUT / FLUSH / GET_ID
//! against an in-memory disk with a write cache, and answers in the used
//! ring in the order asked. Knobs make it misbehave. Test-only.

use crate::queue::fake_device::{FakeDevice, SeenChain, SeenDescriptor};
use crate::queue::{DmaMemory, RingLayout};
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

const SECTOR: usize = 512;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AnswerOrder {
    AsTaken,
    Reversed,
}

pub(crate) struct FakeDisk {
    device: FakeDevice,
    /// What survives a crash.
    pub(crate) durable: Vec<u8>,
    /// Written sectors not yet flushed.
    cache: BTreeMap<u64, Vec<u8>>,
    pub(crate) flushes: usize,
    pub(crate) id: Option<[u8; 20]>,
    /// Write this status instead of the real one.
    pub(crate) status_override: Option<u8>,
    /// Report this used length instead of the real one.
    pub(crate) length_override: Option<u32>,
    /// Do not write the status byte (but report it written).
    pub(crate) skip_status: bool,
}

impl FakeDisk {
    pub(crate) fn new(layout: RingLayout, sectors: usize) -> Self {
        Self {
            device: FakeDevice::new(layout),
            durable: vec![0; sectors * SECTOR],
            cache: BTreeMap::new(),
            flushes: 0,
            id: None,
            status_override: None,
            length_override: None,
            skip_status: false,
        }
    }

    /// Executes every available request and answers them all; returns how
    /// many.
    pub(crate) fn serve(&mut self, memory: &impl DmaMemory, order: AnswerOrder) -> usize {
        let chains = self.device.pop_all(memory);
        let mut answers: Vec<(u32, u32)> = chains.iter().map(|chain| self.execute(memory, chain)).collect();
        if order == AnswerOrder::Reversed {
            answers.reverse();
        }
        for (head, length) in &answers {
            self.device
                .push_used(memory, *head, self.length_override.unwrap_or(*length));
        }
        answers.len()
    }

    /// Loses the write cache.
    pub(crate) fn crash(&mut self) {
        self.cache.clear();
    }

    fn execute(&mut self, memory: &impl DmaMemory, chain: &SeenChain) -> (u32, u32) {
        let header = chain.descriptors[0];
        let status = *chain.descriptors.last().unwrap();
        let data = &chain.descriptors[1..chain.descriptors.len() - 1];
        let mut raw = [0u8; 16];
        memory.read_bytes(header.physical, &mut raw);
        let request_type = u32::from_le_bytes(raw[0..4].try_into().unwrap());
        let sector = u64::from_le_bytes(raw[8..16].try_into().unwrap());
        let (code, written) = match request_type {
            0 => self.read_into(memory, sector, data),
            1 => self.write_from(memory, sector, data),
            4 => self.flush(),
            8 => self.write_id(memory, data),
            _ => (2, 0),
        };
        if !self.skip_status {
            memory.write_bytes(status.physical, &[self.status_override.unwrap_or(code)]);
        }
        (u32::from(chain.head), written + 1)
    }

    fn sector_range(&self, sector: u64) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(sector).ok()?.checked_mul(SECTOR)?;
        let end = start + SECTOR;
        (end <= self.durable.len()).then_some(start..end)
    }

    fn read_into(&self, memory: &impl DmaMemory, mut sector: u64, data: &[SeenDescriptor]) -> (u8, u32) {
        let mut written = 0;
        for buffer in data {
            for chunk in 0..u64::from(buffer.length) / SECTOR as u64 {
                let Some(range) = self.sector_range(sector) else {
                    return (1, written);
                };
                let bytes = self
                    .cache
                    .get(&sector)
                    .cloned()
                    .unwrap_or_else(|| self.durable[range].to_vec());
                memory.write_bytes(buffer.physical + chunk * SECTOR as u64, &bytes);
                written += SECTOR as u32;
                sector += 1;
            }
        }
        (0, written)
    }

    fn write_from(&mut self, memory: &impl DmaMemory, mut sector: u64, data: &[SeenDescriptor]) -> (u8, u32) {
        for buffer in data {
            for chunk in 0..u64::from(buffer.length) / SECTOR as u64 {
                if self.sector_range(sector).is_none() {
                    return (1, 0);
                }
                let mut bytes = vec![0; SECTOR];
                memory.read_bytes(buffer.physical + chunk * SECTOR as u64, &mut bytes);
                self.cache.insert(sector, bytes);
                sector += 1;
            }
        }
        (0, 0)
    }

    fn flush(&mut self) -> (u8, u32) {
        for (sector, bytes) in core::mem::take(&mut self.cache) {
            let range = self.sector_range(sector).unwrap();
            self.durable[range].copy_from_slice(&bytes);
        }
        self.flushes += 1;
        (0, 0)
    }

    fn write_id(&self, memory: &impl DmaMemory, data: &[SeenDescriptor]) -> (u8, u32) {
        match self.id {
            Some(id) => {
                memory.write_bytes(data[0].physical, &id);
                (0, 20)
            }
            None => (2, 0),
        }
    }
}
