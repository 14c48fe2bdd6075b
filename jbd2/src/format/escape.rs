//! Escaping: a data block that starts with the journal magic is logged
//! with its first four bytes zeroed and its tag flagged `ESCAPE`, so that
//! recovery never mistakes it for a metadata block; replay puts the magic
//! back. **Must never** change any byte but the first four.

use crate::big_endian::{be32, put_be32};
use crate::format::header::JOURNAL_MAGIC;

/// Whether `data` must be escaped before it goes into the log.
pub fn needs_escape(data: &[u8]) -> bool {
    be32(data, 0) == JOURNAL_MAGIC
}

/// Zeroes the magic at the start of a block that [`needs_escape`].
pub fn escape(logged: &mut [u8]) {
    put_be32(logged, 0, 0);
}

/// Restores the magic at the start of a block logged escaped.
pub fn unescape(logged: &mut [u8]) {
    put_be32(logged, 0, JOURNAL_MAGIC);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_and_unescape_touch_only_the_magic() {
        let mut block = [0xC0, 0x3B, 0x39, 0x98, 1, 2, 3];
        assert!(needs_escape(&block));
        escape(&mut block);
        assert_eq!(block, [0, 0, 0, 0, 1, 2, 3]);
        assert!(!needs_escape(&block));
        unescape(&mut block);
        assert_eq!(block, [0xC0, 0x3B, 0x39, 0x98, 1, 2, 3]);
    }
}
