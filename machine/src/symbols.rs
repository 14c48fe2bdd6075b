//! The kernel symbol table used to symbolize backtraces.
//!
//! The linker reserves a zero-filled, loaded `.ksyms` section in the kernel
//! image; after linking, `xtask` writes a table made by [`encode`] into it, so
//! the running kernel can name the functions in a backtrace without any
//! debugging information loaded. This module only parses bytes: a missing or
//! malformed table is reported as `None`, never trusted.
//!
//! Layout (little-endian):
//! `MAGIC` (8 bytes), entry count (u32), string-table offset from the start
//! of the blob (u32), then `count` entries of 24 bytes
//! `{address: u64, size: u32, name_offset: u32, name_length: u32, reserved: u32}`
//! sorted by address, then the string table (UTF-8 names, demangled).

extern crate alloc;
use alloc::vec::Vec;

use crate::bytes::{u32_at as read_u32, u64_at as read_u64};

/// First bytes of a valid table.
pub const MAGIC: &[u8; 8] = b"LKSYMS01";
const HEADER_LEN: usize = 16;
const ENTRY_LEN: usize = 24;

/// One function symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol<'a> {
    pub address: u64,
    pub size: u32,
    pub name: &'a str,
}

/// A validated view of an encoded symbol table.
#[derive(Debug, Clone, Copy)]
pub struct SymbolTable<'a> {
    blob: &'a [u8],
    count: usize,
    strings: &'a [u8],
}

impl<'a> SymbolTable<'a> {
    /// Checks the header and bounds; `None` if `blob` holds no valid table.
    pub fn parse(blob: &'a [u8]) -> Option<Self> {
        if blob.get(..8)? != MAGIC {
            return None;
        }
        let count = read_u32(blob, 8)? as usize;
        let strings_at = read_u32(blob, 12)? as usize;
        let entries_end = HEADER_LEN.checked_add(count.checked_mul(ENTRY_LEN)?)?;
        if strings_at < entries_end || strings_at > blob.len() {
            return None;
        }
        Some(Self { blob, count, strings: &blob[strings_at..] })
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the table holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The `index`th symbol in address order; `None` if out of range or its
    /// name lies outside the string table or is not UTF-8.
    pub fn get(&self, index: usize) -> Option<Symbol<'a>> {
        if index >= self.count {
            return None;
        }
        let at = HEADER_LEN + index * ENTRY_LEN;
        let address = read_u64(self.blob, at)?;
        let size = read_u32(self.blob, at + 8)?;
        let name_at = read_u32(self.blob, at + 12)? as usize;
        let name_len = read_u32(self.blob, at + 16)? as usize;
        let name_bytes = self.strings.get(name_at..name_at.checked_add(name_len)?)?;
        let name = core::str::from_utf8(name_bytes).ok()?;
        Some(Symbol { address, size, name })
    }

    /// The symbol containing `address` and the offset into it. A symbol of
    /// size 0 is taken to extend to the next symbol.
    pub fn lookup(&self, address: u64) -> Option<(Symbol<'a>, u64)> {
        // Binary search for the last symbol starting at or below `address`.
        let (mut low, mut high) = (0usize, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.get(middle)?.address <= address {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let symbol = self.get(low.checked_sub(1)?)?;
        let offset = address - symbol.address;
        let inside = symbol.size == 0 || offset < u64::from(symbol.size);
        inside.then_some((symbol, offset))
    }
}

/// Builds a table from `(address, size, name)` triples (any order).
pub fn encode(symbols: &[(u64, u32, &str)]) -> Vec<u8> {
    let mut sorted: Vec<&(u64, u32, &str)> = symbols.iter().collect();
    sorted.sort_by_key(|symbol| symbol.0);
    let strings_at = HEADER_LEN + sorted.len() * ENTRY_LEN;
    let mut blob = Vec::with_capacity(strings_at);
    blob.extend_from_slice(MAGIC);
    blob.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    blob.extend_from_slice(&(strings_at as u32).to_le_bytes());
    let mut strings = Vec::new();
    for (address, size, name) in sorted {
        blob.extend_from_slice(&address.to_le_bytes());
        blob.extend_from_slice(&size.to_le_bytes());
        blob.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        blob.extend_from_slice(&(name.len() as u32).to_le_bytes());
        blob.extend_from_slice(&0u32.to_le_bytes());
        strings.extend_from_slice(name.as_bytes());
    }
    blob.extend_from_slice(&strings);
    blob
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_the_enclosing_symbol() {
        let blob = encode(&[(0x2000, 0x10, "b"), (0x1000, 0x100, "a"), (0x3000, 0, "c")]);
        let table = SymbolTable::parse(&blob).expect("valid table");
        assert_eq!(table.len(), 3);
        let (symbol, offset) = table.lookup(0x1010).expect("inside a");
        assert_eq!((symbol.name, offset), ("a", 0x10));
        assert!(table.lookup(0x1100).is_none(), "past the end of a");
        assert!(table.lookup(0x0fff).is_none(), "below the first symbol");
        assert_eq!(table.lookup(0x2000).map(|(s, _)| s.name), Some("b"));
        assert_eq!(table.lookup(0x9999).map(|(s, o)| (s.name, o)), Some(("c", 0x6999)));
    }

    #[test]
    fn malformed_tables_are_refused() {
        assert!(SymbolTable::parse(&[0u8; 64]).is_none(), "zero-filled section");
        let mut blob = encode(&[(0x1000, 4, "name")]);
        blob[8] = 200; // count far past the end
        assert!(SymbolTable::parse(&blob).is_none());
        let mut blob = encode(&[(0x1000, 4, "name")]);
        let name_len_at = HEADER_LEN + 16;
        blob[name_len_at] = 250; // name runs past the strings
        let table = SymbolTable::parse(&blob).expect("header still valid");
        assert!(table.get(0).is_none());
        assert!(table.lookup(0x1000).is_none());
    }
}
