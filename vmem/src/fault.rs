//! Page-fault decisions: what an access needs and how a fault was resolved.

use crate::TlbFlush;

/// The kind of access that faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An instruction fetch.
    Execute,
}

/// How a fault was resolved; the access can be retried.
#[derive(Debug, PartialEq, Eq)]
pub enum FaultOutcome {
    /// A zeroed frame was mapped in a demand-zero region.
    DemandZero,
    /// A copy-on-write page was copied into a fresh frame: mapped
    /// writable when only the faulting CPU ever ran the space, else
    /// read-only until `flush` is carried out (the access then faults once
    /// more and takes the copy over).
    Copied {
        /// Where the old translation may still be cached.
        flush: TlbFlush,
    },
    /// A copy-on-write page had no other owner left: made writable in place.
    TookOver,
    /// The mapping already allows the access (another CPU resolved it, or
    /// a stale TLB entry): nothing to do.
    Spurious,
}
