//! What the layer needs from below: its page tables and pages, and a
//! source of frames. The kernel implements both (the machine layer's
//! checked `SpaceTables`; the frame allocator charged to a container);
//! host tests use `fake`.

/// Bytes of a page and of a frame.
pub const PAGE_SIZE: u64 = 4096;

/// A space's page tables and pages as the layer below keeps them. The
/// kernel's (`kernel-objects` over `machine::frame_access::SpaceTables`)
/// checks every call against the machine's record of each frame, so a bug
/// here cannot make a table point at a frame the space does not own, nor
/// free one that a table still names; host tests use `fake`.
///
/// Frames are named by physical address once the space has them: a
/// [`FrameMemory::Frame`] (an owned frame from the source) becomes the
/// space's by [`adopt`](FrameMemory::adopt) and goes back to the source by
/// [`reclaim`](FrameMemory::reclaim), which refuses a frame some entry
/// still names. An entry names a frame when it is present or carries bit
/// 11 (a page whose rights are `NONE` for now).
pub trait FrameMemory {
    /// An owned frame, outside every space.
    type Frame;
    /// Makes `frame` this (new) space's root: zeroed, with the kernel's
    /// half (entries 256..512) filled in. Its address, or the frame back.
    fn install_root(&mut self, frame: Self::Frame) -> Result<u64, Self::Frame>;
    /// Another, empty space's memory (a fork's child).
    fn sibling(&self) -> Self
    where
        Self: Sized;
    /// Word `index` (0..512) of page table `table` (0 for a table not the space's).
    fn read_word(&self, table: u64, index: usize) -> u64;
    /// Words `first..first + out.len()` of page table `table` (zeros for a
    /// table not the space's): what a walk over whole tables reads.
    fn read_words(&self, table: u64, first: usize, out: &mut [u64]) {
        for (offset, word) in out.iter_mut().enumerate() {
            *word = self.read_word(table, first + offset);
        }
    }
    /// Writes word `index` of page table `table`: for an intermediate
    /// table, an empty entry or one naming a table the space adopted and
    /// has not placed yet; for a leaf table, an empty entry or one naming
    /// an adopted frame or a mapped page. `false`: refused, nothing
    /// written (a bug of this layer).
    fn write_word(&self, table: u64, index: usize, value: u64) -> bool;
    /// [`write_word`](Self::write_word) for words `first..first +
    /// values.len()` of `table`, skipping those that already hold their
    /// value (what fork and destroy write, a leaf table at a time). How
    /// many, from `first`, were written: all, or up to the first refused.
    fn write_words(&self, table: u64, first: usize, values: &[u64]) -> usize {
        values.iter().enumerate().take_while(|&(offset, &value)| self.write_word(table, first + offset, value)).count()
    }
    /// Takes `frame` into the space (not yet in a table); its address.
    fn adopt(&self, frame: Self::Frame) -> u64;
    /// Takes the frame at `frame` out of the space for its source: one it
    /// adopted and never placed, a table no entry names any more (the root
    /// last), or a page no entry names. `None`: refused (still named).
    fn reclaim(&self, frame: u64) -> Option<Self::Frame>;
    /// Fills an adopted, not yet placed frame with zeroes.
    fn zero(&self, frame: u64) -> bool;
    /// Copies the page entry `index` of leaf table `table` names into the
    /// adopted, not yet placed frame `to`.
    fn copy_page(&self, table: u64, index: usize, to: u64) -> bool;
}

/// Where frames come from and go back to. The kernel's source charges the
/// address space's container, so `allocate` fails when either the quota or
/// memory is spent.
///
/// The frames a caller hands a space to map are typed, not addresses: a
/// [`FrameSource::Fresh`] is a frame its holder owns alone (the space
/// takes it over), a [`FrameSource::Shared`] one a shared-memory object
/// lends. The kernel's types can only be made by the code that owns the
/// frames, so no caller of [`crate::AddressSpace::map`] can name an
/// arbitrary physical frame; host tests use bare addresses.
pub trait FrameSource {
    /// An owned frame (the memory's [`FrameMemory::Frame`]).
    type Frame;
    /// A frame its holder owns alone, ready to be mapped.
    type Fresh: FreshFrame<Frame = Self::Frame>;
    /// A frame of a shared-memory object.
    type Shared: SharedFrame;
    /// A free frame (contents unspecified), or `None`.
    fn allocate(&self) -> Option<Self::Frame>;
    /// Gives back a frame `allocate` returned.
    fn free(&self, frame: Self::Frame);
}

/// A frame owned by one holder, which a space can take over.
pub trait FreshFrame {
    /// The owned frame it holds.
    type Frame;
    /// Its physical address.
    fn address(&self) -> u64;
    /// Gives the frame up to the space that maps it (which frees it when
    /// its last owner leaves); `None` when the handle holds none.
    fn into_frame(self) -> Option<Self::Frame>;
}

/// A frame of a shared-memory object, which spaces map as extra owners.
pub trait SharedFrame {
    /// Its physical address.
    fn address(&self) -> u64;
}

/// Host tests name frames by address.
impl FreshFrame for u64 {
    type Frame = u64;

    fn address(&self) -> u64 {
        *self
    }

    fn into_frame(self) -> Option<u64> {
        Some(self)
    }
}

impl SharedFrame for u64 {
    fn address(&self) -> u64 {
        *self
    }
}
