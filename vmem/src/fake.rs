//! Host stand-ins for the kernel's frame memory and frame source: frames
//! are words in a map, the source counts what is out and can be told to
//! fail after a number of allocations (to test every out-of-memory point).

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use crate::{FrameMemory, FrameSource, PAGE_SIZE};

/// Frames as 512 words each, shared by every clone.
#[derive(Clone, Default)]
pub struct FakeMemory {
    frames: Rc<RefCell<BTreeMap<u64, Vec<u64>>>>,
}

impl FakeMemory {
    fn with_frame<R>(&self, frame: u64, body: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        let mut frames = self.frames.borrow_mut();
        body(frames.entry(frame).or_insert_with(|| alloc::vec![0xDEAD_BEEF; 512]))
    }
}

impl FrameMemory for FakeMemory {
    fn read_word(&self, frame: u64, index: usize) -> u64 {
        self.with_frame(frame, |words| words[index])
    }

    fn write_word(&self, frame: u64, index: usize, value: u64) {
        self.with_frame(frame, |words| words[index] = value);
    }

    fn zero(&self, frame: u64) {
        self.with_frame(frame, |words| words.fill(0));
    }

    fn copy(&self, from: u64, to: u64) {
        let words = self.with_frame(from, |words| words.clone());
        self.with_frame(to, |target| target.copy_from_slice(&words));
    }
}

/// A pool of `frames` frames from physical address `first`, shared by
/// every clone; counts frames out and can fail on purpose.
#[derive(Clone)]
pub struct FakeFrames {
    free: Rc<RefCell<Vec<u64>>>,
    out: Rc<Cell<u64>>,
    /// Allocations still allowed before failing (`u64::MAX`: unlimited).
    allowance: Rc<Cell<u64>>,
}

impl FakeFrames {
    /// A pool of `frames` frames starting at `first`.
    pub fn new(first: u64, frames: u64) -> Self {
        let free = (0..frames).rev().map(|index| first + index * PAGE_SIZE).collect();
        Self { free: Rc::new(RefCell::new(free)), out: Rc::new(Cell::new(0)), allowance: Rc::new(Cell::new(u64::MAX)) }
    }

    /// Frames handed out and not freed.
    pub fn out(&self) -> u64 {
        self.out.get()
    }

    /// Lets only `count` more allocations succeed (`u64::MAX`: all).
    pub fn fail_after(&self, count: u64) {
        self.allowance.set(count);
    }
}

impl FrameSource for FakeFrames {
    type Fresh = u64;
    type Shared = u64;

    fn allocate(&self) -> Option<u64> {
        if self.allowance.get() == 0 {
            return None;
        }
        let frame = self.free.borrow_mut().pop()?;
        if self.allowance.get() != u64::MAX {
            self.allowance.set(self.allowance.get() - 1);
        }
        self.out.set(self.out.get() + 1);
        Some(frame)
    }

    fn free(&self, frame: u64) {
        assert!(!self.free.borrow().contains(&frame), "frame {frame:#x} freed twice");
        self.out.set(self.out.get() - 1);
        self.free.borrow_mut().push(frame);
    }
}
