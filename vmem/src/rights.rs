//! Page rights and the W^X rule.

use crate::VmError;

/// What user code may do with a page. Every mapped page is readable (x86
/// has no write-only or execute-only user pages); `NONE` marks a region
/// whose pages fault on every access (a guard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rights(u8);

impl Rights {
    /// No access at all.
    pub const NONE: Rights = Rights(0);
    /// Read.
    pub const READ: Rights = Rights(1);
    /// Read and write.
    pub const READ_WRITE: Rights = Rights(1 | 2);
    /// Read and execute.
    pub const READ_EXECUTE: Rights = Rights(1 | 4);

    /// Reading, writing and executing together, which [`Rights::new`]
    /// refuses (W^X): only for a guest's physical memory, mapped into the
    /// space whose tables are its nested page tables, where the guest's own
    /// page tables decide what it may execute ([`crate::AddressSpace::map_lent`]).
    pub const GUEST_MEMORY: Rights = Rights(1 | 2 | 4);

    /// Rights from `read`, `write`, `execute`; refused when they break W^X
    /// or ask for writing or execution without reading.
    pub fn new(read: bool, write: bool, execute: bool) -> Result<Rights, VmError> {
        if write && execute {
            return Err(VmError::WriteAndExecute);
        }
        if (write || execute) && !read {
            return Err(VmError::UnsupportedRights);
        }
        Ok(Rights(u8::from(read) | u8::from(write) << 1 | u8::from(execute) << 2))
    }

    /// Readable.
    pub fn read(self) -> bool {
        self.0 & 1 != 0
    }

    /// Writable.
    pub fn write(self) -> bool {
        self.0 & 2 != 0
    }

    /// Executable.
    pub fn execute(self) -> bool {
        self.0 & 4 != 0
    }

    /// The same rights without writing.
    pub fn without_write(self) -> Rights {
        Rights(self.0 & !2)
    }
}
