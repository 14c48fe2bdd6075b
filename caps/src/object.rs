//! Objects as the capability layer sees them: a kind, a global key, the
//! kernel's own handle to the object, and for memory a byte-granular view.
//! The layer never touches the objects themselves: undoing a capability's
//! effects (unmapping, closing, stopping) is its caller's job, told through
//! [`Removed`](crate::Removed) records.

/// The kinds of kernel objects a capability can name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub enum ObjectKind {
    /// A range of physical memory (a run of frames), viewed byte-granularly.
    Memory = 1,
    /// A user address space.
    AddressSpace = 2,
    /// A thread.
    Thread = 3,
    /// A quota container.
    Container = 4,
    /// A synchronous IPC endpoint.
    Endpoint = 5,
    /// A process: its capability space. Write right: delegate into it;
    /// read right: obtain what it offers.
    Process = 6,
    /// An open file.
    File = 7,
    /// One end of a pipe.
    Pipe = 8,
    /// A socket.
    Socket = 9,
}

impl ObjectKind {
    /// Every kind, in number order.
    pub const ALL: [Self; 9] = [
        Self::Memory,
        Self::AddressSpace,
        Self::Thread,
        Self::Container,
        Self::Endpoint,
        Self::Process,
        Self::File,
        Self::Pipe,
        Self::Socket,
    ];

    /// The kind with ABI number `number`, if there is one.
    pub fn from_number(number: u64) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| *kind as u64 == number)
    }
}

/// The name of an object that any kernel of the system could use one day
/// (DESIGN.md "Multikernel"): the group whose kernel made it, the process
/// that had it made, its kind, and an id unique within the group.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct GlobalKey {
    /// The kernel group that owns the object.
    pub group: u16,
    /// The process (capability space id) that created it.
    pub creator: u32,
    /// What it is.
    pub kind: ObjectKind,
    /// Its id within the group; never reused.
    pub object: u64,
}

/// A byte range of an object that a capability lets its holder reach.
/// Memory capabilities can be narrowed to any sub-range when derived;
/// other kinds keep the whole object (`0..size`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct View {
    /// First byte, from the start of the object.
    pub offset: u64,
    /// Number of bytes.
    pub length: u64,
}

impl View {
    /// The sub-range `offset..offset + length` of this view (offsets
    /// relative to the view), if it lies inside it.
    pub fn narrow(self, offset: u64, length: u64) -> Option<Self> {
        let end = offset.checked_add(length)?;
        if end > self.length {
            return None;
        }
        Some(Self { offset: self.offset + offset, length })
    }
}

/// Where the holder has put a capability to use, so that dropping or
/// revoking it can undo that: two words the kernel chooses (for memory:
/// the address space's key id and the first virtual address mapped).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct UseSite {
    /// Where (e.g. an address space).
    pub place: u64,
    /// What there (e.g. a virtual address).
    pub detail: u64,
}

/// An object's record in the database: its key, the kernel's handle and
/// size, and how many capabilities name it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ObjectRecord {
    pub(crate) key: GlobalKey,
    pub(crate) handle: u64,
    pub(crate) size: u64,
    pub(crate) capabilities: u32,
}

/// What the kernel needs to know of an object named by a capability.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ObjectInfo {
    /// Its global key (kind included).
    pub key: GlobalKey,
    /// The kernel's own handle to it (frame number, thread id, …).
    pub handle: u64,
    /// Its size in bytes (memory), else 0.
    pub size: u64,
}

impl ObjectInfo {
    /// The object's kind.
    pub fn kind(&self) -> ObjectKind {
        self.key.kind
    }
}
