//! The devices found at boot: disks named `vda`, `vdb`, … in bus order,
//! the first network card, and the interrupt handlers that serve them.
//!
//! Must never route a device's interrupt before the handler can find the
//! device (a level-triggered line nobody acknowledges would fire forever).

use alloc::boxed::Box;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;

use machine::set_once::SetOnce;
use virtio::pci::{identify, DeviceType, Identification};

use crate::pci_access::Config;
use crate::virtio_block::VirtioBlock;
use crate::virtio_net::VirtioNet;

static BLOCK_DEVICES: SetOnce<Vec<Arc<VirtioBlock>>> = SetOnce::new();
static NETWORK_CARD: SetOnce<Arc<VirtioNet>> = SetOnce::new();

/// The disks [`probe`] started (none before it ran).
pub fn block_devices() -> &'static [Arc<VirtioBlock>] {
    BLOCK_DEVICES.get().map_or(&[], Vec::as_slice)
}

/// The network card [`probe`] started, if the machine has one.
pub fn network_card() -> Option<&'static Arc<VirtioNet>> {
    NETWORK_CARD.get()
}

/// Starts every virtio block device and the first network card the
/// machine layer found, then routes their interrupts. Once, at boot, with
/// the scheduler running. Prints a line per device (and per device it had
/// to leave alone).
pub fn probe() {
    let mut disks = Vec::new();
    for function in machine::pci::functions() {
        let Identification::Virtio(identity) = identify(&Config(function)) else { continue };
        let at = function.address;
        match identity.device_type {
            DeviceType::Block => {
                let name = format!("vd{}", char::from(b'a' + (disks.len() as u8).min(25)));
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
            DeviceType::Network if NETWORK_CARD.get().is_none() => match VirtioNet::start(function) {
                Ok(card) => {
                    let mac = card.mac;
                    machine::println!(
                        "lamina: eth0: virtio network card at {:02x}:{:02x}.{}, address {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, mtu {}",
                        at.bus, at.device, at.function, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], card.mtu
                    );
                    let _ = NETWORK_CARD.set(Box::leak(Box::new(Arc::new(card))));
                }
                Err(error) => machine::println!("lamina: virtio network card at {:02x}:{:02x}.{} left alone: {error:?}", at.bus, at.device, at.function),
            },
            _ => {}
        }
    }
    if !disks.is_empty() && BLOCK_DEVICES.set(Box::leak(Box::new(disks))).is_ok() {
        for disk in block_devices() {
            route(disk.function, &disk.name);
        }
    }
    if let Some(card) = network_card() {
        route(card.function, "eth0");
    }
}

/// Routes `function`'s interrupt line to the handler of every device.
fn route(function: &machine::pci::PciFunction, name: &str) {
    let vector = machine::trap::IRQ_BASE + function.interrupt_line;
    machine::trap::set_handler(vector, serve_interrupt);
    if function.route_interrupt(vector).is_err() {
        machine::println!("lamina: {name}: no interrupt line; polled");
    }
}

/// Every device's completions (devices may share a line, hence a vector).
fn serve_interrupt(_frame: &mut machine::TrapFrame) {
    for disk in block_devices() {
        disk.complete_ready();
    }
    if let Some(card) = network_card() {
        card.serve_interrupt();
    }
}
