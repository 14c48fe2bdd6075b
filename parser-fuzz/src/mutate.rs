//! Mutations of one input, AFL-havoc style: a stack of one to eight edits,
//! each at a spot drawn mostly from the target's hot ranges. Must keep an
//! input within the target's maximum length and never panic on any length
//! (an empty input included).

use std::ops::Range;

use crate::{boundary_value, Rng};

/// Applies one to eight random edits to `input`. `other` is a second corpus
/// entry for splices; `hot` are the ranges to aim at; `max_len` bounds growth.
pub fn mutate(input: &mut Vec<u8>, other: &[u8], hot: &[Range<usize>], max_len: usize, random: &mut Rng) {
    let edits = 1 + random.below(8);
    for _ in 0..edits {
        edit(input, other, hot, max_len, random);
    }
    input.truncate(max_len);
}

/// A position in `0..len`, three times in four inside a hot range.
fn spot(len: usize, hot: &[Range<usize>], random: &mut Rng) -> usize {
    if len == 0 {
        return 0;
    }
    if !hot.is_empty() && random.below(4) != 0 {
        let range = &hot[random.below(hot.len())];
        let start = range.start.min(len - 1);
        let end = range.end.min(len).max(start + 1);
        return start + random.below(end - start);
    }
    random.below(len)
}

fn edit(input: &mut Vec<u8>, other: &[u8], hot: &[Range<usize>], max_len: usize, random: &mut Rng) {
    let len = input.len();
    match random.below(11) {
        // Flip one bit.
        0 if len > 0 => {
            let at = spot(len, hot, random);
            input[at] ^= 1 << random.below(8);
        }
        // A byte set to an edge value or noise.
        1 if len > 0 => {
            let at = spot(len, hot, random);
            input[at] = [0, 1, 0x7f, 0x80, 0xff, random.next_u64() as u8][random.below(6)];
        }
        // A 16-, 32- or 64-bit field, either byte order, set to a boundary.
        2 | 3 if len > 0 => {
            let width = [2, 4, 8][random.below(3)];
            let value = boundary_value(random);
            write_field(input, spot(len, hot, random), width, value, random.coin());
        }
        // A field nudged by a small amount (lengths and counts off by a few).
        4 if len > 0 => {
            let width = [1, 2, 4][random.below(3)];
            let at = spot(len, hot, random);
            let delta = 1 + random.below(16) as u64;
            let old = read_field(input, at, width, false);
            let new = if random.coin() { old.wrapping_add(delta) } else { old.wrapping_sub(delta) };
            write_field(input, at, width, new, false);
        }
        // A field set to the input's own length or a neighbour of it.
        5 if len > 0 => {
            let value = (len as u64).wrapping_add(random.below(3) as u64).wrapping_sub(1);
            write_field(input, spot(len, hot, random), [2, 4, 8][random.below(3)], value, random.coin());
        }
        // A chunk copied over another place.
        6 if len > 1 => {
            let count = 1 + random.below(len.min(64));
            let from = random.below(len - count + 1);
            let to = spot(len, hot, random).min(len - count);
            input.copy_within(from..from + count, to);
        }
        // A chunk inserted: noise, repeated bytes or a copy of a piece.
        7 if len < max_len => {
            let count = 1 + random.below((max_len - len).min(256));
            let at = if len == 0 { 0 } else { spot(len, hot, random) };
            let chunk: Vec<u8> = match random.below(3) {
                0 => (0..count).map(|_| random.next_u64() as u8).collect(),
                1 => vec![[0u8, 0xff, b'A'][random.below(3)]; count],
                _ if len > 0 => {
                    let from = random.below(len);
                    input[from..(from + count).min(len)].to_vec()
                }
                _ => vec![0; count],
            };
            input.splice(at..at, chunk);
        }
        // A chunk deleted.
        8 if len > 0 => {
            let at = spot(len, hot, random);
            let count = 1 + random.below((len - at).min(256));
            input.drain(at..at + count);
        }
        // Cut short.
        9 if len > 0 => input.truncate(random.below(len)),
        // Spliced: this input's head, the other's tail.
        10 if !other.is_empty() => {
            let keep = random.below(len + 1);
            let from = random.below(other.len());
            input.truncate(keep);
            let room = max_len.saturating_sub(keep);
            input.extend_from_slice(&other[from..other.len().min(from + room)]);
        }
        _ => {}
    }
}

/// Reads `width` bytes at `at` (clipped to the input) as a number.
fn read_field(input: &[u8], at: usize, width: usize, big_endian: bool) -> u64 {
    let end = (at + width).min(input.len());
    let mut value = 0u64;
    for (index, byte) in input[at..end].iter().enumerate() {
        let shift = if big_endian { 8 * (end - at - 1 - index) } else { 8 * index };
        value |= u64::from(*byte) << shift;
    }
    value
}

/// Writes the low `width` bytes of `value` at `at` (clipped to the input).
fn write_field(input: &mut [u8], at: usize, width: usize, value: u64, big_endian: bool) {
    let end = (at + width).min(input.len());
    let count = end - at;
    for index in 0..count {
        let shift = if big_endian { 8 * (count - 1 - index) } else { 8 * index };
        input[at + index] = (value >> shift) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_stay_within_the_bound_and_never_panic_on_short_inputs() {
        let mut random = Rng::new(7);
        for length in [0usize, 1, 2, 3, 8, 100] {
            for _ in 0..2_000 {
                let mut input: Vec<u8> = (0..length as u8).collect();
                mutate(&mut input, b"other input", &[0..1, 50..60, 500..600], 128, &mut random);
                assert!(input.len() <= 128);
            }
        }
    }

    #[test]
    fn mutations_change_inputs_and_a_seed_replays_them() {
        let run = |seed| {
            let mut random = Rng::new(seed);
            (0..100)
                .map(|_| {
                    let mut input = vec![0u8; 64];
                    mutate(&mut input, &[9; 64], &[], 256, &mut random);
                    input
                })
                .collect::<Vec<_>>()
        };
        let first = run(3);
        assert_eq!(first, run(3));
        assert_ne!(first, run(4));
        assert!(first.iter().filter(|input| **input != vec![0u8; 64]).count() > 80);
    }

    #[test]
    fn fields_are_written_in_either_byte_order() {
        let mut bytes = [0u8; 6];
        write_field(&mut bytes, 1, 4, 0x0102_0304, false);
        assert_eq!(bytes, [0, 4, 3, 2, 1, 0]);
        write_field(&mut bytes, 1, 4, 0x0102_0304, true);
        assert_eq!(bytes, [0, 1, 2, 3, 4, 0]);
        assert_eq!(read_field(&bytes, 1, 4, true), 0x0102_0304);
        write_field(&mut bytes, 4, 4, u64::MAX, false);
        assert_eq!(bytes, [0, 1, 2, 3, 0xff, 0xff]);
    }
}
