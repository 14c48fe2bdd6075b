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
///
/// The frames a caller hands a space to map are typed, not addresses: a
/// [`FrameSource::Fresh`] is a frame its holder owns alone (the space
/// takes it over), a [`FrameSource::Shared`] one a shared-memory object
/// lends. The kernel's types can only be made by the code that owns the
/// frames, so no caller of [`crate::AddressSpace::map`] can name an
/// arbitrary physical frame; host tests use bare addresses.
pub trait FrameSource {
    /// A frame its holder owns alone, ready to be mapped.
    type Fresh: FreshFrame;
    /// A frame of a shared-memory object.
    type Shared: SharedFrame;
    /// A free, page-aligned frame (contents unspecified), or `None`.
    fn allocate(&self) -> Option<u64>;
    /// Gives back a frame `allocate` returned.
    fn free(&self, frame: u64);
}

/// A frame owned by one holder, which a space can take over.
pub trait FreshFrame {
    /// Its physical address.
    fn address(&self) -> u64;
    /// Gives the frame up to the space that mapped it (which frees it when
    /// its last owner leaves); its holder must not free it any more.
    fn give_to_space(self);
}

/// A frame of a shared-memory object, which spaces map as extra owners.
pub trait SharedFrame {
    /// Its physical address.
    fn address(&self) -> u64;
}

/// Host tests name frames by address.
impl FreshFrame for u64 {
    fn address(&self) -> u64 {
        *self
    }

    fn give_to_space(self) {}
}

impl SharedFrame for u64 {
    fn address(&self) -> u64 {
        *self
    }
}
