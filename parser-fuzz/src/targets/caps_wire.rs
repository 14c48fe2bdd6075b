//! The messages group kernels send each other through shared memory:
//! `caps::distributed::wire::decode` of a channel slot's words (the input's
//! bytes, little-endian, zero-padded to [`WORDS`] words). Every message that
//! decodes must encode to the very words it came from (the module promises
//! one encoding per message) and those words must decode to it again; a
//! message that breaks either is a bug: a panic.
//! Hot ranges: the tag word and the low and high halves of each field.

use std::ops::Range;

use caps::distributed::wire::{decode, encode, WORDS};
use caps::distributed::{CapKey, KernelId, Message, OpId, ProcessId};

use crate::{boundary_value, kind_of, Rng, Target};

/// The capability-message target.
pub struct CapsWire;

const BYTES: usize = WORDS * 8;

/// The input's bytes as a slot's words (short input: zeros after it).
fn words_of(input: &[u8]) -> [u64; WORDS] {
    let mut padded = [0u8; BYTES];
    let used = input.len().min(BYTES);
    padded[..used].copy_from_slice(&input[..used]);
    std::array::from_fn(|index| u64::from_le_bytes(padded[index * 8..index * 8 + 8].try_into().unwrap()))
}

fn bytes_of(words: &[u64; WORDS]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
}

/// A kernel number, mostly a small one, sometimes an edge.
fn kernel(random: &mut Rng) -> KernelId {
    KernelId([0, 1, 2, 7, u8::MAX, boundary_value(random) as u8][random.below(6)])
}

/// A 32-bit number drawn by what it is: small, or an edge.
fn number(random: &mut Rng) -> u32 {
    if random.coin() {
        random.below(16) as u32
    } else {
        boundary_value(random) as u32
    }
}

fn cap_key(random: &mut Rng) -> CapKey {
    CapKey { kernel: kernel(random), index: number(random) }
}

/// A message of every kind, its fields drawn from `random`.
fn message(random: &mut Rng, kind: usize) -> Message {
    let op = OpId(number(random));
    match kind % 10 {
        0 => Message::ObtainRequest { op, parent: cap_key(random), child: cap_key(random) },
        1 => Message::ObtainReply { op, parent: cap_key(random), child: cap_key(random), granted: random.coin() },
        2 => Message::ObtainAbandoned { parent: cap_key(random), child: cap_key(random) },
        3 => Message::DelegateRequest { op, parent: cap_key(random), to: ProcessId { kernel: kernel(random), number: number(random) } },
        4 => Message::DelegateReply { op, parent: cap_key(random), child: random.coin().then(|| cap_key(random)) },
        5 => Message::DelegateAck { parent: cap_key(random), child: cap_key(random), commit: random.coin() },
        6 => Message::DelegateAbandoned { parent: cap_key(random), child: cap_key(random) },
        7 => Message::RevokeRequest { cap: cap_key(random), reply_to: cap_key(random) },
        8 => Message::RevokeReply { root: cap_key(random) },
        _ => Message::Unlink { parent: cap_key(random), child: cap_key(random) },
    }
}

/// The message's kind for an outcome label.
fn kind_name(message: &Message) -> String {
    let text = format!("{message:?}");
    text.split(' ').next().unwrap_or_default().to_string()
}

impl Target for CapsWire {
    fn name(&self) -> &'static str {
        "caps-wire"
    }

    fn samples(&self) -> Vec<Vec<u8>> {
        let mut random = Rng::new(0xca95);
        let mut samples: Vec<Vec<u8>> = (0..10).map(|kind| bytes_of(&encode(&message(&mut random, kind)))).collect();
        // A refused delegation (the `None` child) and the largest keys.
        let top = CapKey { kernel: KernelId(u8::MAX), index: u32::MAX };
        samples.push(bytes_of(&encode(&Message::DelegateReply { op: OpId(u32::MAX), parent: top, child: None })));
        samples.push(bytes_of(&encode(&Message::ObtainReply { op: OpId(3), parent: top, child: top, granted: true })));
        samples
    }

    fn generate(&self, random: &mut Rng) -> Vec<u8> {
        let kind = random.below(10);
        let mut words = encode(&message(random, kind));
        // One word in two replaced by an edge value, then cut anywhere.
        if random.coin() {
            words[random.below(WORDS)] = boundary_value(random);
        }
        let mut bytes = bytes_of(&words);
        if random.below(4) == 0 {
            bytes.truncate(random.below(BYTES + 1));
        }
        bytes
    }

    fn max_len(&self) -> usize {
        BYTES + 8
    }

    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        // The tag, each field's high half (kernel numbers, flags) and low byte.
        let mut ranges = std::iter::once(0..1).collect::<Vec<_>>();
        for word in 1..WORDS {
            ranges.push(word * 8..word * 8 + 1);
            ranges.push(word * 8 + 4..word * 8 + 8);
        }
        ranges.into_iter().filter(|range| range.start < input.len()).collect()
    }

    fn run(&self, input: &[u8]) -> String {
        let words = words_of(input);
        match decode(&words) {
            Ok(message) => {
                let again = encode(&message);
                assert_eq!(again, words, "{message:?} decoded from words it does not encode to");
                assert_eq!(decode(&again), Ok(message.clone()), "{message:?} does not survive its own encoding");
                format!("ok {}", kind_name(&message))
            }
            Err(caps::distributed::wire::WireError::BadField { word }) => format!("BadField {word} (tag {})", words[0].min(11)),
            Err(error) => kind_of(&error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_decodes_and_every_kind_is_among_them() {
        let kinds: std::collections::HashSet<String> = CapsWire.samples().iter().map(|sample| CapsWire.run(sample)).collect();
        assert!(kinds.iter().all(|label| label.starts_with("ok ")), "{kinds:?}");
        assert_eq!(kinds.len(), 10, "{kinds:?}");
    }
}
