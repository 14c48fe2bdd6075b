//! What can be wrong with a function's configuration space. Every value a
//! device reports is checked; none of these is a kernel bug.

/// Why the configuration space of a function could not be used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PciError {
    /// A capability pointer points into the standard header (below 0x40).
    CapabilityPointerInHeader {
        /// The pointer, low two bits masked off.
        pointer: u8,
    },
    /// The capability list has more than
    /// [`CAPABILITY_HOPS_LIMIT`](crate::pci::CAPABILITY_HOPS_LIMIT) entries:
    /// it loops.
    CapabilityListLoops,
    /// A capability would run past the end of configuration space.
    CapabilityPastConfigSpace {
        /// Where the capability starts.
        offset: u8,
        /// How many bytes it needs.
        length: u16,
    },
    /// A virtio capability's `cap_len` is too small for its `cfg_type`.
    VirtioCapabilityTooShort {
        /// Where the capability starts.
        offset: u8,
        /// Its `cap_len`.
        length: u8,
    },
    /// A virtio structure's offset plus length overflows 32 bits.
    StructureOverflows {
        /// Where the capability starts.
        offset: u8,
    },
    /// A BAR index past the sixth.
    NoSuchBar {
        /// The index asked for.
        index: u8,
    },
    /// The BAR is not implemented.
    BarUnused {
        /// The index asked for.
        index: u8,
    },
    /// The BAR is the upper half of the 64-bit BAR below it.
    BarIsUpperHalf {
        /// The index asked for.
        index: u8,
    },
    /// A 64-bit memory BAR in the last slot has no upper half.
    BarUpperHalfMissing {
        /// The BAR's index.
        index: u8,
    },
    /// A memory BAR with a reserved type (the "below 1 MiB" or 0b11 type).
    BarTypeReserved {
        /// The BAR's index.
        index: u8,
    },
    /// A BAR's region wraps around its address space (or the 64 KiB of
    /// I/O ports).
    BarPastAddressSpace {
        /// The BAR's index.
        index: u8,
    },
    /// The function's header is not the general (type 0) layout, which is
    /// the only one with six BARs.
    NotGeneralHeader,
    /// A virtio structure lies in a BAR that is unused or too small for it.
    StructureOutsideBar {
        /// The BAR it names.
        bar: u8,
    },
}
