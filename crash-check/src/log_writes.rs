//! Reading the log QEMU's `blklogwrites` block driver keeps of a disk:
//! the dm-log-writes format (Linux's `drivers/md/dm-log-writes.c`), one
//! entry per write, flush or discard in the order the requests finished.
//!
//! Layout, every field little-endian, in units of the log's sector size:
//! sector 0 holds the super block (magic `0x6a736677736872`, version 1,
//! the entry count, the sector size); each entry is one sector holding
//! its header (`sector`, `nr_sectors`, `flags`, `data_len`, 8 bytes each)
//! followed, for a write, by its `nr_sectors` sectors of data.
//!
//! Must refuse a log it cannot read whole (an error, never a panic and
//! never a shorter list of events that would make crash states look
//! fine).

use crate::{Event, UNIT};

/// The super block's magic number.
pub const MAGIC: u64 = 0x6a73_6677_7368_72;
/// The only format version there is.
pub const VERSION: u64 = 1;
/// Entry flags.
pub const FLUSH: u64 = 1 << 0;
pub const FUA: u64 = 1 << 1;
pub const DISCARD: u64 = 1 << 2;
pub const MARK: u64 = 1 << 3;
pub const METADATA: u64 = 1 << 4;

/// The disk sector `Event`s count in.
const DISK_SECTOR: u64 = 512;

/// Why a log cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogError {
    /// Shorter than its super block.
    NoSuperBlock,
    /// Not dm-log-writes' magic number.
    BadMagic(u64),
    /// A version other than 1.
    BadVersion(u64),
    /// A sector size that is not a power of two from 512 to 64 KiB.
    BadSectorSize(u32),
    /// Entry `index` runs past the end of the log.
    Truncated { index: u64 },
    /// Entry `index` has flags this reader does not know.
    UnknownFlags { index: u64, flags: u64 },
    /// Entry `index` is absurdly large or addresses beyond 2^64 bytes.
    Oversized { index: u64 },
}

impl std::fmt::Display for LogError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogError::NoSuperBlock => write!(formatter, "the log is shorter than its super block"),
            LogError::BadMagic(magic) => write!(formatter, "not a dm-log-writes log (magic {magic:#x})"),
            LogError::BadVersion(version) => write!(formatter, "log version {version}, not 1"),
            LogError::BadSectorSize(size) => write!(formatter, "log sector size {size}"),
            LogError::Truncated { index } => write!(formatter, "entry {index} runs past the end of the log"),
            LogError::UnknownFlags { index, flags } => write!(formatter, "entry {index} has unknown flags {flags:#x}"),
            LogError::Oversized { index } => write!(formatter, "entry {index} is too large"),
        }
    }
}

/// What a log held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log {
    /// Writes (in [`UNIT`] pieces, in disk sectors of 512 bytes) and
    /// flushes, in order.
    pub events: Vec<Event>,
    /// Discards seen (the model has no event for them: a discarded range
    /// may read back as anything, which no ext4 state depends on).
    pub discards: usize,
    /// Writes the guest marked FUA (logged as plain writes: no earlier
    /// write is made durable by one).
    pub fua_writes: usize,
}

fn field(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("eight bytes"))
}

/// Reads a whole log. Reads `nr_entries` entries when the super block's
/// count is current; QEMU updates it at every flush and at close, so
/// entries after the last update (a guest that never flushed again) are
/// read too, up to the first sector that is not a valid entry header.
pub fn parse(log: &[u8]) -> Result<Log, LogError> {
    if log.len() < 32 {
        return Err(LogError::NoSuperBlock);
    }
    let magic = field(log, 0);
    if magic != MAGIC {
        return Err(LogError::BadMagic(magic));
    }
    let version = field(log, 8);
    if version != VERSION {
        return Err(LogError::BadVersion(version));
    }
    let counted = field(log, 16);
    let sector_size = u32::from_le_bytes(log[24..28].try_into().expect("four bytes"));
    if !sector_size.is_power_of_two() || !(512..=65536).contains(&sector_size) {
        return Err(LogError::BadSectorSize(sector_size));
    }
    let sector_size = u64::from(sector_size);
    let mut parsed = Log::default();
    let mut offset = sector_size;
    let mut index = 0u64;
    loop {
        let Some(header) = usize::try_from(offset).ok().and_then(|start| log.get(start..start + 32)) else {
            if index < counted {
                return Err(LogError::Truncated { index });
            }
            return Ok(parsed);
        };
        let (sector, sectors, flags) = (field(header, 0), field(header, 8), field(header, 16));
        if index >= counted && !plausible(sector, sectors, flags) {
            return Ok(parsed);
        }
        if flags & !(FLUSH | FUA | DISCARD | MARK | METADATA) != 0 {
            return Err(LogError::UnknownFlags { index, flags });
        }
        let data_bytes = if flags & (DISCARD | MARK) != 0 || sectors == 0 {
            if flags & MARK != 0 { field(header, 24).div_ceil(sector_size) * sector_size } else { 0 }
        } else {
            sectors.checked_mul(sector_size).ok_or(LogError::Oversized { index })?
        };
        let data_start = offset + sector_size;
        let data_end = data_start.checked_add(data_bytes).ok_or(LogError::Oversized { index })?;
        if data_end > log.len() as u64 {
            return Err(LogError::Truncated { index });
        }
        if flags & DISCARD != 0 {
            parsed.discards += 1;
        } else if flags & MARK == 0 && data_bytes > 0 {
            parsed.fua_writes += usize::from(flags & FUA != 0);
            let first = sector.checked_mul(sector_size / DISK_SECTOR).ok_or(LogError::Oversized { index })?;
            let data = &log[data_start as usize..data_end as usize];
            for (piece_index, piece) in data.chunks(UNIT).enumerate() {
                let piece_sector = first + (piece_index * UNIT) as u64 / DISK_SECTOR;
                parsed.events.push(Event::Write { sector: piece_sector, bytes: piece.to_vec() });
            }
        }
        if flags & FLUSH != 0 {
            parsed.events.push(Event::Flush);
        }
        offset = data_end;
        index += 1;
    }
}

/// Whether a header past the counted entries looks like one QEMU wrote
/// (a log file may hold stale or zero sectors after its last entry).
fn plausible(sector: u64, sectors: u64, flags: u64) -> bool {
    let known = flags & !(FLUSH | FUA | DISCARD | MARK | METADATA) == 0;
    let flush_only = flags == FLUSH && sector == 0 && sectors == 0;
    let write = flags & (FLUSH | DISCARD | MARK) == 0 && sectors > 0 && sectors < (1 << 24);
    known && (flush_only || write)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log the way QEMU writes one, with 512-byte sectors.
    struct LogBuilder {
        bytes: Vec<u8>,
        entries: u64,
    }

    impl LogBuilder {
        fn new() -> Self {
            Self { bytes: vec![0; 512], entries: 0 }
        }

        fn entry(mut self, sector: u64, sectors: u64, flags: u64, data: &[u8]) -> Self {
            let mut header = vec![0u8; 512];
            header[0..8].copy_from_slice(&sector.to_le_bytes());
            header[8..16].copy_from_slice(&sectors.to_le_bytes());
            header[16..24].copy_from_slice(&flags.to_le_bytes());
            self.bytes.extend_from_slice(&header);
            self.bytes.extend_from_slice(data);
            self.entries += 1;
            self
        }

        fn finish(mut self, counted: u64) -> Vec<u8> {
            self.bytes[0..8].copy_from_slice(&MAGIC.to_le_bytes());
            self.bytes[8..16].copy_from_slice(&VERSION.to_le_bytes());
            self.bytes[16..24].copy_from_slice(&counted.to_le_bytes());
            self.bytes[24..28].copy_from_slice(&512u32.to_le_bytes());
            self.bytes
        }
    }

    fn sectors(count: usize, fill: u8) -> Vec<u8> {
        vec![fill; count * 512]
    }

    #[test]
    fn writes_come_out_in_units_and_flushes_in_place() {
        let log = LogBuilder::new().entry(8, 3, 0, &sectors(3, 0xAA)).entry(0, 0, FLUSH, &[]).entry(100, 1, 0, &sectors(1, 0xBB));
        let parsed = parse(&log.finish(3)).unwrap();
        let shape: Vec<(Option<u64>, usize)> = parsed
            .events
            .iter()
            .map(|event| match event {
                Event::Write { sector, bytes } => (Some(*sector), bytes.len()),
                _ => (None, 0),
            })
            .collect();
        assert_eq!(shape, [(Some(8), 1024), (Some(10), 512), (None, 0), (Some(100), 512)]);
        assert!(matches!(&parsed.events[0], Event::Write { bytes, .. } if bytes.iter().all(|&b| b == 0xAA)));
    }

    #[test]
    fn entries_after_the_last_count_update_are_read_until_a_blank_sector() {
        let log = LogBuilder::new().entry(0, 0, FLUSH, &[]).entry(4, 1, 0, &sectors(1, 1));
        let mut bytes = log.finish(1);
        bytes.extend_from_slice(&sectors(4, 0));
        let parsed = parse(&bytes).unwrap();
        assert_eq!(parsed.events.len(), 2, "{:?}", parsed.events);
    }

    #[test]
    fn discards_carry_no_data_and_are_counted() {
        let log = LogBuilder::new().entry(16, 64, DISCARD, &[]).entry(2, 1, 0, &sectors(1, 7));
        let parsed = parse(&log.finish(2)).unwrap();
        assert_eq!(parsed.discards, 1);
        assert!(matches!(parsed.events[..], [Event::Write { sector: 2, .. }]));
    }

    #[test]
    fn a_damaged_log_is_refused_not_shortened() {
        let good = LogBuilder::new().entry(8, 2, 0, &sectors(2, 1)).entry(0, 0, FLUSH, &[]).finish(2);
        assert!(parse(&good).is_ok());
        assert_eq!(parse(&good[..good.len() - 512]), Err(LogError::Truncated { index: 1 }), "a counted entry is missing");
        assert_eq!(parse(&good[..600]), Err(LogError::Truncated { index: 0 }));
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 1;
        assert!(matches!(parse(&bad_magic), Err(LogError::BadMagic(_))));
        let mut bad_version = good.clone();
        bad_version[8] = 2;
        assert_eq!(parse(&bad_version), Err(LogError::BadVersion(2)));
        let mut bad_size = good.clone();
        bad_size[24..28].copy_from_slice(&700u32.to_le_bytes());
        assert_eq!(parse(&bad_size), Err(LogError::BadSectorSize(700)));
        let mut bad_flags = good.clone();
        bad_flags[512 + 16] = 0x80;
        assert_eq!(parse(&bad_flags), Err(LogError::UnknownFlags { index: 0, flags: 0x80 }));
        let mut huge = good;
        huge[512 + 8..512 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse(&huge), Err(LogError::Oversized { index: 0 }));
        assert_eq!(parse(&[0; 10]), Err(LogError::NoSuperBlock));
    }
}
