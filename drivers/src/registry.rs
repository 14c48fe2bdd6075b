//! The disks found at boot, named `vda`, `vdb`, … in bus order, and the
//! interrupt handler that serves them all.
//!
//! Must never route a disk's interrupt before the handler can find the
//! disk (a level-triggered line nobody acknowledges would fire forever).

use alloc::boxed::Box;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::set_once::SetOnce;
use virtio::pci::{identify, DeviceType, Identification};

use crate::pci_access::Config;
use crate::virtio_block::VirtioBlock;

static BLOCK_DEVICES: SetOnce<Vec<Arc<VirtioBlock>>> = SetOnce::new();

/// The disks [`probe`] started (none before it ran).
pub fn block_devices() -> &'static [Arc<VirtioBlock>] {
    BLOCK_DEVICES.get().map_or(&[], Vec::as_slice)
}

/// Starts every virtio block device the machine layer found, then routes
/// their interrupts. Once, at boot, with the scheduler running. Prints a
/// line per disk (and per disk it had to leave alone).
pub fn probe() {
    let mut disks = Vec::new();
    for function in machine::pci::functions() {
        let Identification::Virtio(identity) = identify(&Config(function)) else { continue };
        if identity.device_type != DeviceType::Block {
            continue;
        }
        let name = format!("vd{}", char::from(b'a' + (disks.len() as u8).min(25)));
        let at = function.address;
        match VirtioBlock::start(function, name) {
            Ok(disk) => {
                machine::println!(
                    "lamina: {}: virtio disk at {:02x}:{:02x}.{}, {} sectors ({} MiB){}{}",
                    disk.name, at.bus, at.device, at.function, disk.capacity_sectors(), disk.capacity_sectors() >> 11,
                    if disk.is_read_only() { ", read-only" } else { "" },
                    if disk.has_write_cache() { ", write cache flushed on request" } else { "" },
                );
                disks.push(Arc::new(disk));
            }
            Err(error) => machine::println!("lamina: virtio disk at {:02x}:{:02x}.{} left alone: {error:?}", at.bus, at.device, at.function),
        }
    }
    if disks.is_empty() || BLOCK_DEVICES.set(Box::leak(Box::new(disks))).is_err() {
        return;
    }
    for disk in block_devices() {
        let vector = machine::trap::IRQ_BASE + disk.function.interrupt_line;
        machine::trap::set_handler(vector, serve_interrupt);
        if disk.function.route_interrupt(vector).is_err() {
            machine::println!("lamina: {}: no interrupt line; completions are polled", disk.name);
        }
    }
}

/// Every disk's completions (disks may share a line, hence a vector).
fn serve_interrupt(_frame: &mut machine::TrapFrame) {
    for disk in block_devices() {
        disk.complete_ready();
    }
}
