//! What the layer needs from below: access to the frames it owns, and a
//! source of frames. The kernel implements both (machine layer's direct
//! map; the frame allocator charged to a container); host tests use
//! `fake`.

/// Bytes of a page and of a frame.
pub const PAGE_SIZE: u64 = 4096;

/// Reads and writes frames the address space owns (page tables and user
/// pages), by physical address.
pub trait FrameMemory {
    /// Word `index` (0..512) of `frame`.
    fn read_word(&self, frame: u64, index: usize) -> u64;
    /// Writes word `index` (0..512) of `frame`.
    fn write_word(&self, frame: u64, index: usize, value: u64);
    /// Fills `frame` with zeroes.
    fn zero(&self, frame: u64);
    /// Copies the whole of frame `from` into frame `to`.
    fn copy(&self, from: u64, to: u64);
}

/// Where frames come from and go back to. The kernel's source charges the
/// address space's container, so `allocate` fails when either the quota or
/// memory is spent.
pub trait FrameSource {
    /// A free, page-aligned frame (contents unspecified), or `None`.
    fn allocate(&self) -> Option<u64>;
    /// Gives back a frame `allocate` returned.
    fn free(&self, frame: u64);
}
