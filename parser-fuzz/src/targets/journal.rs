//! The jbd2 journal as mount meets it after a crash: the journal
//! superblock's decode and geometry checks, then `jbd2::recover` (scan,
//! revoke and replay passes) into an in-memory file system of
//! [`FS_BLOCKS`] blocks. An accepted log is used whole: recovery must have
//! put every replayed block inside the file system (a tag naming a block
//! outside it must end recovery with an error, never a panic), report
//! what it did (blocks written; transactions from the first to where the
//! scan ended), reset the superblock, and do nothing when run again; a
//! failed recovery must write nothing to the journal; a superblock that
//! decodes must survive its own encode.
//!
//! The kernel refuses journals under 1024 blocks, so the journal area is
//! 1024 blocks of 1 KiB of which an input holds two windows: its first
//! [`HEAD_BLOCKS`] blocks are the area's first (superblock and log start)
//! and the rest its last [`TAIL_BLOCKS`] (where a log wraps); everything
//! between reads as zeros. Samples are real logs written by the crate's
//! own writer (several transactions with escaped blocks and revokes; no
//! checksums, v1 CRC, v2, v3, a version-1 superblock, a log that wraps),
//! left un-checkpointed as a crash leaves them. Repair reseals the
//! superblock, descriptor, revoke, commit and data-tag checksums of
//! v2/v3 journals. Must not keep state between inputs.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

use jbd2::format::checksums::{superblock_checksum, Checksummer, SUPERBLOCK_CHECKSUM_OFFSET};
use jbd2::format::features::BlockChecksums;
use jbd2::format::header::{BlockHeader, BlockType, JOURNAL_MAGIC};
use jbd2::format::superblock::{JournalSuperblock, SuperblockVersion};
use jbd2::format::tag::{BlockTag, TagLayout, TAG_LAST, TAG_SAME_UUID};
use jbd2::{recover, CommitTime, Features, FileSystemBlocks, IoError, Journal, JournalArea, RecoveryError, RecoveryReport, SuperblockError};

use crate::{boundary_value, kind_of, Rng, Target};

/// The jbd2 target.
pub struct Jbd2Journal;

/// Bytes per block (journal and file system).
const BLOCK: usize = 1024;
/// Blocks of the journal area: the smallest journal the kernel takes.
const AREA_BLOCKS: u64 = 1024;
/// Input blocks that are the area's first blocks.
const HEAD_BLOCKS: usize = 96;
/// Input blocks that are the area's last blocks.
const TAIL_BLOCKS: usize = 32;
/// Blocks of the file system recovery writes into.
const FS_BLOCKS: u64 = 512;
/// The journal's UUID (the checksum seed).
const UUID: [u8; 16] = *b"lamina-journal-1";

/// The area block that input block `index` holds.
fn area_block(index: usize) -> u64 {
    if index < HEAD_BLOCKS {
        index as u64
    } else {
        AREA_BLOCKS - (HEAD_BLOCKS + TAIL_BLOCKS - index) as u64
    }
}

/// The input block that holds area block `block`, if an input holds it.
fn input_block(block: u64) -> Option<usize> {
    if block < HEAD_BLOCKS as u64 {
        return Some(block as usize);
    }
    let from_end = AREA_BLOCKS.checked_sub(block)?;
    (1..=TAIL_BLOCKS as u64).contains(&from_end).then(|| HEAD_BLOCKS + TAIL_BLOCKS - from_end as usize)
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |field| u32::from_be_bytes(field.try_into().unwrap()))
}

/// Writes the low `width` bytes of `value` at `at`, big-endian (what does
/// not fit in `bytes` is dropped).
fn put_be(bytes: &mut [u8], at: usize, width: usize, value: u64) {
    for index in 0..width {
        if let Some(byte) = bytes.get_mut(at + index) {
            *byte = (value >> (8 * (width - 1 - index))) as u8;
        }
    }
}

/// The journal area of one input: the two windows, zeros between them,
/// and whatever recovery writes outside the windows kept aside.
struct WindowedArea {
    windows: RefCell<Vec<u8>>,
    outside: RefCell<BTreeMap<u64, Vec<u8>>>,
    writes: Cell<u32>,
}

impl WindowedArea {
    fn new(input: &[u8]) -> Self {
        let mut windows = input.to_vec();
        windows.resize((HEAD_BLOCKS + TAIL_BLOCKS) * BLOCK, 0);
        Self { windows: RefCell::new(windows), outside: RefCell::new(BTreeMap::new()), writes: Cell::new(0) }
    }

    fn check_request(index: u64, length: usize) -> Result<(), IoError> {
        assert_eq!(length, BLOCK, "the journal was handed a buffer that is not one block");
        if index >= AREA_BLOCKS {
            return Err(IoError::OutOfRange);
        }
        Ok(())
    }
}

impl JournalArea for WindowedArea {
    fn block_size(&self) -> u32 {
        BLOCK as u32
    }

    fn block_count(&self) -> u64 {
        AREA_BLOCKS
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        Self::check_request(index, buffer.len())?;
        if let Some(block) = self.outside.borrow().get(&index) {
            buffer.copy_from_slice(block);
        } else if let Some(at) = input_block(index) {
            buffer.copy_from_slice(&self.windows.borrow()[at * BLOCK..(at + 1) * BLOCK]);
        } else {
            buffer.fill(0);
        }
        Ok(())
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError> {
        Self::check_request(index, data.len())?;
        self.writes.set(self.writes.get() + 1);
        match input_block(index) {
            Some(at) => self.windows.borrow_mut()[at * BLOCK..(at + 1) * BLOCK].copy_from_slice(data),
            None => drop(self.outside.borrow_mut().insert(index, data.to_vec())),
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// The file system recovery replays into: [`FS_BLOCKS`] blocks, a write
/// past them refused (and counted).
#[derive(Default)]
struct FileSystemArea {
    blocks: RefCell<BTreeMap<u64, Vec<u8>>>,
    writes: Cell<u32>,
    refused: Cell<u32>,
}

impl FileSystemBlocks for FileSystemArea {
    fn write_fs_block(&self, block_number: u64, data: &[u8]) -> Result<(), IoError> {
        assert_eq!(data.len(), BLOCK, "replay wrote a block that is not one block long");
        if block_number >= FS_BLOCKS {
            self.refused.set(self.refused.get() + 1);
            return Err(IoError::OutOfRange);
        }
        self.writes.set(self.writes.get() + 1);
        self.blocks.borrow_mut().insert(block_number, data.to_vec());
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// A whole journal area in memory, for the writer that makes samples.
struct WholeArea(RefCell<Vec<u8>>);

impl JournalArea for WholeArea {
    fn block_size(&self) -> u32 {
        BLOCK as u32
    }

    fn block_count(&self) -> u64 {
        AREA_BLOCKS
    }

    fn read_block(&self, index: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let start = usize::try_from(index).map_err(|_| IoError::OutOfRange)? * BLOCK;
        buffer.copy_from_slice(self.0.borrow().get(start..start + BLOCK).ok_or(IoError::OutOfRange)?);
        Ok(())
    }

    fn write_block(&self, index: u64, data: &[u8]) -> Result<(), IoError> {
        let start = usize::try_from(index).map_err(|_| IoError::OutOfRange)? * BLOCK;
        self.0.borrow_mut().get_mut(start..start + BLOCK).ok_or(IoError::OutOfRange)?.copy_from_slice(data);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// Checkpoints of sample making go nowhere.
struct Discard;

impl FileSystemBlocks for Discard {
    fn write_fs_block(&self, _block_number: u64, _data: &[u8]) -> Result<(), IoError> {
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }
}

/// One transaction of a sample: blocks logged (their contents made from
/// the number; block 13 starts with the journal magic, so it is escaped)
/// and blocks revoked.
struct Transaction {
    logged: &'static [u64],
    revoked: &'static [u64],
}

const TRANSACTIONS: [Transaction; 3] = [
    Transaction { logged: &[10, 11, 12, 13, 14, 15, 16], revoked: &[] },
    Transaction { logged: &[12, 20, 21, 22, 23], revoked: &[11] },
    Transaction { logged: &[30, 300], revoked: &[20, 14] },
];

fn block_contents(number: u64) -> Vec<u8> {
    let mut data: Vec<u8> = (0..BLOCK).map(|index| (index as u64 * 7 + number) as u8).collect();
    if number == 13 {
        data[..4].copy_from_slice(&JOURNAL_MAGIC.to_be_bytes());
    }
    data
}

/// A whole area, empty but for a fresh superblock of type `version`.
fn empty_area(version: BlockType) -> WholeArea {
    let mut bytes = vec![0u8; AREA_BLOCKS as usize * BLOCK];
    let words = [(0x0, JOURNAL_MAGIC), (0x4, version.value()), (0xC, BLOCK as u32), (0x10, AREA_BLOCKS as u32), (0x14, 1), (0x18, 1), (0x40, 1)];
    for (at, word) in words {
        put_be(&mut bytes, at, 4, u64::from(word));
    }
    bytes[0x30..0x40].copy_from_slice(&UUID);
    WholeArea(RefCell::new(bytes))
}

/// Commits `transaction` at `time`; the log position after it.
fn commit(journal: &mut Journal<&WholeArea>, transaction: &Transaction, time: u64) -> u64 {
    let handle = journal.begin();
    for &block in transaction.logged {
        journal.write_block(&handle, block, &block_contents(block)).expect("the sample transaction fits");
    }
    for &block in transaction.revoked {
        journal.revoke_block(&handle, block).expect("the sample revoke fits");
    }
    journal.end(handle).expect("the handle is the running transaction's");
    let committed = journal.commit(&Discard, CommitTime { seconds: time, nanoseconds: 0 }).expect("the sample commits").expect("the transaction is not empty");
    u64::from(committed.log_start) + u64::from(committed.log_blocks)
}

/// The windows of a log written with `features` under a superblock of type
/// `version`, crashed after `transactions`; with `wrap`, the log is first
/// filled and checkpointed until it is about to wrap, so the crashed
/// transactions cross the end of the area.
fn write_sample(features: Features, version: BlockType, transactions: &[Transaction], wrap: bool) -> Vec<u8> {
    let area = empty_area(version);
    let mut journal = Journal::open_with_features(&area, features).expect("a fresh journal opens");
    let mut time = 1_000;
    if wrap {
        let filler = Transaction { logged: &[40], revoked: &[] };
        while commit(&mut journal, &filler, time) < AREA_BLOCKS - TAIL_BLOCKS as u64 / 2 {
            journal.checkpoint(&Discard).expect("a checkpoint of memory succeeds");
            time += 1;
        }
        journal.checkpoint(&Discard).expect("a checkpoint of memory succeeds");
    }
    for transaction in transactions {
        time += 1;
        commit(&mut journal, transaction, time);
    }
    drop(journal); // The crash: no checkpoint, no close.
    let whole = area.0.into_inner();
    (0..HEAD_BLOCKS + TAIL_BLOCKS)
        .flat_map(|index| {
            let start = area_block(index) as usize * BLOCK;
            whole[start..start + BLOCK].to_vec()
        })
        .collect()
}

fn samples() -> &'static [Vec<u8>] {
    static SAMPLES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let incompat = |bits| Features { incompat: bits, ..Features::default() };
        let v3 = incompat(Features::INCOMPAT_CSUM_V3 | Features::INCOMPAT_64BIT);
        let crc32 = Features { compat: Features::COMPAT_CHECKSUM, ..Features::default() };
        let (version_2, version_1) = (BlockType::SuperblockVersion2, BlockType::SuperblockVersion1);
        vec![
            write_sample(v3, version_2, &TRANSACTIONS, false),
            write_sample(Features::default(), version_2, &TRANSACTIONS, false),
            write_sample(incompat(Features::INCOMPAT_CSUM_V2), version_2, &TRANSACTIONS, false),
            write_sample(crc32, version_2, &TRANSACTIONS, false),
            write_sample(Features::default(), version_1, &TRANSACTIONS[..1], false),
            write_sample(v3, version_2, &TRANSACTIONS, true),
        ]
    })
}

/// The features of the superblock in `input`, if it is version 2.
fn features_of(input: &[u8]) -> Option<Features> {
    (input.len() >= BLOCK && BlockHeader::decode(input)?.block_type == BlockType::SuperblockVersion2).then(|| Features {
        compat: be32(input, 0x24),
        incompat: be32(input, 0x28),
        ro_compat: be32(input, 0x2C),
    })
}

/// Reseals what a v2/v3 journal checksums: the superblock, then each
/// metadata block of the input (descriptor tags from the data blocks that
/// follow in the area, then tails; commit blocks).
fn repair_checksums(input: &mut [u8]) {
    let Some(features) = features_of(input) else { return };
    if features.block_checksums() == BlockChecksums::Absent {
        return;
    }
    let checksum = superblock_checksum(&input[..BLOCK]);
    put_be(input, SUPERBLOCK_CHECKSUM_OFFSET, 4, u64::from(checksum));
    let uuid: [u8; 16] = input[0x30..0x40].try_into().unwrap();
    let checksummer = Checksummer::new(features.block_checksums(), &uuid);
    for index in 1..input.len() / BLOCK {
        let Some(header) = BlockHeader::decode(&input[index * BLOCK..]) else { continue };
        match header.block_type {
            BlockType::Descriptor => {
                reseal_tags(input, index, header.sequence, &features, &checksummer);
                checksummer.seal_tail(&mut input[index * BLOCK..(index + 1) * BLOCK]);
            }
            BlockType::Revoke => checksummer.seal_tail(&mut input[index * BLOCK..(index + 1) * BLOCK]),
            BlockType::Commit => checksummer.seal_commit(&mut input[index * BLOCK..(index + 1) * BLOCK]),
            _ => {}
        }
    }
}

/// Rewrites each tag of the descriptor at input block `index` with the
/// checksum of the data block it describes (when the input holds it).
fn reseal_tags(input: &mut [u8], index: usize, sequence: u32, features: &Features, checksummer: &Checksummer) {
    let layout = TagLayout::new(features);
    let end = BLOCK - features.tail_bytes();
    let mut offset = 12;
    let mut position = area_block(index);
    while offset + layout.bytes() <= end {
        let tag_range = index * BLOCK + offset..index * BLOCK + offset + layout.bytes();
        let tag = layout.decode(&input[tag_range.clone()]);
        position = if position + 1 >= AREA_BLOCKS { 1 } else { position + 1 };
        if let Some(data) = input_block(position).and_then(|at| input.get(at * BLOCK..(at + 1) * BLOCK)) {
            let full = checksummer.data_checksum(sequence, data);
            let checksum = if checksummer.scheme() == BlockChecksums::Version2 { full & 0xFFFF } else { full };
            layout.encode(&BlockTag { checksum, ..tag }, &mut input[tag_range]);
        }
        offset += layout.bytes() + if tag.has(TAG_SAME_UUID) { 0 } else { 16 };
        if tag.has(TAG_LAST) {
            break;
        }
    }
}

/// The label of a recovery error: its kind and the kind inside it.
fn recovery_label(error: &RecoveryError) -> String {
    match error {
        RecoveryError::Superblock(inner) => format!("Superblock {}", kind_of(inner)),
        RecoveryError::Io(inner) => format!("Io {}", kind_of(inner)),
        RecoveryError::PassesDisagree { pass, .. } => format!("PassesDisagree {pass:?}"),
        other => kind_of(other),
    }
}

/// A count as its power of two (0, 1, 2, 4, 8, …).
fn bucket(count: u32) -> u32 {
    count.checked_ilog2().map_or(0, |log| 1 << log)
}

/// Checks what an accepted recovery promises, and runs it again.
fn check_recovered(area: &WindowedArea, fs: &FileSystemArea, report: &RecoveryReport, started_empty: bool) {
    assert_eq!(fs.refused.get(), 0, "recovery succeeded although a write outside the file system failed");
    assert_eq!(report.blocks_replayed, fs.writes.get(), "the report disagrees with the blocks written: {report:?}");
    let mut block = vec![0u8; BLOCK];
    area.read_block(0, &mut block).expect("block 0 reads");
    let superblock = JournalSuperblock::decode(&block).expect("recovery left a superblock that decodes");
    assert_eq!(superblock.start, 0, "recovery left the log in use");
    if !started_empty {
        assert_eq!(superblock.sequence, report.next_sequence, "s_sequence is not where the log ended: {report:?}");
        assert_eq!(report.next_sequence, report.end_transaction.wrapping_add(1), "{report:?}");
        let transactions = report.end_transaction.wrapping_sub(report.first_transaction);
        assert_eq!(report.transactions_replayed, transactions, "replay did not stop where the scan did: {report:?}");
    }
    let before = fs.writes.get();
    let again = recover(area, fs).expect("recovering a recovered journal succeeds");
    assert_eq!((again.transactions_replayed, fs.writes.get()), (0, before), "a second recovery replayed again");
}

/// The journal's format as a label prefix, so each format keeps its own
/// corpus entries.
fn format_label(superblock: &JournalSuperblock) -> &'static str {
    let features = superblock.features;
    match features.block_checksums() {
        _ if superblock.version == SuperblockVersion::Version1 => "v1 superblock",
        BlockChecksums::Version3 => "csum v3",
        BlockChecksums::Version2 => "csum v2",
        BlockChecksums::Absent if features.has_transaction_crc32() => "crc32",
        BlockChecksums::Absent => "no csum",
    }
}

/// Decodes the superblock, recovers, checks; the outcome label.
fn decode_and_recover(input: &[u8]) -> String {
    let mut first_block = input[..input.len().min(BLOCK)].to_vec();
    first_block.resize(BLOCK, 0);
    let decoded = JournalSuperblock::decode(&first_block);
    match &decoded {
        Ok(superblock) => {
            let again = JournalSuperblock::decode(&superblock.encode());
            assert!(again.as_ref() == Ok(superblock), "a decoded superblock does not survive encode: {again:?}");
            format!("{}: {}", format_label(superblock), recover_and_check(input, &decoded))
        }
        Err(_) => recover_and_check(input, &decoded),
    }
}

/// Recovers the journal in `input` (whose superblock decoded as
/// `decoded`) and checks what recovery promises; the outcome label.
fn recover_and_check(input: &[u8], decoded: &Result<JournalSuperblock, SuperblockError>) -> String {
    let area = WindowedArea::new(input);
    let fs = FileSystemArea::default();
    let result = recover(&area, &fs);
    if fs.refused.get() > 0 {
        assert_eq!(result, Err(RecoveryError::Io(IoError::OutOfRange)), "a refused replay write did not end recovery");
    }
    match (decoded, &result) {
        (Err(error), Ok(_)) => panic!("recovery accepted a superblock that does not decode ({error:?})"),
        (Err(error), Err(RecoveryError::Superblock(seen))) => assert_eq!(error, seen, "decode and recovery disagree"),
        _ => {}
    }
    match result {
        Ok(report) => {
            let started_empty = decoded.as_ref().is_ok_and(|superblock| superblock.start == 0);
            check_recovered(&area, &fs, &report, started_empty);
            if started_empty {
                return "empty log".into();
            }
            let revokes = if report.revoke_records > 0 { " +revokes" } else { "" };
            let failed = if report.failed_commit.is_some() { " +failed commit" } else { "" };
            format!("replayed {} tx {} blocks{revokes}{failed}", bucket(report.transactions_replayed), bucket(report.blocks_replayed))
        }
        Err(error) => {
            assert_eq!(area.writes.get(), 0, "a failed recovery wrote to the journal: {error:?}");
            format!("recover:{}", recovery_label(&error))
        }
    }
}

/// Superblock fields (offset, width): block size, length, first, sequence,
/// start, errno, the three feature words, users, checksum type.
const SUPERBLOCK_FIELDS: [(usize, usize); 11] =
    [(0xC, 4), (0x10, 4), (0x14, 4), (0x18, 4), (0x1C, 4), (0x20, 4), (0x24, 4), (0x28, 4), (0x2C, 4), (0x40, 4), (0x50, 1)];

/// A field of a metadata block of type `kind` (offset, width): the header's
/// type and sequence, tags, revoke count and records, commit checksum
/// type and size and time.
fn log_field(kind: BlockType, random: &mut Rng) -> (usize, usize) {
    match (kind, random.below(3)) {
        (_, 0) => ([4, 8][random.below(2)], 4),
        (BlockType::Descriptor, _) => (12 + 4 * random.below(16), [2, 4][random.below(2)]),
        (BlockType::Revoke, _) => (12 + 4 * random.below(6), 4),
        (_, _) => [(0xC, 1), (0xD, 1), (0x30, 8), (0x38, 4)][random.below(4)],
    }
}

impl Target for Jbd2Journal {
    fn name(&self) -> &'static str {
        "jbd2"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        samples().to_vec()
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let mut input = samples()[random.below(samples().len())].clone();
        let metadata: Vec<(usize, BlockType)> =
            (1..input.len() / BLOCK).filter_map(|index| Some((index, BlockHeader::decode(&input[index * BLOCK..])?.block_type))).collect();
        for _ in 0..1 + random.below(3) {
            let (at, width) = match metadata.get(random.below(metadata.len() + 1)) {
                Some(&(index, kind)) => {
                    let (offset, width) = log_field(kind, random);
                    (index * BLOCK + offset, width)
                }
                None => SUPERBLOCK_FIELDS[random.below(SUPERBLOCK_FIELDS.len())],
            };
            put_be(&mut input, at, width, boundary_value(random));
        }
        repair_checksums(&mut input);
        input
    }

    fn max_len(&self) -> usize {
        (HEAD_BLOCKS + TAIL_BLOCKS) * BLOCK
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        let superblock = 0..input.len().min(0x100);
        let mut ranges = vec![superblock];
        for index in 1..input.len().div_ceil(BLOCK) {
            let start = index * BLOCK;
            let length = match BlockHeader::decode(&input[start..]).map(|header| header.block_type) {
                Some(BlockType::Commit) => 0x40,
                Some(_) => 0x100,
                None => continue,
            };
            ranges.push(start..(start + length).min(input.len()));
        }
        ranges
    }

    fn repair(&self, input: &mut Vec<u8>) {
        repair_checksums(input);
    }

    fn run(&self, input: &[u8]) -> String {
        decode_and_recover(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_map_to_the_area_and_back() {
        for index in 0..HEAD_BLOCKS + TAIL_BLOCKS {
            assert_eq!(input_block(area_block(index)), Some(index));
        }
        assert_eq!(area_block(HEAD_BLOCKS), AREA_BLOCKS - TAIL_BLOCKS as u64);
        assert_eq!(input_block(HEAD_BLOCKS as u64), None);
        assert_eq!(input_block(AREA_BLOCKS), None);
    }

    #[test]
    fn every_sample_replays_its_committed_blocks() {
        for (number, sample) in samples().iter().enumerate() {
            let area = WindowedArea::new(sample);
            let fs = FileSystemArea::default();
            let report = recover(&area, &fs).unwrap_or_else(|error| panic!("sample {number}: {error:?}"));
            let transactions = if number == 4 { 1 } else { 3 };
            assert_eq!(report.transactions_replayed, transactions, "sample {number}: {report:?}");
            assert_eq!(fs.refused.get(), 0, "sample {number}");
            assert!(decode_and_recover(sample).contains(": replayed"), "sample {number}");
        }
    }

    #[test]
    fn the_wrapping_sample_starts_in_the_tail_window_and_wraps() {
        let sample = &samples()[5];
        let start = u64::from(be32(sample, 0x1C));
        assert!(start >= AREA_BLOCKS - TAIL_BLOCKS as u64, "s_start {start}");
        let commit_blocks = (0..HEAD_BLOCKS + TAIL_BLOCKS)
            .filter(|&index| be32(sample, index * BLOCK) == JOURNAL_MAGIC && be32(sample, index * BLOCK + 4) == 2)
            .filter(|&index| be32(sample, index * BLOCK + 8) >= be32(sample, 0x18))
            .map(area_block)
            .collect::<Vec<_>>();
        assert!(commit_blocks.iter().any(|&block| block < start), "no commit block after the wrap: {commit_blocks:?}");
    }

    #[test]
    fn repair_reseals_the_tag_of_a_changed_data_block() {
        let mut sample = samples()[0].clone();
        let descriptor = (1..HEAD_BLOCKS).find(|&index| be32(&sample, index * BLOCK + 4) == 1).unwrap();
        sample[(descriptor + 1) * BLOCK + 100] ^= 1; // a data byte: its tag checksum fails
        assert!(decode_and_recover(&sample).contains("recover:DataBlocksSkipped"), "{}", decode_and_recover(&sample));
        repair_checksums(&mut sample);
        assert!(decode_and_recover(&sample).contains(": replayed"), "{}", decode_and_recover(&sample));
    }
}
