//! Host tests of the capability walk over fake configuration spaces: the
//! virtio structures and MSI/MSI-X, and lists that loop, point into the
//! header or run past configuration space.

use super::fake_config::FakeConfig;
use super::tests::device_with_bars;
use super::*;
/// The list QEMU gives a modern virtio-blk: MSI-X, then the five virtio
/// structures in BAR 4.
fn device_with_capabilities() -> FakeConfig {
    let config = device_with_bars();
    config.set_u8(0x34, 0x98);
    config.set_capability(0x98, 0x11, 0x84);
    config.set_u16(0x9A, 0x8001);
    config.set_u32(0x9C, 0x0000_0001);
    config.set_u32(0xA0, 0x0000_0801);
    config.set_virtio_capability(0x84, 0x70, 5, 0, 0, 0);
    config.set_virtio_capability(0x70, 0x60, 2, 4, 0x3000, 0x1000);
    config.set_u32(0x80, 4);
    config.set_virtio_capability(0x60, 0x50, 4, 4, 0x2000, 0x1000);
    config.set_virtio_capability(0x50, 0x40, 3, 4, 0x1000, 0x1000);
    config.set_virtio_capability(0x40, 0x00, 1, 4, 0x0000, 0x1000);
    config
}

#[test]
fn the_walk_finds_virtio_structures_and_msix() {
    let config = device_with_capabilities();
    let found = read_capabilities(&config).unwrap();
    assert_eq!(
        found.common,
        Some(StructureLocation {
            bar: 4,
            offset: 0,
            length: 0x1000
        })
    );
    assert_eq!(
        found.isr,
        Some(StructureLocation {
            bar: 4,
            offset: 0x1000,
            length: 0x1000
        })
    );
    assert_eq!(
        found.device,
        Some(StructureLocation {
            bar: 4,
            offset: 0x2000,
            length: 0x1000
        })
    );
    let notify = StructureLocation {
        bar: 4,
        offset: 0x3000,
        length: 0x1000,
    };
    assert_eq!(
        found.notify,
        Some(NotifyStructure {
            location: notify,
            offset_multiplier: 4
        })
    );
    assert_eq!(found.pci_access, Some(0x84));
    let msix = found.msix.unwrap();
    assert_eq!(
        (msix.offset, msix.table_size, msix.state),
        (0x98, 2, MsixState::Enabled)
    );
    assert_eq!(msix.table, MsixLocation { bar: 1, offset: 0 });
    assert_eq!(msix.pending_bits, MsixLocation { bar: 1, offset: 0x800 });
    assert_eq!(found.msi, None);
    assert!(found.has_modern_interface());
    let bars = probe_bars(&config).unwrap();
    assert!(found.common.unwrap().bar_in(&bars).is_ok());
    let too_long = StructureLocation {
        bar: 4,
        offset: 0x3000,
        length: 0x1001,
    };
    assert_eq!(too_long.bar_in(&bars), Err(PciError::StructureOutsideBar { bar: 4 }));
    let isr = found.isr.unwrap().start_in(&bars);
    assert_eq!(
        isr,
        Ok(StructureStart::Memory {
            physical: 0xFE_0000_1000
        })
    );
    let legacy_config = StructureLocation {
        bar: 0,
        offset: 0x14,
        length: 0x2C,
    };
    assert_eq!(legacy_config.start_in(&bars), Ok(StructureStart::Io { port: 0xC054 }));
    let unused = StructureLocation {
        bar: 2,
        offset: 0,
        length: 1,
    };
    assert_eq!(unused.bar_in(&bars), Err(PciError::StructureOutsideBar { bar: 2 }));
}

#[test]
fn a_function_without_a_capability_list_has_no_capabilities() {
    let config = device_with_capabilities();
    config.set_u16(0x06, 0);
    assert_eq!(read_capabilities(&config), Ok(Capabilities::default()));
}

#[test]
fn looping_capability_lists_end_in_an_error() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x34, 0x40);
    config.set_capability(0x40, 0x01, 0x40);
    assert_eq!(read_capabilities(&config), Err(PciError::CapabilityListLoops));
    config.set_capability(0x40, 0x01, 0x80);
    config.set_capability(0x80, 0x01, 0x43);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::CapabilityListLoops),
        "low bits masked: 0x43 is 0x40"
    );
}

#[test]
fn capability_pointers_into_the_header_or_past_the_end_are_errors() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x34, 0x3C);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::CapabilityPointerInHeader { pointer: 0x3C })
    );
    config.set_u8(0x34, 0xFC);
    config.set_capability(0xFC, 0x11, 0);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::CapabilityPastConfigSpace {
            offset: 0xFC,
            length: 12
        })
    );
    config.set_u8(0x34, 0xF8);
    config.set_capability(0xF8, 0x09, 0);
    config.set_u8(0xFA, 16);
    config.set_u8(0xFB, 1);
    config.set_u8(0xFC, 4);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::CapabilityPastConfigSpace {
            offset: 0xF8,
            length: 16
        })
    );
}

#[test]
fn short_or_overflowing_virtio_capabilities_are_errors() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x34, 0x40);
    config.set_virtio_capability(0x40, 0, 2, 4, 0, 0x100);
    config.set_u8(0x42, 16);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::VirtioCapabilityTooShort {
            offset: 0x40,
            length: 16
        })
    );
    config.set_virtio_capability(0x40, 0, 1, 4, 0xFFFF_FF00, 0x100);
    assert_eq!(
        read_capabilities(&config),
        Err(PciError::StructureOverflows { offset: 0x40 })
    );
}

#[test]
fn reserved_types_and_bars_are_ignored_and_the_first_instance_wins() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x34, 0x40);
    config.set_virtio_capability(0x40, 0x50, 9, 4, 0, 0x100);
    config.set_virtio_capability(0x50, 0x60, 1, 6, 0, 0x100);
    config.set_virtio_capability(0x60, 0x70, 1, 2, 0x10, 0x100);
    config.set_virtio_capability(0x70, 0x80, 1, 3, 0x20, 0x100);
    config.set_capability(0x80, 0x05, 0);
    config.set_u16(0x82, 0x0080);
    let found = read_capabilities(&config).unwrap();
    assert_eq!(
        found.common,
        Some(StructureLocation {
            bar: 2,
            offset: 0x10,
            length: 0x100
        })
    );
    assert_eq!(
        found.msi,
        Some(MsiCapability {
            offset: 0x80,
            control: 0x0080
        })
    );
    assert!(!found.has_modern_interface());
}
