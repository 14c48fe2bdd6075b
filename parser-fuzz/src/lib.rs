//! Structure-aware fuzzing of every parser that takes bytes from outside the
//! kernel (issue 23): ELF files, the initramfs's cpio, the boot loader's
//! information, ACPI tables, ext4 images and their jbd2 journals, network
//! frames, netlink requests, socket addresses and the capability messages
//! group kernels send each other.
//!
//! Each parser is a [`Target`]: real, well-formed samples to start from, a
//! generator that builds fresh inputs field by field, and a `run` that hands
//! an input to the parser and uses everything it returns. The [`driver`]
//! mutates samples and corpus entries (bit flips, boundary values in 8- to
//! 64-bit fields, chunk copies, inserts, deletes, truncation, splices), keeps
//! an input whose outcome was never seen before, and stops at the first
//! panic or hang with the input saved and the command that repeats it. A
//! seed replays the same inputs.
//!
//! Host only; never linked into the kernel. Must not judge speed: it reports
//! the slowest input, and fails only on a panic, an abort or a hang.
#![forbid(unsafe_code)]

pub mod driver;
pub mod mutate;
pub mod targets;

use std::ops::Range;

pub use testkit::Rng;

/// One parser under attack.
pub trait Target: Sync {
    /// The name used on the command line and in reports.
    fn name(&self) -> &'static str;

    /// Real, well-formed inputs to start from.
    fn samples(&self) -> Vec<Vec<u8>>;

    /// A fresh input built field by field (each field drawn by what it is).
    fn generate(&self, random: &mut Rng) -> Vec<u8>;

    /// The largest input worth trying (mutations never grow past it).
    fn max_len(&self) -> usize;

    /// The byte ranges of `input` that mutations should mostly aim at (the
    /// headers and metadata rather than file contents). Default: all of it.
    fn hot_ranges(&self, input: &[u8]) -> Vec<Range<usize>> {
        vec![0..input.len()]
    }

    /// Repairs what a mutation breaks that the parser checks first (a
    /// checksum), so that mutations reach past the check. Called on about
    /// half of the mutated inputs.
    fn repair(&self, _input: &mut Vec<u8>) {}

    /// Parses `input` and walks everything the parser returned. The result
    /// is a coarse label of what happened (`"ok"`, an error's kind, how far
    /// a walk got): an input whose label is new joins the corpus.
    fn run(&self, input: &[u8]) -> String;
}

/// The kind of an error for an outcome label: its `Debug` text up to the
/// first field (`Truncated { offset: 4 }` → `Truncated`).
pub fn kind_of(error: &impl std::fmt::Debug) -> String {
    let text = format!("{error:?}");
    let end = text.find(|c: char| c == '(' || c == ' ' || c == '{').unwrap_or(text.len());
    text[..end].to_string()
}

/// A number from `random` that parsers meet at their edges: 0, 1, all ones,
/// the sign bits, powers of two and their neighbours, or anything.
pub fn boundary_value(random: &mut Rng) -> u64 {
    match random.below(8) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => [0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff][random.below(9)],
        4 => 1u64 << random.below(64),
        5 => (1u64 << random.below(64)).wrapping_sub(1),
        6 => random.below(64) as u64,
        _ => random.next_u64(),
    }
}
