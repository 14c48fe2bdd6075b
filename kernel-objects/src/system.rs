//! Facts about the running system that the monitor and the tests report.

use alloc::string::String;

/// What boot established, kept for the monitor and the tests.
pub struct SystemFacts {
    /// Usable memory in the firmware's memory map.
    pub usable_bytes: u64,
    /// Memory the machine layer took for page tables, heap and stacks.
    pub machine_bytes: u64,
    /// Usable processors the firmware (MADT) lists.
    pub firmware_processors: usize,
    pub command_line: String,
    /// Free memory handed to the frame layer, in bytes.
    pub free_bytes: u64,
}
