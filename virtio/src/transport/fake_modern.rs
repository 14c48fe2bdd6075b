//! A modern virtio PCI device's register blocks in memory, for tests: the
//! common configuration behaves as §4.1.4.3 says (feature selects, queue
//! select, size, enable, a reset that may take some status reads), the
//! notify block records doorbells, the ISR clears on read. Test-only.

use super::{NotifyRegion, Region, RegistersByWidth};
use crate::transport::{Features, ModernTransport};
use std::cell::RefCell;
use std::rc::Rc;
use std::vec::Vec;

#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct FakeQueue {
    pub(crate) maximum: u16,
    pub(crate) size: u16,
    pub(crate) enabled: u16,
    pub(crate) notify_off: u16,
    pub(crate) descriptors: u64,
    pub(crate) driver: u64,
    pub(crate) device: u64,
}

#[derive(Default, Debug)]
pub(crate) struct ModernState {
    pub(crate) offered: u64,
    /// Features the device accepts at FEATURES_OK; others clear it.
    pub(crate) acceptable: u64,
    pub(crate) driver_features: u64,
    device_select: u32,
    driver_select: u32,
    pub(crate) status: u8,
    /// Status reads after a reset that still show the old status.
    pub(crate) reset_delay: u32,
    resetting: u32,
    pub(crate) generation: u8,
    /// Bump the generation on every device-configuration read (a device
    /// whose configuration never settles).
    pub(crate) unsettled: bool,
    selected: u16,
    pub(crate) queues: Vec<FakeQueue>,
    pub(crate) doorbells: Vec<(u32, u16)>,
    pub(crate) isr: u8,
    pub(crate) device_config: Vec<u8>,
    pub(crate) status_writes: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    Common,
    Notify,
    Isr,
    Device,
}

/// A handle on one block of the shared fake device.
#[derive(Clone, Debug)]
pub(crate) struct FakeBlock {
    state: Rc<RefCell<ModernState>>,
    block: Block,
}

pub(crate) fn fake_modern(
    state: ModernState,
    notify_multiplier: u32,
) -> (ModernTransport<FakeBlock>, Rc<RefCell<ModernState>>) {
    let device_length = state.device_config.len() as u32;
    let state = Rc::new(RefCell::new(state));
    let block = |block| FakeBlock {
        state: state.clone(),
        block,
    };
    let transport = ModernTransport::new(
        Region {
            registers: block(Block::Common),
            length: 56,
        },
        NotifyRegion {
            region: Region {
                registers: block(Block::Notify),
                length: 0x1000,
            },
            offset_multiplier: notify_multiplier,
        },
        Region {
            registers: block(Block::Isr),
            length: 1,
        },
        Some(Region {
            registers: block(Block::Device),
            length: device_length,
        }),
    )
    .unwrap();
    (transport, state)
}

/// A device offering `offered` with `queues` queues of `maximum` entries.
pub(crate) fn modern_state(offered: Features, queues: u16, maximum: u16) -> ModernState {
    let queue = |index| FakeQueue {
        maximum,
        size: maximum,
        notify_off: index,
        ..FakeQueue::default()
    };
    ModernState {
        offered: offered.bits(),
        acceptable: offered.bits(),
        queues: (0..queues).map(queue).collect(),
        ..ModernState::default()
    }
}

impl ModernState {
    fn read_common(&mut self, offset: u32) -> u32 {
        let queue = self.queues.get(usize::from(self.selected)).copied().unwrap_or_default();
        match offset {
            0 => self.device_select,
            4 => match self.device_select {
                0 => self.offered as u32,
                1 => (self.offered >> 32) as u32,
                _ => 0,
            },
            18 => self.queues.len() as u32,
            20 => self.read_status(),
            21 => u32::from(self.generation),
            22 => u32::from(self.selected),
            24 => u32::from(queue.size),
            28 => u32::from(queue.enabled),
            30 => u32::from(queue.notify_off),
            _ => panic!("fake common config: read of unexpected offset {offset}"),
        }
    }

    fn read_status(&mut self) -> u32 {
        if self.resetting > 0 {
            self.resetting -= 1;
            return 0x0F;
        }
        u32::from(self.status)
    }

    fn write_common(&mut self, offset: u32, value: u32) {
        let selected = usize::from(self.selected);
        match offset {
            0 => self.device_select = value,
            8 => self.driver_select = value,
            12 if self.driver_select == 0 => {
                self.driver_features = self.driver_features & !0xFFFF_FFFF | u64::from(value)
            }
            12 => self.driver_features = self.driver_features & 0xFFFF_FFFF | u64::from(value) << 32,
            20 => self.write_status(value as u8),
            22 => self.selected = value as u16,
            24 => self.queues[selected].size = value as u16,
            28 => self.queues[selected].enabled = value as u16,
            32 | 36 => set_half(&mut self.queues[selected].descriptors, offset - 32, value),
            40 | 44 => set_half(&mut self.queues[selected].driver, offset - 40, value),
            48 | 52 => set_half(&mut self.queues[selected].device, offset - 48, value),
            _ => panic!("fake common config: write of unexpected offset {offset}"),
        }
    }

    fn write_status(&mut self, value: u8) {
        self.status_writes.push(value);
        if value == 0 {
            self.status = 0;
            self.resetting = self.reset_delay;
            self.driver_features = 0;
            self.queues
                .iter_mut()
                .for_each(|queue| (queue.enabled, queue.size) = (0, queue.maximum));
            return;
        }
        let accepts = self.driver_features & !self.acceptable == 0;
        self.status = match value & 0x08 != 0 && !accepts {
            true => value & !0x08,
            false => value,
        };
    }

    fn read_device(&mut self, offset: u32, width: u32) -> u32 {
        if self.unsettled {
            self.generation = self.generation.wrapping_add(1);
        }
        let start = offset as usize;
        let bytes = &self.device_config[start..start + width as usize];
        bytes.iter().rev().fold(0, |value, byte| value << 8 | u32::from(*byte))
    }
}

fn set_half(field: &mut u64, half: u32, value: u32) {
    *field = match half {
        0 => *field & !0xFFFF_FFFF | u64::from(value),
        _ => *field & 0xFFFF_FFFF | u64::from(value) << 32,
    };
}

impl FakeBlock {
    fn read(&self, offset: u32, width: u32) -> u32 {
        let mut state = self.state.borrow_mut();
        match self.block {
            Block::Common => state.read_common(offset),
            Block::Isr => core::mem::take(&mut state.isr).into(),
            Block::Device => state.read_device(offset, width),
            Block::Notify => panic!("fake notify block read"),
        }
    }

    fn write(&self, offset: u32, value: u32) {
        let mut state = self.state.borrow_mut();
        match self.block {
            Block::Common => state.write_common(offset, value),
            Block::Notify => state.doorbells.push((offset, value as u16)),
            _ => panic!("fake device: write to read-only block {:?}", self.block),
        }
    }
}

impl RegistersByWidth for FakeBlock {
    fn read_width(&self, offset: u32, width: u32) -> u32 {
        self.read(offset, width)
    }
    fn write_width(&self, offset: u32, _width: u32, value: u32) {
        self.write(offset, value);
    }
}
