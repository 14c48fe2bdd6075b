//! Why an operation was refused, and why a fault could not be resolved.

/// An address-space operation refused; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmError {
    /// Writable and executable at once (W^X).
    WriteAndExecute,
    /// Write or execute without read, which x86 user pages cannot express.
    UnsupportedRights,
    /// An address or length not a multiple of the page size.
    Misaligned,
    /// A range reaching outside the user half, or empty.
    OutOfRange,
    /// The page is mapped already.
    AlreadyMapped,
    /// The page is not mapped.
    NotMapped,
    /// No frame for a page or a page table (memory or quota spent).
    OutOfMemory,
    /// A frame handed to `map` that the owner table does not cover.
    UnknownFrame,
}

/// A page fault the address space cannot resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No mapping or region there, or the access is not allowed
    /// (SIGSEGV for user code).
    Segmentation,
    /// Resolving it needs a frame and none is left (the faulting process
    /// is killed with SIGKILL, as Linux's OOM killer ends a lone hog).
    OutOfMemory,
    /// A copy-on-write page cannot be copied or taken over yet: a flush
    /// this space handed out is still being carried out. Try again once
    /// it is (the access itself was allowed).
    Busy,
}
