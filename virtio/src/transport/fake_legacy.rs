//! A legacy virtio PCI device's I/O BAR 0 in memory, for tests: feature
//! registers, queue select / size / page number, notify, status, ISR and
//! the device configuration after them. Test-only.

use super::RegistersByWidth;
use std::cell::RefCell;
use std::rc::Rc;
use std::vec::Vec;

#[derive(Default, Debug)]
pub(crate) struct LegacyState {
    pub(crate) offered: u32,
    pub(crate) driver_features: u32,
    pub(crate) selected: u16,
    /// (size, page number) per queue.
    pub(crate) queues: Vec<(u16, u32)>,
    pub(crate) status: u8,
    pub(crate) isr: u8,
    pub(crate) notified: Vec<u16>,
    /// Where the device configuration starts (0x14, or 0x18 with MSI-X).
    pub(crate) config_start: u32,
    pub(crate) device_config: Vec<u8>,
}

#[derive(Clone, Debug)]
pub(crate) struct FakeLegacy(pub(crate) Rc<RefCell<LegacyState>>);

impl FakeLegacy {
    fn read(&self, offset: u32, width: u32) -> u32 {
        let mut state = self.0.borrow_mut();
        let selected = usize::from(state.selected);
        let queue = state.queues.get(selected).copied().unwrap_or_default();
        match offset {
            0x00 => state.offered,
            0x04 => state.driver_features,
            0x08 => queue.1,
            0x0C => u32::from(queue.0),
            0x12 => u32::from(state.status),
            0x13 => core::mem::take(&mut state.isr).into(),
            _ if offset >= state.config_start => {
                let start = (offset - state.config_start) as usize;
                let bytes = &state.device_config[start..start + width as usize];
                bytes.iter().rev().fold(0, |value, byte| value << 8 | u32::from(*byte))
            }
            _ => panic!("fake legacy: read of unexpected offset {offset:#x}"),
        }
    }

    fn write(&self, offset: u32, value: u32) {
        let mut state = self.0.borrow_mut();
        let selected = usize::from(state.selected);
        match offset {
            0x04 => state.driver_features = value,
            0x08 => state.queues[selected].1 = value,
            0x0E => state.selected = value as u16,
            0x10 => state.notified.push(value as u16),
            0x12 if value == 0 => {
                state.status = 0;
                state.queues.iter_mut().for_each(|queue| queue.1 = 0);
            }
            0x12 => state.status = value as u8,
            _ => panic!("fake legacy: write of unexpected offset {offset:#x}"),
        }
    }
}

impl RegistersByWidth for FakeLegacy {
    fn read_width(&self, offset: u32, width: u32) -> u32 {
        self.read(offset, width)
    }
    fn write_width(&self, offset: u32, _width: u32, value: u32) {
        self.write(offset, value);
    }
}
