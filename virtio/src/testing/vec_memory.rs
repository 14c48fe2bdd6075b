//! DMA memory for tests: a byte vector standing for the physical range
//! `base..base + len`, with a count of the barriers asked for. Test-only:
//! an access outside the range is a bug in the code under test and panics.

use crate::queue::{Barrier, DmaMemory};
use core::cell::RefCell;
use std::vec;
use std::vec::Vec;

pub(crate) struct VecMemory {
    base: u64,
    bytes: RefCell<Vec<u8>>,
    pub(crate) barriers: RefCell<Vec<Barrier>>,
}

impl VecMemory {
    pub(crate) fn new(base: u64, length: usize) -> Self {
        Self {
            base,
            bytes: RefCell::new(vec![0; length]),
            barriers: RefCell::new(Vec::new()),
        }
    }

    fn range(&self, physical: u64, length: usize) -> core::ops::Range<usize> {
        let start = physical.checked_sub(self.base).expect("access below test memory");
        let start = usize::try_from(start).unwrap();
        let end = start.checked_add(length).unwrap();
        assert!(
            end <= self.bytes.borrow().len(),
            "access past test memory at {physical:#x}+{length}"
        );
        start..end
    }

    fn read<const N: usize>(&self, physical: u64) -> [u8; N] {
        let range = self.range(physical, N);
        self.bytes.borrow()[range].try_into().unwrap()
    }

    fn write(&self, physical: u64, bytes: &[u8]) {
        let range = self.range(physical, bytes.len());
        self.bytes.borrow_mut()[range].copy_from_slice(bytes);
    }
}

impl DmaMemory for VecMemory {
    fn read_u16(&self, physical: u64) -> u16 {
        u16::from_le_bytes(self.read(physical))
    }
    fn read_u32(&self, physical: u64) -> u32 {
        u32::from_le_bytes(self.read(physical))
    }
    fn read_u64(&self, physical: u64) -> u64 {
        u64::from_le_bytes(self.read(physical))
    }
    fn write_u16(&self, physical: u64, value: u16) {
        self.write(physical, &value.to_le_bytes());
    }
    fn write_u32(&self, physical: u64, value: u32) {
        self.write(physical, &value.to_le_bytes());
    }
    fn write_u64(&self, physical: u64, value: u64) {
        self.write(physical, &value.to_le_bytes());
    }
    fn read_bytes(&self, physical: u64, into: &mut [u8]) {
        let range = self.range(physical, into.len());
        into.copy_from_slice(&self.bytes.borrow()[range]);
    }
    fn write_bytes(&self, physical: u64, bytes: &[u8]) {
        self.write(physical, bytes);
    }
    fn barrier(&self, barrier: Barrier) {
        self.barriers.borrow_mut().push(barrier);
    }
}
