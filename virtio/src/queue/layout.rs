//! Where a split virtqueue's three areas lie in physical memory, and the
//! address of every field in them (virtio 1.2 §2.7; the legacy layout of
//! §2.7.2 with the used ring on the next 4096-byte boundary).
//!
//! Must never: accept a layout whose areas are misaligned, overlap, or run
//! past the address space; after construction every field address is in
//! one of the areas, so the arithmetic below cannot overflow.

use super::LayoutError;

/// The largest split queue (§2.7: sizes are powers of two up to 32768).
pub const MAX_QUEUE_SIZE: u16 = 32768;
/// The legacy interface's queue alignment and page size for the PFN.
pub const LEGACY_ALIGNMENT: u64 = 4096;

const DESCRIPTOR_BYTES: u64 = 16;
const DESCRIPTOR_ALIGNMENT: u64 = 16;
const DRIVER_AREA_ALIGNMENT: u64 = 2;
const DEVICE_AREA_ALIGNMENT: u64 = 4;
/// `flags` and `idx`, before each ring.
const RING_HEADER_BYTES: u64 = 4;
/// `used_event` after the available ring, `avail_event` after the used.
const EVENT_FIELD_BYTES: u64 = 2;
const AVAILABLE_ENTRY_BYTES: u64 = 2;
const USED_ELEMENT_BYTES: u64 = 8;

/// Which interface's rules the layout follows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RingShape {
    /// One contiguous area from a 4096-aligned base (the only shape the
    /// legacy interface can describe: it takes one page number).
    Legacy,
    /// Three independent areas.
    Modern,
}

/// A validated placement of a queue of `size` entries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RingLayout {
    size: u16,
    descriptors: u64,
    driver_area: u64,
    device_area: u64,
    shape: RingShape,
}

impl RingLayout {
    /// The legacy layout of `size` entries from `base` (4096-aligned);
    /// it needs [`RingLayout::legacy_bytes`] bytes.
    pub fn legacy(size: u16, base: u64) -> Result<Self, LayoutError> {
        let total = Self::legacy_bytes(size)?;
        aligned(base, LEGACY_ALIGNMENT)?;
        base.checked_add(total).ok_or(LayoutError::PastAddressSpace)?;
        let descriptor_bytes = Self::descriptor_table_bytes(size);
        let device_offset = total - Self::device_area_bytes(size);
        Ok(Self {
            size,
            descriptors: base,
            driver_area: base + descriptor_bytes,
            device_area: base + device_offset,
            shape: RingShape::Legacy,
        })
    }

    /// Three separate areas (descriptors 16-aligned, driver area
    /// 2-aligned, device area 4-aligned), not overlapping.
    pub fn modern(size: u16, descriptors: u64, driver_area: u64, device_area: u64) -> Result<Self, LayoutError> {
        check_size(size)?;
        let areas = [
            (
                aligned(descriptors, DESCRIPTOR_ALIGNMENT)?,
                Self::descriptor_table_bytes(size),
            ),
            (
                aligned(driver_area, DRIVER_AREA_ALIGNMENT)?,
                Self::driver_area_bytes(size),
            ),
            (
                aligned(device_area, DEVICE_AREA_ALIGNMENT)?,
                Self::device_area_bytes(size),
            ),
        ];
        let mut ends = [0u64; 3];
        for (end, (start, length)) in ends.iter_mut().zip(areas) {
            *end = start.checked_add(length).ok_or(LayoutError::PastAddressSpace)?;
        }
        for first in 0..3 {
            for second in first + 1..3 {
                if areas[first].0 < ends[second] && areas[second].0 < ends[first] {
                    return Err(LayoutError::AreasOverlap);
                }
            }
        }
        Ok(Self {
            size,
            descriptors,
            driver_area,
            device_area,
            shape: RingShape::Modern,
        })
    }

    /// Bytes of the descriptor table for `size` entries.
    pub fn descriptor_table_bytes(size: u16) -> u64 {
        DESCRIPTOR_BYTES * u64::from(size)
    }

    /// Bytes of the driver area (available ring with `used_event`).
    pub fn driver_area_bytes(size: u16) -> u64 {
        RING_HEADER_BYTES + AVAILABLE_ENTRY_BYTES * u64::from(size) + EVENT_FIELD_BYTES
    }

    /// Bytes of the device area (used ring with `avail_event`).
    pub fn device_area_bytes(size: u16) -> u64 {
        RING_HEADER_BYTES + USED_ELEMENT_BYTES * u64::from(size) + EVENT_FIELD_BYTES
    }

    /// Bytes of the whole legacy layout for `size` entries.
    pub fn legacy_bytes(size: u16) -> Result<u64, LayoutError> {
        check_size(size)?;
        let before_used = Self::descriptor_table_bytes(size) + Self::driver_area_bytes(size);
        let used_offset = before_used.div_ceil(LEGACY_ALIGNMENT) * LEGACY_ALIGNMENT;
        Ok(used_offset + Self::device_area_bytes(size))
    }

    /// The number of entries.
    pub fn size(&self) -> u16 {
        self.size
    }

    /// The descriptor table's physical address.
    pub fn descriptor_table(&self) -> u64 {
        self.descriptors
    }

    /// The driver (available) area's physical address.
    pub fn driver_area(&self) -> u64 {
        self.driver_area
    }

    /// The device (used) area's physical address.
    pub fn device_area(&self) -> u64 {
        self.device_area
    }

    /// Which interface's rules the layout follows.
    pub fn shape(&self) -> RingShape {
        self.shape
    }

    /// The three areas as (start, length), for zeroing.
    pub(crate) fn areas(&self) -> [(u64, u64); 3] {
        [
            (self.descriptors, Self::descriptor_table_bytes(self.size)),
            (self.driver_area, Self::driver_area_bytes(self.size)),
            (self.device_area, Self::device_area_bytes(self.size)),
        ]
    }

    /// Descriptor `index` (below the size).
    pub(crate) fn descriptor(&self, index: u16) -> u64 {
        self.descriptors + DESCRIPTOR_BYTES * u64::from(index)
    }

    pub(crate) fn available_flags(&self) -> u64 {
        self.driver_area
    }

    pub(crate) fn available_index(&self) -> u64 {
        self.driver_area + 2
    }

    /// Available-ring entry `slot` (below the size).
    pub(crate) fn available_entry(&self, slot: u16) -> u64 {
        self.driver_area + RING_HEADER_BYTES + AVAILABLE_ENTRY_BYTES * u64::from(slot)
    }

    /// `used_event`: the driver wants an interrupt once the device's used
    /// index passes it (with `VIRTIO_F_EVENT_IDX`).
    pub(crate) fn used_event(&self) -> u64 {
        self.available_entry(self.size)
    }

    pub(crate) fn used_flags(&self) -> u64 {
        self.device_area
    }

    pub(crate) fn used_index(&self) -> u64 {
        self.device_area + 2
    }

    /// Used-ring element `slot` (below the size): `id` then `len`.
    pub(crate) fn used_element(&self, slot: u16) -> u64 {
        self.device_area + RING_HEADER_BYTES + USED_ELEMENT_BYTES * u64::from(slot)
    }

    /// `avail_event`: the device wants a notification once the available
    /// index passes it (with `VIRTIO_F_EVENT_IDX`).
    pub(crate) fn available_event(&self) -> u64 {
        self.used_element(self.size)
    }
}

fn check_size(size: u16) -> Result<(), LayoutError> {
    match size.is_power_of_two() && size <= MAX_QUEUE_SIZE {
        true => Ok(()),
        false => Err(LayoutError::BadSize { size }),
    }
}

fn aligned(address: u64, alignment: u64) -> Result<u64, LayoutError> {
    match address % alignment {
        0 => Ok(address),
        _ => Err(LayoutError::Misaligned { address }),
    }
}
