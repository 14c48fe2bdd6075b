//! Host tests of the PCI logic over fake configuration spaces: identity,
//! BAR sizing, the command register and the bus scan (the capability walk
//! has its own file).

use super::fake_config::FakeConfig;
use super::*;
use std::collections::BTreeMap;
use std::vec::Vec;

#[test]
fn identify_tells_transitional_from_modern_and_others() {
    let absent = FakeConfig::new();
    absent.set_u32(0, u32::MAX);
    assert_eq!(identify(&absent), Identification::Absent);
    let transitional = FakeConfig::virtio(0x1001, 2);
    let expected = VirtioIdentity {
        device_id: 0x1001,
        interface: Interface::Transitional,
        device_type: DeviceType::Block,
        revision: 0,
    };
    assert_eq!(identify(&transitional), Identification::Virtio(expected));
    let modern = FakeConfig::virtio(0x1041, 0);
    modern.set_u8(0x08, 1);
    let expected = VirtioIdentity {
        device_id: 0x1041,
        interface: Interface::Modern,
        device_type: DeviceType::Network,
        revision: 1,
    };
    assert_eq!(identify(&modern), Identification::Virtio(expected));
    let console = FakeConfig::virtio(0x1043, 0);
    assert!(matches!(
        identify(&console),
        Identification::Virtio(VirtioIdentity {
            device_type: DeviceType::Console,
            ..
        })
    ));
    let odd_type = FakeConfig::virtio(0x1003, 99);
    assert!(matches!(
        identify(&odd_type),
        Identification::Virtio(VirtioIdentity {
            device_type: DeviceType::Other(99),
            ..
        })
    ));
    let shared_memory = FakeConfig::virtio(0x1110, 0);
    assert_eq!(
        identify(&shared_memory),
        Identification::NotVirtio {
            vendor: 0x1AF4,
            device: 0x1110
        }
    );
    let bridge = FakeConfig::virtio(0x1001, 2);
    bridge.set_u8(0x0E, 0x01);
    assert!(matches!(identify(&bridge), Identification::NotVirtio { .. }));
    let intel = FakeConfig::new();
    intel.set_u16(0, 0x8086);
    intel.set_u16(2, 0x1001);
    assert_eq!(
        identify(&intel),
        Identification::NotVirtio {
            vendor: 0x8086,
            device: 0x1001
        }
    );
}

#[test]
fn header_type_reports_the_multi_function_bit() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x0E, 0x80);
    assert_eq!(
        header_type(&config),
        HeaderType {
            layout: HeaderLayout::General,
            functions: FunctionKind::MultiFunction
        }
    );
    config.set_u8(0x0E, 0x7F);
    assert_eq!(header_type(&config).layout, HeaderLayout::Reserved(0x7F));
}

pub(super) fn device_with_bars() -> FakeConfig {
    let mut config = FakeConfig::virtio(0x1001, 2);
    config.set_u16(0x04, 0x0007);
    config.set_bar(0, 0xC041, 0x40);
    config.set_bar(1, 0xFEBD_1000, 0x1000);
    config.set_bar(4, 0x0000_000C, 0x4000);
    config.set_bar_upper(5, 0x0000_00FE, 0x4000);
    config
}

#[test]
fn bars_are_decoded_sized_and_restored() {
    let config = device_with_bars();
    let bars = probe_bars(&config).unwrap();
    assert_eq!(
        bars.get(0),
        Some(Bar::Io {
            port: 0xC040,
            size: 0x40
        })
    );
    let bar1 = Bar::Memory {
        address: 0xFEBD_1000,
        size: 0x1000,
        addressing: Addressing::Bits32,
        prefetchable: Prefetchable::No,
    };
    assert_eq!(bars.get(1), Some(bar1));
    assert_eq!(bars.slot(2), BarSlot::Unused);
    let bar4 = Bar::Memory {
        address: 0xFE_0000_0000,
        size: 0x4000,
        addressing: Addressing::Bits64,
        prefetchable: Prefetchable::Yes,
    };
    assert_eq!(bars.get(4), Some(bar4));
    assert_eq!(bars.slot(5), BarSlot::UpperHalf);
    assert_eq!(bars.slot(6), BarSlot::Invalid(PciError::NoSuchBar { index: 6 }));
    assert_eq!(probe_bar(&config, 5), Err(PciError::BarIsUpperHalf { index: 5 }));
    assert_eq!(probe_bar(&config, 3), Err(PciError::BarUnused { index: 3 }));
    assert_eq!(
        probe_bar(&config, 0),
        Ok(Bar::Io {
            port: 0xC040,
            size: 0x40
        })
    );
    assert_eq!(config.read_u32(0x10), 0xC041, "BAR 0 restored");
    assert_eq!(config.read_u32(0x20), 0x0000_000C, "BAR 4 restored");
    assert_eq!(config.read_u32(0x24), 0xFE, "BAR 5 restored");
    let writes = config.writes.borrow();
    assert_eq!(
        writes.first(),
        Some(&(0x04, 0x0004)),
        "decoding off first, bus mastering kept"
    );
    assert_eq!(writes.last(), Some(&(0x04, 0x0007)), "command restored last");
}

#[test]
fn odd_bars_are_reported_invalid_not_trusted() {
    let mut config = FakeConfig::virtio(0x1001, 2);
    config.set_bar(0, 0x0000_0002, 0x1000);
    config.set_bar(1, 0x1_0001, 0x100);
    config.set_bar(5, 0x0000_0004, 0x1000);
    let bars = probe_bars(&config).unwrap();
    assert_eq!(bars.slot(0), BarSlot::Invalid(PciError::BarTypeReserved { index: 0 }));
    assert_eq!(
        bars.slot(1),
        BarSlot::Invalid(PciError::BarPastAddressSpace { index: 1 })
    );
    assert_eq!(
        bars.slot(5),
        BarSlot::Invalid(PciError::BarUpperHalfMissing { index: 5 })
    );
    let bridge = FakeConfig::virtio(0x1001, 2);
    bridge.set_u8(0x0E, 1);
    assert_eq!(probe_bars(&bridge), Err(PciError::NotGeneralHeader));
}

#[test]
fn enable_sets_command_bits_and_writes_zero_into_status() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u16(0x04, 0x0400);
    config.set_u16(0x06, 0xF910);
    enable(&config, Command::IO_SPACE | Command::BUS_MASTER);
    assert_eq!(config.writes.borrow().last(), Some(&(0x04, 0x0405)));
    disable(&config, Command::INTX_DISABLE);
    assert_eq!(config.writes.borrow().last(), Some(&(0x04, 0x0005)));
    assert!(Command::from_bits(0x0005).contains(Command::BUS_MASTER));
}

#[test]
fn legacy_interrupt_reads_line_and_pin() {
    let config = FakeConfig::virtio(0x1001, 2);
    config.set_u8(0x3C, 11);
    config.set_u8(0x3D, 1);
    assert_eq!(
        legacy_interrupt(&config),
        LegacyInterrupt {
            line: 11,
            pin: InterruptPin::A
        }
    );
    config.set_u8(0x3D, 9);
    assert_eq!(legacy_interrupt(&config).pin, InterruptPin::Reserved(9));
}

/// Functions by address; the rest read all ones.
struct FakeBus {
    functions: BTreeMap<(u8, u8, u8), FakeConfig>,
    absent: FakeConfig,
}

impl PciBus for FakeBus {
    type Function<'a> = &'a FakeConfig;
    fn function(&self, address: PciAddress) -> &FakeConfig {
        let key = (address.bus(), address.device(), address.function());
        self.functions.get(&key).unwrap_or(&self.absent)
    }
}

#[test]
fn scan_finds_virtio_functions_and_honours_the_multi_function_bit() {
    let absent = FakeConfig::new();
    absent.set_u32(0, u32::MAX);
    let mut functions = BTreeMap::new();
    functions.insert((0, 3, 0), FakeConfig::virtio(0x1001, 2));
    let host_bridge = FakeConfig::new();
    host_bridge.set_u16(0, 0x8086);
    host_bridge.set_u8(0x0E, 0x80);
    functions.insert((0, 4, 0), host_bridge);
    functions.insert((0, 4, 2), FakeConfig::virtio(0x1041, 0));
    functions.insert((0, 5, 0), FakeConfig::virtio(0x1043, 0));
    functions.insert((0, 5, 1), FakeConfig::virtio(0x1043, 0));
    functions.insert((0, 6, 3), FakeConfig::virtio(0x1042, 0));
    functions.insert((7, 31, 0), FakeConfig::virtio(0x1042, 0));
    let bus = FakeBus { functions, absent };
    let found: Vec<_> = scan(&bus).iter().map(|d| (d.address, d.identity.device_type)).collect();
    let at = |b, d, f| PciAddress::new(b, d, f).unwrap();
    let expected = [
        (at(0, 3, 0), DeviceType::Block),
        (at(0, 4, 2), DeviceType::Network),
        (at(0, 5, 0), DeviceType::Console),
        (at(7, 31, 0), DeviceType::Block),
    ];
    assert_eq!(
        found, expected,
        "5.1 is a copy of a single-function device; 6.3 has no function 0"
    );
    assert_eq!(PciAddress::new(0, 32, 0), None);
    assert_eq!(PciAddress::new(0, 0, 8), None);
}
