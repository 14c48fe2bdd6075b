//! The command register (which kinds of access a function answers and
//! whether it may master the bus) and the legacy INTx routing.
//!
//! Must never: write ones into the status register that shares the
//! command register's dword (its error bits clear when written with 1).

use super::ConfigSpace;
use core::ops::BitOr;

const COMMAND: u16 = 0x04;
const INTERRUPT_LINE_AND_PIN: u16 = 0x3C;

/// Bits of the command register.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Command(u16);

impl Command {
    /// Respond to I/O-space accesses (a legacy virtio BAR 0).
    pub const IO_SPACE: Self = Self(0x1);
    /// Respond to memory-space accesses (modern virtio BARs).
    pub const MEMORY_SPACE: Self = Self(0x2);
    /// Let the function start DMA (every virtqueue needs it).
    pub const BUS_MASTER: Self = Self(0x4);
    /// Turn off INTx assertions (when MSI or MSI-X is used).
    pub const INTX_DISABLE: Self = Self(0x400);

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The command with exactly these bits.
    pub const fn from_bits(bits: u16) -> Self {
        Self(bits)
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Command {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Reads the command register.
pub(crate) fn read_command(config: &impl ConfigSpace) -> Command {
    Command(config.read_u16(COMMAND))
}

/// Writes the command register; the status half of the dword gets zeros,
/// which leave its write-one-to-clear bits alone.
pub(crate) fn write_command(config: &impl ConfigSpace, command: Command) {
    config.write_u32(COMMAND, u32::from(command.0));
}

/// Sets `bits` in the command register, keeping the others.
pub fn enable(config: &impl ConfigSpace, bits: Command) {
    let current = read_command(config);
    write_command(config, current | bits);
}

/// Clears `bits` in the command register, keeping the others.
pub fn disable(config: &impl ConfigSpace, bits: Command) {
    let current = read_command(config);
    write_command(config, Command(current.0 & !bits.0));
}

/// The INTx pin a function uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum InterruptPin {
    /// The function uses no INTx pin.
    None,
    /// INTA#.
    A,
    /// INTB#.
    B,
    /// INTC#.
    C,
    /// INTD#.
    D,
    /// A reserved pin value.
    Reserved(u8),
}

/// The legacy interrupt routing firmware left in the header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LegacyInterrupt {
    /// The interrupt line (the PIC/IO-APIC input firmware routed the pin
    /// to; 0xFF for none).
    pub line: u8,
    /// The pin.
    pub pin: InterruptPin,
}

/// Reads the interrupt line and pin.
pub fn legacy_interrupt(config: &impl ConfigSpace) -> LegacyInterrupt {
    let dword = config.read_u32(INTERRUPT_LINE_AND_PIN);
    let pin = match (dword >> 8) as u8 {
        0 => InterruptPin::None,
        1 => InterruptPin::A,
        2 => InterruptPin::B,
        3 => InterruptPin::C,
        4 => InterruptPin::D,
        other => InterruptPin::Reserved(other),
    };
    LegacyInterrupt { line: dword as u8, pin }
}
