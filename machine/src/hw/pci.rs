//! PCI: configuration space through the port pair 0xCF8 (address) and
//! 0xCFC (data), the functions found at boot, their base address registers
//! (BARs) as bounded windows — I/O ports, or memory mapped uncached — and
//! their legacy interrupt line routed through the I/O APIC to a vector.
//!
//! Discovery runs once on the bootstrap processor ([`discover`]); memory
//! BARs of virtio devices are mapped then, so windows never move after.
//!
//! Must never: let code above write a BAR (a window would then name memory
//! the device no longer decodes), hand out an access past a BAR's size, or
//! interleave two CPUs' address/data pairs (one lock for the port pair).
//!
//! Trust: a device with bus mastering reads and writes whatever physical
//! addresses its driver gives it. Without an IOMMU no type can bound that;
//! drivers above give devices only addresses of frames they own.

extern crate alloc;
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::cpu::{inb, inl, inw, outb, outl, outw};
use super::ioapic::LineMode;
use super::irq_lock::IrqLock;
use super::set_once::SetOnce;

const CONFIG_ADDRESS: u16 = 0xCF8;
const CONFIG_DATA: u16 = 0xCFC;
const COMMAND: u8 = 0x04;
const COMMAND_IO: u32 = 1 << 0;
const COMMAND_MEMORY: u32 = 1 << 1;
const HEADER_TYPE: u8 = 0x0E;
const BAR0: u8 = 0x10;
const BAR_COUNT: usize = 6;
const EXPANSION_ROM: u8 = 0x30;
const INTERRUPT: u8 = 0x3C;
/// Vendor of virtio devices (whose memory BARs are mapped at discovery).
pub const VIRTIO_VENDOR: u16 = 0x1AF4;
/// Largest memory BAR mapped at discovery.
const LARGEST_MAPPED_BAR: u64 = 1 << 20;
/// Where BARs that firmware left unassigned (qboot assigns none) are put:
/// ports above the PC's fixed ones, memory in the hole below the I/O APIC
/// that QEMU's `pc` machine leaves whatever its memory size.
const FREE_PORTS: core::ops::Range<u32> = 0xC000..0x1_0000;
const FREE_MEMORY: core::ops::Range<u64> = 0xE000_0000..0xFEC0_0000;

static PORTS: IrqLock<()> = IrqLock::new(());
static FUNCTIONS: SetOnce<Vec<PciFunction>> = SetOnce::new();

/// Where a function sits on the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciAddress {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl PciAddress {
    fn config_address(self, offset: u8) -> u32 {
        0x8000_0000 | u32::from(self.bus) << 16 | u32::from(self.device) << 11 | u32::from(self.function) << 8 | u32::from(offset & 0xFC)
    }
}

fn read_config(address: PciAddress, offset: u8) -> u32 {
    let _ports = PORTS.lock();
    outl(CONFIG_ADDRESS, address.config_address(offset));
    inl(CONFIG_DATA)
}

fn write_config(address: PciAddress, offset: u8, value: u32) {
    let _ports = PORTS.lock();
    outl(CONFIG_ADDRESS, address.config_address(offset));
    outl(CONFIG_DATA, value);
}

/// What a base address register decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bar {
    /// Nothing (or the upper half of a 64-bit BAR).
    Unused,
    /// I/O ports `[port, port + size)`.
    Io { port: u16, size: u16 },
    /// Memory `[physical, physical + size)`, mapped at `mapped` if it was.
    Memory { physical: u64, size: u64, mapped: Option<u64> },
}

/// One PCI function as discovery found it.
#[derive(Debug, Clone)]
pub struct PciFunction {
    pub address: PciAddress,
    pub vendor: u16,
    pub device: u16,
    /// Class, subclass and programming interface (`0xCCSSPP`).
    pub class: u32,
    pub subsystem_vendor: u16,
    pub subsystem: u16,
    /// Interrupt pin (1 = INTA#, 0 = none) and the line firmware routed it to.
    pub interrupt_pin: u8,
    pub interrupt_line: u8,
    bars: [Bar; BAR_COUNT],
    /// The I/O APIC input and mode of `interrupt_line`, if routable.
    interrupt: Option<(u32, LineMode)>,
}

/// A write to a register only the machine layer may write (a BAR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtectedRegister;

/// The function has no interrupt line the I/O APIC can deliver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoInterrupt;

impl PciFunction {
    /// The 32-bit configuration register at `offset` (rounded down to 4).
    pub fn read_config_u32(&self, offset: u8) -> u32 {
        read_config(self.address, offset)
    }

    /// Writes a configuration register other than a BAR or the expansion
    /// ROM's (those the machine layer owns: [`ProtectedRegister`]).
    pub fn write_config_u32(&self, offset: u8, value: u32) -> Result<(), ProtectedRegister> {
        let offset = offset & 0xFC;
        let bars = BAR0..BAR0 + 4 * BAR_COUNT as u8;
        if bars.contains(&offset) || offset == EXPANSION_ROM {
            return Err(ProtectedRegister);
        }
        write_config(self.address, offset, value);
        Ok(())
    }

    /// BAR `index` as discovery found it.
    pub fn bar(&self, index: usize) -> Bar {
        self.bars.get(index).copied().unwrap_or(Bar::Unused)
    }

    /// The I/O ports of BAR `index`, if it decodes ports.
    pub fn io_window(&self, index: usize) -> Option<IoWindow> {
        match self.bar(index) {
            Bar::Io { port, size } => Some(IoWindow { base: port, size }),
            _ => None,
        }
    }

    /// The memory of BAR `index`, if it decodes memory that was mapped.
    pub fn memory_window(&self, index: usize) -> Option<MemoryWindow> {
        match self.bar(index) {
            Bar::Memory { size, mapped: Some(virtual_address), .. } => Some(MemoryWindow { virtual_address, size }),
            _ => None,
        }
    }

    /// Delivers the function's legacy interrupt as `vector` to the
    /// bootstrap processor (handlers: [`super::trap::set_handler`]).
    pub fn route_interrupt(&self, vector: u8) -> Result<(), NoInterrupt> {
        let (global_interrupt, mode) = self.interrupt.ok_or(NoInterrupt)?;
        super::ioapic::route(global_interrupt, vector, super::apic::id(), mode);
        Ok(())
    }
}

/// The functions discovery found (empty before it ran).
pub fn functions() -> &'static [PciFunction] {
    FUNCTIONS.get().map_or(&[], Vec::as_slice)
}

/// A device's I/O ports: accesses inside `[0, size)` only.
#[derive(Debug, Clone, Copy)]
pub struct IoWindow {
    base: u16,
    size: u16,
}

/// An access outside a window, or misaligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfWindow;

impl IoWindow {
    fn port(&self, offset: u16, width: u16) -> Result<u16, OutOfWindow> {
        let end = offset.checked_add(width).ok_or(OutOfWindow)?;
        if end > self.size {
            return Err(OutOfWindow);
        }
        Ok(self.base + offset)
    }

    pub fn read_u8(&self, offset: u16) -> Result<u8, OutOfWindow> {
        Ok(inb(self.port(offset, 1)?))
    }

    pub fn read_u16(&self, offset: u16) -> Result<u16, OutOfWindow> {
        Ok(inw(self.port(offset, 2)?))
    }

    pub fn read_u32(&self, offset: u16) -> Result<u32, OutOfWindow> {
        Ok(inl(self.port(offset, 4)?))
    }

    pub fn write_u8(&self, offset: u16, value: u8) -> Result<(), OutOfWindow> {
        outb(self.port(offset, 1)?, value);
        Ok(())
    }

    pub fn write_u16(&self, offset: u16, value: u16) -> Result<(), OutOfWindow> {
        outw(self.port(offset, 2)?, value);
        Ok(())
    }

    pub fn write_u32(&self, offset: u16, value: u32) -> Result<(), OutOfWindow> {
        outl(self.port(offset, 4)?, value);
        Ok(())
    }
}

/// A device's registers in memory, mapped uncached: naturally aligned
/// accesses inside `[0, size)` only.
#[derive(Debug, Clone, Copy)]
pub struct MemoryWindow {
    virtual_address: u64,
    size: u64,
}

impl MemoryWindow {
    fn address(&self, offset: u64, width: u64) -> Result<u64, OutOfWindow> {
        let end = offset.checked_add(width).ok_or(OutOfWindow)?;
        if end > self.size || offset % width != 0 {
            return Err(OutOfWindow);
        }
        Ok(self.virtual_address + offset)
    }

    pub fn read_u8(&self, offset: u64) -> Result<u8, OutOfWindow> {
        let address = self.address(offset, 1)?;
        // SAFETY: (1) `address` lies inside this BAR's uncached mapping
        // (checked above), made at discovery and never unmapped; (2) it is
        // device memory, not Rust-visible memory, so a volatile access
        // aliases nothing.
        Ok(unsafe { (address as *const u8).read_volatile() })
    }

    pub fn read_u16(&self, offset: u64) -> Result<u16, OutOfWindow> {
        let address = self.address(offset, 2)?;
        // SAFETY: as in `read_u8`; the address is 2-aligned (checked).
        Ok(unsafe { (address as *const u16).read_volatile() })
    }

    pub fn read_u32(&self, offset: u64) -> Result<u32, OutOfWindow> {
        let address = self.address(offset, 4)?;
        // SAFETY: as in `read_u8`; the address is 4-aligned (checked).
        Ok(unsafe { (address as *const u32).read_volatile() })
    }

    pub fn write_u8(&self, offset: u64, value: u8) -> Result<(), OutOfWindow> {
        let address = self.address(offset, 1)?;
        // SAFETY: as in `read_u8`.
        unsafe { (address as *mut u8).write_volatile(value) };
        Ok(())
    }

    pub fn write_u16(&self, offset: u64, value: u16) -> Result<(), OutOfWindow> {
        let address = self.address(offset, 2)?;
        // SAFETY: as in `read_u16`.
        unsafe { (address as *mut u16).write_volatile(value) };
        Ok(())
    }

    pub fn write_u32(&self, offset: u64, value: u32) -> Result<(), OutOfWindow> {
        let address = self.address(offset, 4)?;
        // SAFETY: as in `read_u32`.
        unsafe { (address as *mut u32).write_volatile(value) };
        Ok(())
    }
}

/// Scans every bus, sizes the BARs and maps virtio devices' memory BARs
/// with `map` (physical, length → virtual address, or None when there is
/// no room), then publishes the list. `interrupt_of` gives the I/O APIC
/// input and mode of a legacy interrupt line. Bootstrap processor, once.
pub(crate) fn discover(map: &mut dyn FnMut(u64, u64) -> Option<u64>, interrupt_of: &dyn Fn(u8) -> (u32, LineMode)) {
    let mut found = Vec::new();
    let mut space = FreeSpace { next_port: FREE_PORTS.start, next_memory: FREE_MEMORY.start };
    for bus in 0..=255u8 {
        for device in 0..32u8 {
            let first = PciAddress { bus, device, function: 0 };
            if read_config(first, 0) & 0xFFFF == 0xFFFF {
                continue;
            }
            let functions = if read_config(first, HEADER_TYPE & 0xFC) >> 16 & 0x80 != 0 { 8 } else { 1 };
            for function in 0..functions {
                let address = PciAddress { bus, device, function };
                if let Some(found_function) = describe(address, &mut space, map, interrupt_of) {
                    found.push(found_function);
                }
            }
        }
    }
    let _ = FUNCTIONS.set(Box::leak(Box::new(found)));
}

/// Addresses not yet given to a BAR.
struct FreeSpace {
    next_port: u32,
    next_memory: u64,
}

impl FreeSpace {
    /// `size` bytes aligned to `size` (a BAR's size is a power of two).
    fn take_ports(&mut self, size: u32) -> Option<u16> {
        let start = self.next_port.checked_next_multiple_of(size)?;
        let end = start.checked_add(size)?;
        (end <= FREE_PORTS.end).then(|| {
            self.next_port = end;
            start as u16
        })
    }

    fn take_memory(&mut self, size: u64) -> Option<u64> {
        let start = self.next_memory.checked_next_multiple_of(size)?;
        let end = start.checked_add(size)?;
        (end <= FREE_MEMORY.end).then(|| {
            self.next_memory = end;
            start
        })
    }
}

fn describe(address: PciAddress, space: &mut FreeSpace, map: &mut dyn FnMut(u64, u64) -> Option<u64>, interrupt_of: &dyn Fn(u8) -> (u32, LineMode)) -> Option<PciFunction> {
    let identity = read_config(address, 0);
    if identity & 0xFFFF == 0xFFFF {
        return None;
    }
    let header = read_config(address, HEADER_TYPE & 0xFC) >> 16 & 0x7F;
    let class = read_config(address, 0x08) >> 8;
    let subsystem = read_config(address, 0x2C);
    let interrupt = read_config(address, INTERRUPT);
    let (interrupt_line, interrupt_pin) = (interrupt as u8, (interrupt >> 8) as u8);
    let vendor = identity as u16;
    let mut bars = [Bar::Unused; BAR_COUNT];
    if header == 0 {
        size_bars(address, space, &mut bars);
        if vendor == VIRTIO_VENDOR {
            map_memory_bars(&mut bars, map);
        }
    }
    let routable = interrupt_pin != 0 && interrupt_line != 0 && interrupt_line != 0xFF;
    Some(PciFunction {
        address,
        vendor,
        device: (identity >> 16) as u16,
        class,
        subsystem_vendor: subsystem as u16,
        subsystem: (subsystem >> 16) as u16,
        interrupt_pin,
        interrupt_line,
        bars,
        interrupt: routable.then(|| interrupt_of(interrupt_line)),
    })
}

/// Sizes each BAR by writing all ones, with decoding off meanwhile, and
/// gives the ones firmware left at 0 an address from `space`; then turns
/// on decoding of what the function has.
fn size_bars(address: PciAddress, space: &mut FreeSpace, bars: &mut [Bar; BAR_COUNT]) {
    let mut command = read_config(address, COMMAND);
    write_config(address, COMMAND, command & !(COMMAND_IO | COMMAND_MEMORY) & 0xFFFF);
    let mut index = 0;
    while index < BAR_COUNT {
        let offset = BAR0 + 4 * index as u8;
        let original = read_config(address, offset);
        write_config(address, offset, 0xFFFF_FFFF);
        let mask = read_config(address, offset);
        write_config(address, offset, original);
        if original & 1 == 1 {
            let size = (!(mask & 0xFFFF_FFFC)).wrapping_add(1) & 0xFFFF;
            let port = match original & 0xFFFC {
                0 if size != 0 => space.take_ports(size).inspect(|&port| write_config(address, offset, u32::from(port) | 1)),
                0 => None,
                assigned => Some(assigned as u16),
            };
            if let (Some(port), true) = (port, size != 0) {
                bars[index] = Bar::Io { port, size: size as u16 };
                command |= COMMAND_IO;
            }
            index += 1;
            continue;
        }
        let wide = (original >> 1) & 0b11 == 0b10;
        let (mut base, mut size_mask) = (u64::from(original & 0xFFFF_FFF0), u64::from(mask & 0xFFFF_FFF0) | 0xFFFF_FFFF_0000_0000);
        if wide && index + 1 < BAR_COUNT {
            let high_offset = offset + 4;
            let high = read_config(address, high_offset);
            write_config(address, high_offset, 0xFFFF_FFFF);
            let high_mask = read_config(address, high_offset);
            write_config(address, high_offset, high);
            base |= u64::from(high) << 32;
            size_mask = (size_mask & 0xFFFF_FFFF) | u64::from(high_mask) << 32;
        }
        let size = (!size_mask).wrapping_add(1);
        if base == 0 && size != 0 && mask != 0 {
            if let Some(assigned) = space.take_memory(size) {
                write_config(address, offset, assigned as u32 | (original & 0xF));
                if wide {
                    write_config(address, offset + 4, (assigned >> 32) as u32);
                }
                base = assigned;
            }
        }
        if base != 0 && size != 0 && mask != 0 {
            bars[index] = Bar::Memory { physical: base, size, mapped: None };
            command |= COMMAND_MEMORY;
        }
        index += if wide { 2 } else { 1 };
    }
    write_config(address, COMMAND, command & 0xFFFF);
}

fn map_memory_bars(bars: &mut [Bar; BAR_COUNT], map: &mut dyn FnMut(u64, u64) -> Option<u64>) {
    for bar in bars.iter_mut() {
        if let Bar::Memory { physical, size, mapped } = bar {
            if *size <= LARGEST_MAPPED_BAR && *physical % super::layout::PAGE_SIZE == 0 {
                *mapped = map(*physical, (*size).max(super::layout::PAGE_SIZE));
            }
        }
    }
}
