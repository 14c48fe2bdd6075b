//! Word-at-a-time operations on an array of bits stored in `u64` words.
//!
//! Bit `i` is bit `i % 64` of word `i / 64`. Runs of bits are handled one word
//! at a time with masks, so scanning skips 64 bits per step.

const WORD_BITS: u64 = u64::BITS as u64;

/// The bits `low..high` of a word set, the others clear. Needs `low < high <= 64`.
fn mask_between(low: u64, high: u64) -> u64 {
    let below_high = if high == WORD_BITS {
        u64::MAX
    } else {
        (1 << high) - 1
    };
    let below_low = (1 << low) - 1;
    below_high & !below_low
}

/// The words holding the bits `start..end`, each with the mask of those bits.
fn segments(start: u64, end: u64) -> impl Iterator<Item = (usize, u64)> {
    let mut bit = start;
    core::iter::from_fn(move || {
        if bit >= end {
            return None;
        }
        let word_start = bit - bit % WORD_BITS;
        let high = (end - word_start).min(WORD_BITS);
        let mask = mask_between(bit % WORD_BITS, high);
        bit = word_start + high;
        // The word index is below the slice length, itself a usize.
        Some(((word_start / WORD_BITS) as usize, mask))
    })
}

/// A bit array over borrowed words.
pub(crate) struct BitArray<'a> {
    words: &'a mut [u64],
}

impl<'a> BitArray<'a> {
    pub(crate) fn new(words: &'a mut [u64]) -> Self {
        Self { words }
    }

    /// Number of bits, saturated at `u64::MAX` (unreachable with real memory).
    pub(crate) fn bit_count(&self) -> u64 {
        (self.words.len() as u64).saturating_mul(WORD_BITS)
    }

    pub(crate) fn word_count(&self) -> usize {
        self.words.len()
    }

    /// The index of the word holding `bit`.
    pub(crate) fn word_of(bit: u64) -> usize {
        (bit / WORD_BITS) as usize
    }

    /// The index of the first bit of word `word`.
    pub(crate) fn first_bit_of(word: usize) -> u64 {
        word as u64 * WORD_BITS
    }

    pub(crate) fn set_all(&mut self) {
        self.words.fill(u64::MAX);
    }

    pub(crate) fn is_set(&self, bit: u64) -> bool {
        self.words[Self::word_of(bit)] & (1 << (bit % WORD_BITS)) != 0
    }

    /// The first clear bit in word `from_word` or after, skipping full words.
    pub(crate) fn first_clear_from_word(&self, from_word: usize) -> Option<u64> {
        let words = self.words.get(from_word..)?;
        let offset = words.iter().position(|&word| word != u64::MAX)?;
        let word = from_word + offset;
        Some(Self::first_bit_of(word) + u64::from(self.words[word].trailing_ones()))
    }

    /// The first set bit in `start..end`.
    pub(crate) fn first_set_in(&self, start: u64, end: u64) -> Option<u64> {
        self.first_matching(start, end, |word| word)
    }

    /// The first clear bit in `start..end`.
    pub(crate) fn first_clear_in(&self, start: u64, end: u64) -> Option<u64> {
        self.first_matching(start, end, |word| !word)
    }

    /// True when every bit in `start..end` is set.
    pub(crate) fn all_set(&self, start: u64, end: u64) -> bool {
        self.first_clear_in(start, end).is_none()
    }

    pub(crate) fn set_range(&mut self, start: u64, end: u64) {
        for (word, mask) in segments(start, end) {
            self.words[word] |= mask;
        }
    }

    pub(crate) fn clear_range(&mut self, start: u64, end: u64) {
        for (word, mask) in segments(start, end) {
            self.words[word] &= !mask;
        }
    }

    /// The first bit in `start..end` whose bit in `select(word)` is set.
    fn first_matching(&self, start: u64, end: u64, select: impl Fn(u64) -> u64) -> Option<u64> {
        segments(start, end).find_map(|(word, mask)| {
            let hits = select(self.words[word]) & mask;
            (hits != 0).then(|| Self::first_bit_of(word) + u64::from(hits.trailing_zeros()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_between_covers_word_edges() {
        assert_eq!(mask_between(0, 64), u64::MAX);
        assert_eq!(mask_between(0, 1), 1);
        assert_eq!(mask_between(63, 64), 1 << 63);
        assert_eq!(mask_between(4, 8), 0xf0);
    }

    #[test]
    fn segments_split_a_run_at_word_boundaries() {
        let mut seen = [(0usize, 0u64); 3];
        let mut count = 0;
        for segment in segments(60, 140) {
            seen[count] = segment;
            count += 1;
        }
        assert_eq!(count, 3);
        assert_eq!(
            seen,
            [
                (0, mask_between(60, 64)),
                (1, u64::MAX),
                (2, mask_between(0, 12))
            ]
        );
        assert_eq!(segments(5, 5).count(), 0);
        assert_eq!(segments(9, 3).count(), 0);
    }

    #[test]
    fn set_and_clear_ranges_touch_only_their_bits() {
        let mut words = [0u64; 3];
        let mut bits = BitArray::new(&mut words);
        bits.set_range(62, 130);
        assert_eq!(bits.first_set_in(0, 192), Some(62));
        assert_eq!(bits.first_clear_in(62, 192), Some(130));
        assert!(bits.all_set(62, 130));
        assert!(!bits.all_set(61, 130));
        bits.clear_range(64, 128);
        assert_eq!(bits.first_clear_in(62, 192), Some(64));
        assert!(bits.is_set(63) && !bits.is_set(64) && bits.is_set(128));
    }

    #[test]
    fn first_clear_from_word_skips_full_words() {
        let mut words = [u64::MAX, u64::MAX, !(1 << 7), u64::MAX];
        let bits = BitArray::new(&mut words);
        assert_eq!(bits.first_clear_from_word(0), Some(2 * 64 + 7));
        assert_eq!(bits.first_clear_from_word(3), None);
        assert_eq!(bits.first_clear_from_word(4), None);
        assert_eq!(bits.first_clear_from_word(9), None);
    }
}
