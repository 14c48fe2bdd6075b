//! Host stand-ins for the kernel's frame memory and frame source: frames
//! are words in a map, the source counts what is out and can be told to
//! fail after a number of allocations (to test every out-of-memory point).

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use machine::frame_states::{FrameState, FrameStates};

use crate::{FrameMemory, FrameSource, PAGE_SIZE};

/// Frames as 512 words each, shared by every clone, and the machine
/// layer's own frame-state rules (`machine::frame_states`) applied to
/// every call as the kernel's `SpaceTables` applies them — except that a
/// call the rules refuse panics here, so a test names the bug. A new root
/// gets `kernel_half` in its upper half.
#[derive(Clone)]
pub struct FakeMemory {
    frames: Rc<RefCell<BTreeMap<u64, Vec<u64>>>>,
    kernel_half: Rc<[u64; 256]>,
    states: Rc<FrameStates>,
    /// This memory's space.
    space: u64,
    next_space: Rc<Cell<u64>>,
}

impl FakeMemory {
    /// Memory for frames `[first, first + count × 4096)`, all free, whose
    /// roots get `kernel_half`.
    pub fn new(first: u64, count: u64, kernel_half: [u64; 256]) -> Self {
        let states = FrameStates::new(first, count as usize).expect("frame states");
        states.mark_free(first, first + count * PAGE_SIZE);
        Self {
            frames: Rc::default(),
            kernel_half: Rc::new(kernel_half),
            states: Rc::new(states),
            space: 1,
            next_space: Rc::new(Cell::new(2)),
        }
    }

    fn with_frame<R>(&self, frame: u64, body: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        let mut frames = self.frames.borrow_mut();
        body(frames.entry(frame).or_insert_with(|| alloc::vec![0xDEAD_BEEF; 512]))
    }

    /// Word `index` (0..512) of any frame (what the program sees).
    pub fn read_word(&self, frame: u64, index: usize) -> u64 {
        self.with_frame(frame, |words| words[index])
    }

    /// Writes word `index` of any frame (what the program writes).
    pub fn write_word(&self, frame: u64, index: usize, value: u64) {
        self.with_frame(frame, |words| words[index] = value);
    }

    /// Fills any frame with zeroes.
    pub fn zero(&self, frame: u64) {
        self.with_frame(frame, |words| words.fill(0));
    }

    /// The machine-layer state of `frame`.
    pub fn state(&self, frame: u64) -> FrameState {
        self.states.state(frame)
    }

    /// Makes `frame` (free) a shared object's page that the object has let
    /// go of: spaces map it as more references, and the last to leave
    /// frees it.
    pub fn make_shared(&self, frame: u64) {
        self.states.swap(frame, FrameState::Free, FrameState::Mapped { count: 0 }).expect("a free frame");
    }

    fn is_loose(&self, frame: u64) -> bool {
        self.states.state(frame) == FrameState::Loose { space: self.space }
    }
}

impl FrameMemory for FakeMemory {
    type Frame = u64;

    fn install_root(&mut self, frame: u64) -> Result<u64, u64> {
        let root = FrameMemory::adopt(self, frame);
        self.states.make_root(root, self.space).expect("a loose frame becomes the root");
        FakeMemory::zero(self, root);
        for (index, entry) in self.kernel_half.iter().enumerate() {
            FakeMemory::write_word(self, root, 256 + index, *entry);
        }
        Ok(root)
    }

    fn sibling(&self) -> Self {
        let space = self.next_space.get();
        self.next_space.set(space + 1);
        Self { space, ..self.clone() }
    }

    fn read_word(&self, table: u64, index: usize) -> u64 {
        assert!(self.states.table_level(table, self.space).is_some(), "read of {table:#x}, not a table of space {}", self.space);
        FakeMemory::read_word(self, table, index)
    }

    fn write_word(&self, table: u64, index: usize, value: u64) -> bool {
        let old = FakeMemory::read_word(self, table, index);
        if let Err(refusal) = self.states.write_entry(self.space, table, index, old, value) {
            panic!("entry {index} of {table:#x} := {value:#x} refused: {refusal:?}");
        }
        FakeMemory::write_word(self, table, index, value);
        true
    }

    fn write_words(&self, table: u64, first: usize, values: &[u64]) -> usize {
        let old: Vec<u64> = (0..values.len()).map(|offset| FakeMemory::read_word(self, table, first + offset)).collect();
        let (agreed, refusal) = self.states.write_entries(self.space, table, first, &old, values);
        if let Some(refusal) = refusal {
            panic!("entry {} of {table:#x} := {:#x} refused: {refusal:?}", first + agreed, values[agreed]);
        }
        for (offset, value) in values.iter().enumerate() {
            FakeMemory::write_word(self, table, first + offset, *value);
        }
        agreed
    }

    fn adopt(&self, frame: u64) -> u64 {
        let loose = FrameState::Loose { space: self.space };
        let adopted = self.states.change(frame, |state| matches!(state, FrameState::Free | FrameState::Held).then_some(loose));
        assert!(adopted.is_ok(), "adopting {frame:#x}: {adopted:?}");
        frame
    }

    fn reclaim(&self, frame: u64) -> Option<u64> {
        let reclaimed = match self.states.state(frame) {
            FrameState::Table { level: 3, .. } => self.states.reclaim_root(frame, self.space, || false),
            _ => self.states.reclaim(frame, self.space),
        };
        assert!(reclaimed.is_ok(), "reclaiming {frame:#x}: {reclaimed:?}");
        self.states.swap(frame, FrameState::Held, FrameState::Free).expect("held");
        Some(frame)
    }

    fn zero(&self, frame: u64) -> bool {
        assert!(self.is_loose(frame), "zeroing {frame:#x}, not loose in space {}", self.space);
        FakeMemory::zero(self, frame);
        true
    }

    fn copy_page(&self, table: u64, index: usize, to: u64) -> bool {
        assert!(self.is_loose(to), "copying into {to:#x}, not loose");
        assert_eq!(self.states.table_level(table, self.space), Some(0), "copying from a leaf of another table");
        let from = FakeMemory::read_word(self, table, index) & crate::entry::ADDRESS_MASK;
        let words = self.with_frame(from, |words| words.clone());
        self.with_frame(to, |target| target.copy_from_slice(&words));
        true
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
    type Frame = u64;
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
