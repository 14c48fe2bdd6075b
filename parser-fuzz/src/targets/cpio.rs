//! The initramfs's newc cpio archive: `initramfs::entries`, and (for one
//! input in sixteen) unpacking it into a tmpfs as the kernel does at boot.
//! Hot ranges: the 110-byte headers and the names after them.

use std::ops::Range;

use initramfs::Writer;
use linux_abi::Timestamp;

use crate::{kind_of, Rng, Target};

/// The cpio target.
pub struct Cpio;

const HEADER: usize = 110;

/// One input in this many is also unpacked (each unpacked archive is leaked:
/// the tree borrows its bytes for good, as at boot).
const UNPACK_EVERY: u64 = 16;

impl Target for Cpio {
    fn name(&self) -> &'static str {
        "cpio"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        let mut archive = Writer::new();
        archive.directory("bin", 0o755);
        archive.file("bin/hello", 0o755, b"\x7fELF pretend");
        archive.symlink("bin/sh", "hello");
        archive.directory("etc", 0o755);
        archive.file("etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/sh\n");
        archive.entry("dev/console", initramfs::CHAR_DEVICE | 0o600, (5, 1), b"");
        let mut small = Writer::new();
        small.file("init", 0o755, b"#!/bin/sh\necho hi\n");
        vec![archive.finish(), small.finish()]
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let mut archive = Writer::new();
        for _ in 0..random.below(6) {
            let depth = 1 + random.below(4);
            let path: Vec<String> = (0..depth).map(|_| ["a", "b", ".", "..", "", "x".repeat(300).as_str(), "dev"][random.below(7)].to_string()).collect();
            let path = path.join("/");
            let kinds = [initramfs::REGULAR, initramfs::DIRECTORY, initramfs::SYMLINK, initramfs::CHAR_DEVICE, 0o010_000, 0o140_000, 0];
            let mode = kinds[random.below(kinds.len())] | (random.next_u64() as u32 & 0o7777);
            let data: Vec<u8> = (0..random.below(40)).map(|_| random.next_u64() as u8).collect();
            archive.entry(&path, mode, (random.below(300) as u32, random.below(300) as u32), &data);
        }
        let mut bytes = archive.finish();
        if random.coin() && !bytes.is_empty() {
            // A field of some header rewritten as hexadecimal digits of an edge value.
            let at = random.below(bytes.len() / HEADER + 1) * HEADER % bytes.len().max(1);
            let field = 6 + 8 * random.below(13);
            let text = format!("{:08x}", crate::boundary_value(random) as u32);
            if at + field + 8 <= bytes.len() {
                bytes[at + field..at + field + 8].copy_from_slice(text.as_bytes());
            }
        }
        bytes
    }

    fn max_len(&self) -> usize {
        4096
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        // Every place that starts with the magic, and the name behind it.
        let mut ranges = Vec::new();
        let mut at = 0;
        while let Some(found) = input[at..].windows(6).position(|window| window == b"070701") {
            let start = at + found;
            ranges.push(start..(start + HEADER + 16).min(input.len()));
            at = start + 6;
        }
        if ranges.is_empty() {
            ranges.push(0..input.len().min(HEADER));
        }
        ranges
    }

    fn run(&self, input: &[u8]) -> String {
        let mut count = 0usize;
        let mut label = String::from("ok");
        for entry in initramfs::entries(input) {
            match entry {
                Ok(entry) => {
                    count += 1;
                    let _ = (entry.name.len(), entry.mode, entry.data.len(), entry.rdev);
                }
                Err(error) => {
                    label = kind_of(&error);
                    break;
                }
            }
        }
        let checksum: u64 = input.iter().map(|byte| u64::from(*byte)).sum::<u64>() + input.len() as u64;
        if checksum % UNPACK_EVERY == 0 {
            let archive: &'static [u8] = Box::leak(input.to_vec().into_boxed_slice());
            let mut tree = vfs::Tmpfs::new(Timestamp { seconds: 1, nanoseconds: 0 });
            let unpacked = match tree.unpack(archive, Timestamp { seconds: 2, nanoseconds: 0 }) {
                Ok(made) => format!("unpacked {}", made.min(4)),
                Err(vfs::UnpackError::Entry(_, errno)) => format!("refused {errno:?}"),
                Err(error) => kind_of(&error),
            };
            return format!("{label} {} / {unpacked}", count.min(4));
        }
        format!("{label} {}", count.min(4))
    }
}
