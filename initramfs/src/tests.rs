//! Round trips through the writer, and every kind of damage refused.

use alloc::vec::Vec;

use crate::{entries, CpioError, Entry, Writer, DIRECTORY, REGULAR, SYMLINK};

fn sample() -> Vec<u8> {
    let mut writer = Writer::new();
    writer.directory("bin", 0o755);
    writer.file("bin/hello", 0o755, b"\x7fELF...");
    writer.symlink("bin/sh", "busybox");
    writer.file("empty", 0o644, b"");
    writer.finish()
}

fn all(archive: &[u8]) -> Result<Vec<Entry<'_>>, CpioError> {
    entries(archive).collect()
}

#[test]
fn written_entries_read_back_in_order() {
    let archive = sample();
    let read = all(&archive).unwrap();
    let summary: Vec<(&str, u32, &[u8])> = read.iter().map(|entry| (entry.name, entry.mode, entry.data)).collect();
    assert_eq!(
        summary,
        [
            ("bin", DIRECTORY | 0o755, &b""[..]),
            ("bin/hello", REGULAR | 0o755, &b"\x7fELF..."[..]),
            ("bin/sh", SYMLINK | 0o777, &b"busybox"[..]),
            ("empty", REGULAR | 0o644, &b""[..]),
        ]
    );
    assert_eq!(archive.len() % 4, 0);
}

#[test]
fn every_truncation_is_an_error_never_a_panic() {
    let archive = sample();
    for length in 0..archive.len() {
        let result = all(&archive[..length]);
        assert!(result.is_err(), "a cut at {length} of {} was accepted", archive.len());
    }
}

#[test]
fn every_single_byte_corruption_is_refused_or_read_within_bounds() {
    let archive = sample();
    for at in 0..archive.len() {
        for value in [0u8, b'g', 0xFF, b'9'] {
            let mut damaged = archive.clone();
            damaged[at] = value;
            // Must not panic; whatever it reads lies inside the archive.
            for entry in entries(&damaged).flatten() {
                assert!(entry.data.len() <= damaged.len());
            }
        }
    }
}

#[test]
fn specific_damage_has_specific_errors() {
    let archive = sample();
    let mut bad_magic = archive.clone();
    bad_magic[0] = b'1';
    assert_eq!(all(&bad_magic), Err(CpioError::BadMagic(0)));
    let mut bad_digit = archive.clone();
    bad_digit[6 + 8] = b'x'; // mode field
    assert_eq!(all(&bad_digit), Err(CpioError::BadNumber(14)));
    let mut huge_size = archive.clone();
    huge_size[54..62].copy_from_slice(b"FFFFFFFF"); // filesize of the first entry
    assert!(matches!(all(&huge_size), Err(CpioError::Truncated(0))));
    let mut no_nul = archive.clone();
    let name_size_at = 6 + 11 * 8;
    no_nul[name_size_at..name_size_at + 8].copy_from_slice(b"00000003"); // "bin" without its NUL
    assert_eq!(all(&no_nul), Err(CpioError::BadName(0)));
    let without_trailer = &archive[..archive.len() - 124];
    assert_eq!(all(without_trailer), Err(CpioError::NoTrailer));
}
