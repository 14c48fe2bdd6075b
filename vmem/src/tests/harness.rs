//! What the tests share: a world of fake memory, a frame pool and an owner
//! table, and a simulated MMU access that faults like the hardware.

use crate::fake::{FakeFrames, FakeMemory};
use crate::{Access, AddressSpace, Fault, FaultOutcome, OwnerTable, PAGE_SIZE};

pub const FIRST_FRAME: u64 = 0x10_0000;
pub const FRAMES: u64 = 4096;
pub const KERNEL_HALF: [u64; 256] = {
    let mut half = [0; 256];
    half[255] = 0x7777_7003;
    half
};

pub type Space<'o> = AddressSpace<'o, FakeMemory, FakeFrames>;

pub struct World {
    pub memory: FakeMemory,
    pub frames: FakeFrames,
    pub owners: OwnerTable,
}

impl World {
    pub fn new() -> Self {
        Self {
            memory: FakeMemory::new(FIRST_FRAME, FRAMES, KERNEL_HALF),
            frames: FakeFrames::new(FIRST_FRAME, FRAMES),
            owners: OwnerTable::new(FIRST_FRAME, FRAMES as usize).expect("owner table"),
        }
    }

    pub fn space(&self) -> Space<'_> {
        AddressSpace::new(crate::FrameMemory::sibling(&self.memory), self.frames.clone(), &self.owners).expect("a fresh space")
    }

    /// A fresh frame whose first word is `word`.
    pub fn frame_holding(&self, word: u64) -> u64 {
        use crate::FrameSource;
        let frame = self.frames.allocate().expect("a frame");
        self.memory.zero(frame);
        self.memory.write_word(frame, 0, word);
        frame
    }

    /// A fresh frame whose first word is `word`, as a shared object's page
    /// (which spaces map as more owners; the last one frees it).
    pub fn shared_frame_holding(&self, word: u64) -> u64 {
        let frame = self.frame_holding(word);
        self.memory.make_shared(frame);
        frame
    }

    /// Every frame of the pool is free, no frame has an owner, and the
    /// machine-layer record agrees.
    pub fn all_free(&self) -> bool {
        let frames = || (0..FRAMES).map(|index| FIRST_FRAME + index * PAGE_SIZE);
        self.frames.out() == 0
            && frames().all(|frame| self.owners.owners(frame) == 0)
            && frames().all(|frame| self.memory.state(frame) == machine::frame_states::FrameState::Free)
    }
}

/// A user access of the first word of the page at `address`, as the MMU
/// does it: allowed by the entry, or a fault the space resolves, then a
/// retry (a copy mapped read-only until its flush is carried out — here
/// at once — takes a second fault). Returns the word read or written.
pub fn user_access(space: &mut Space<'_>, address: u64, access: Access, value: Option<u64>) -> Result<u64, Fault> {
    for _ in 0..3 {
        if let Some(translation) = space.translate(address) {
            let hardware_allows = match access {
                Access::Read => true,
                Access::Write => translation.rights.write() && !translation.copy_on_write,
                Access::Execute => translation.rights.execute(),
            };
            if hardware_allows {
                let memory = space_memory(space);
                if let Some(value) = value {
                    memory.write_word(translation.frame, 0, value);
                }
                return Ok(memory.read_word(translation.frame, 0));
            }
        }
        match space.handle_fault(address, access)? {
            FaultOutcome::Spurious if space.translate(address).is_none() => return Err(Fault::Segmentation),
            _ => {}
        }
    }
    Err(Fault::Segmentation)
}

fn space_memory(space: &Space<'_>) -> FakeMemory {
    space.memory.clone()
}
