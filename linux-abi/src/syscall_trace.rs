//! System-call trace records (`cargo xtask exec --trace FILE`, see
//! `docs/tracing.md`): the bounded log the kernel keeps them in, the text
//! line each becomes, and the parser the host reads that line back with.
//!
//! A line is `<start> <end> <pid> <tid> <name> <ret> <a0> <a1> <a2> [<path>]`:
//! times and ids in decimal, the call's Linux name (`sys_N` for a number
//! Linux does not have), the result as signed decimal (`-errno` for an
//! error), the first three arguments in hex, and for calls that name a
//! path the path string with every byte outside printable ASCII, a space
//! and a backslash written `\xNN` (so `a b` is `a\x20b`).
//!
//! Must never panic or grow without bound: a full log counts what it drops,
//! a malformed line is an error value.

use alloc::collections::TryReserveError;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::Sysno;

/// Longest path a record keeps (longer ones are left out of the record).
pub const MAX_TRACE_PATH: usize = 255;

/// One finished system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRecord<'a> {
    /// The clock (guest instructions under icount) at entry.
    pub start: u64,
    /// The clock at exit.
    pub end: u64,
    /// The calling process.
    pub pid: u32,
    /// The calling thread.
    pub tid: u32,
    /// The number from `rax`.
    pub number: u64,
    /// What the call returned (`-errno` for an error).
    pub result: i64,
    /// `rdi`, `rsi`, `rdx`.
    pub arguments: [u64; 3],
    /// The path the call named, for the calls [`path_argument`] knows;
    /// never empty.
    pub path: Option<&'a [u8]>,
}

/// Which argument (0 or 1) of call `number` is a path, if one is.
pub fn path_argument(number: u64) -> Option<usize> {
    use Sysno::*;
    match Sysno::from_number(number)? {
        open | stat | lstat | access | unlink | mkdir | rename | chdir | execve | readlink | rmdir | creat | truncate | chmod => Some(0),
        openat | newfstatat | statx | faccessat | faccessat2 | unlinkat | mkdirat | renameat | renameat2 | readlinkat | execveat | fchmodat => Some(1),
        _ => None,
    }
}

/// The name a line gives call `number`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallName(pub u64);

impl fmt::Display for CallName {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Sysno::from_number(self.0) {
            Some(call) => out.write_str(call.name()),
            None => write!(out, "sys_{}", self.0),
        }
    }
}

/// A path as a line writes it (see the module comment).
pub struct EscapedPath<'a>(pub &'a [u8]);

impl fmt::Display for EscapedPath<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &byte in self.0 {
            if byte.is_ascii_graphic() && byte != b'\\' {
                fmt::Write::write_char(out, char::from(byte))?;
            } else {
                write!(out, "\\x{byte:02x}")?;
            }
        }
        Ok(())
    }
}

/// The fields of a line, whichever side holds them.
struct LineFields<'a> {
    times: (u64, u64),
    ids: (u32, u32),
    name: &'a dyn fmt::Display,
    result: i64,
    arguments: [u64; 3],
    path: Option<&'a [u8]>,
}

impl fmt::Display for LineFields<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [first, second, third] = self.arguments;
        write!(out, "{} {} {} {} {} {} {first:#x} {second:#x} {third:#x}", self.times.0, self.times.1, self.ids.0, self.ids.1, self.name, self.result)?;
        match self.path {
            Some(path) => write!(out, " {}", EscapedPath(path)),
            None => Ok(()),
        }
    }
}

impl fmt::Display for TraceRecord<'_> {
    /// The record's line, without a line end.
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = CallName(self.number);
        LineFields { times: (self.start, self.end), ids: (self.pid, self.tid), name: &name, result: self.result, arguments: self.arguments, path: self.path }.fmt(out)
    }
}

/// Bytes a record takes in the log before its path.
const HEADER_BYTES: usize = 8 * 7 + 4 * 2 + 2;
/// The path length a record without a path stores.
const NO_PATH: u16 = u16::MAX;

/// Whether [`TraceLog::push`] kept the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The log holds it.
    Stored,
    /// The log was full: the record is counted in [`TraceLog::dropped`].
    Dropped,
}

/// Records in a byte buffer of a capacity fixed when the log is made:
/// it never grows; once full, further records are counted and dropped.
#[derive(Debug)]
pub struct TraceLog {
    bytes: Vec<u8>,
    stored: u64,
    dropped: u64,
}

impl TraceLog {
    /// A log of at least `capacity` bytes, allocated now (the only
    /// allocation it makes).
    pub fn new(capacity: usize) -> Result<Self, TryReserveError> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(capacity)?;
        Ok(TraceLog { bytes, stored: 0, dropped: 0 })
    }

    /// Keeps `record` if it fits; a path longer than [`MAX_TRACE_PATH`]
    /// is left out.
    pub fn push(&mut self, record: &TraceRecord<'_>) -> Pushed {
        let path = record.path.filter(|path| !path.is_empty() && path.len() <= MAX_TRACE_PATH);
        let size = HEADER_BYTES + path.map_or(0, <[u8]>::len);
        if self.bytes.capacity() - self.bytes.len() < size {
            self.dropped += 1;
            return Pushed::Dropped;
        }
        for word in [record.start, record.end, record.number, record.result as u64, record.arguments[0], record.arguments[1], record.arguments[2]] {
            self.bytes.extend_from_slice(&word.to_le_bytes());
        }
        self.bytes.extend_from_slice(&record.pid.to_le_bytes());
        self.bytes.extend_from_slice(&record.tid.to_le_bytes());
        let length = path.map_or(NO_PATH, |path| path.len() as u16);
        self.bytes.extend_from_slice(&length.to_le_bytes());
        self.bytes.extend_from_slice(path.unwrap_or_default());
        self.stored += 1;
        Pushed::Stored
    }

    /// How many records the log holds.
    pub fn stored(&self) -> u64 {
        self.stored
    }

    /// How many records did not fit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The records, in the order they were pushed.
    pub fn records(&self) -> TraceRecords<'_> {
        TraceRecords { rest: &self.bytes }
    }
}

/// The records of a [`TraceLog`].
pub struct TraceRecords<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for TraceRecords<'a> {
    type Item = TraceRecord<'a>;

    fn next(&mut self) -> Option<TraceRecord<'a>> {
        let mut reader = LogReader { rest: self.rest };
        let mut words = [0u64; 7];
        for word in &mut words {
            *word = reader.word()?;
        }
        let (pid, tid, length) = (reader.half()?, reader.half()?, reader.length()?);
        let path = match length {
            NO_PATH => None,
            length => Some(reader.take(usize::from(length))?),
        };
        self.rest = reader.rest;
        let [start, end, number, result, first, second, third] = words;
        Some(TraceRecord { start, end, pid, tid, number, result: result as i64, arguments: [first, second, third], path })
    }
}

/// Reads a log's little-endian fields; `None` past the end.
struct LogReader<'a> {
    rest: &'a [u8],
}

impl<'a> LogReader<'a> {
    fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        if self.rest.len() < count {
            return None;
        }
        let (taken, rest) = self.rest.split_at(count);
        self.rest = rest;
        Some(taken)
    }

    fn word(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn half(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn length(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
}

/// A line read back on the host (names are kept as text: a trace may come
/// from another kernel version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLine {
    /// The clock at entry.
    pub start: u64,
    /// The clock at exit.
    pub end: u64,
    /// The calling process.
    pub pid: u32,
    /// The calling thread.
    pub tid: u32,
    /// The call's name (`sys_N` for a number Linux does not have).
    pub name: String,
    /// What the call returned.
    pub result: i64,
    /// The first three arguments.
    pub arguments: [u64; 3],
    /// The path the call named, if it names one.
    pub path: Option<Vec<u8>>,
}

impl fmt::Display for TraceLine {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        LineFields { times: (self.start, self.end), ids: (self.pid, self.tid), name: &self.name, result: self.result, arguments: self.arguments, path: self.path.as_deref() }.fmt(out)
    }
}

/// What is wrong with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceLineError {
    /// The field is missing.
    Missing(&'static str),
    /// The field is not a number of its kind.
    Malformed(&'static str),
    /// An escape in the path is not `\xNN`.
    BadEscape,
    /// Something follows the path.
    TooManyFields,
    /// The call ends before it starts.
    EndBeforeStart,
}

impl fmt::Display for TraceLineError {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceLineError::Missing(field) => write!(out, "no {field}"),
            TraceLineError::Malformed(field) => write!(out, "a malformed {field}"),
            TraceLineError::BadEscape => out.write_str("a path escape that is not \\xNN"),
            TraceLineError::TooManyFields => out.write_str("fields after the path"),
            TraceLineError::EndBeforeStart => out.write_str("an end before the start"),
        }
    }
}

/// Reads one line (without its line end).
pub fn parse_line(line: &str) -> Result<TraceLine, TraceLineError> {
    let mut fields = line.split(' ');
    let mut field = |name: &'static str| fields.next().filter(|text| !text.is_empty()).ok_or(TraceLineError::Missing(name));
    let start = decimal(field("start")?, "start")?;
    let end = decimal(field("end")?, "end")?;
    let pid = decimal(field("pid")?, "pid")?;
    let tid = decimal(field("tid")?, "tid")?;
    let name = String::from(field("name")?);
    let result = field("result")?.parse().map_err(|_| TraceLineError::Malformed("result"))?;
    let arguments = [hex(field("a0")?, "a0")?, hex(field("a1")?, "a1")?, hex(field("a2")?, "a2")?];
    let path = fields.next().map(unescape_path).transpose()?;
    if fields.next().is_some() {
        return Err(TraceLineError::TooManyFields);
    }
    if end < start {
        return Err(TraceLineError::EndBeforeStart);
    }
    Ok(TraceLine { start, end, pid, tid, name, result, arguments, path })
}

fn decimal<T: core::str::FromStr>(text: &str, field: &'static str) -> Result<T, TraceLineError> {
    match text.bytes().all(|byte| byte.is_ascii_digit()) {
        true => text.parse().map_err(|_| TraceLineError::Malformed(field)),
        false => Err(TraceLineError::Malformed(field)),
    }
}

fn hex(text: &str, field: &'static str) -> Result<u64, TraceLineError> {
    let digits = text.strip_prefix("0x").ok_or(TraceLineError::Malformed(field))?;
    match digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        true => u64::from_str_radix(digits, 16).map_err(|_| TraceLineError::Malformed(field)),
        false => Err(TraceLineError::Malformed(field)),
    }
}

/// The bytes of an escaped path (the inverse of [`EscapedPath`]).
pub fn unescape_path(text: &str) -> Result<Vec<u8>, TraceLineError> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        rest = after;
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        let escape = rest.get(..3).ok_or(TraceLineError::BadEscape)?;
        let digits = escape.strip_prefix(b"x").and_then(|digits| core::str::from_utf8(digits).ok()).ok_or(TraceLineError::BadEscape)?;
        if !digits.bytes().all(|digit| digit.is_ascii_hexdigit()) {
            return Err(TraceLineError::BadEscape);
        }
        bytes.push(u8::from_str_radix(digits, 16).map_err(|_| TraceLineError::BadEscape)?);
        rest = &rest[3..];
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;

    fn record(path: Option<&[u8]>) -> TraceRecord<'_> {
        TraceRecord { start: 100, end: 250, pid: 2, tid: 3, number: Sysno::openat.number(), result: -2, arguments: [0xffff_ff9c, 0x0040_0010, 0], path }
    }

    #[test]
    fn a_record_is_written_as_its_line() {
        assert_eq!(record(Some(b"/tmp/a b\\c")).to_string(), "100 250 2 3 openat -2 0xffffff9c 0x400010 0x0 /tmp/a\\x20b\\x5cc");
        assert_eq!(record(None).to_string(), "100 250 2 3 openat -2 0xffffff9c 0x400010 0x0");
        let native = TraceRecord { number: 0x4c01, ..record(None) };
        assert!(native.to_string().contains(" sys_19457 "), "{native}");
    }

    #[test]
    fn a_line_reads_back_as_it_was_written() {
        for path in [None, Some(&b"/tmp/x y"[..]), Some(&b"\x01\xff\n"[..])] {
            let line = parse_line(&record(path).to_string()).unwrap();
            assert_eq!((line.start, line.end, line.pid, line.tid, line.result), (100, 250, 2, 3, -2));
            assert_eq!((line.name.as_str(), line.arguments, line.path.as_deref()), ("openat", [0xffff_ff9c, 0x0040_0010, 0], path));
            assert_eq!(line.to_string(), record(path).to_string());
        }
    }

    #[test]
    fn malformed_lines_are_errors_that_say_what_is_wrong() {
        let cases: &[(&str, TraceLineError)] = &[
            ("", TraceLineError::Missing("start")),
            ("1 2 3 4 read 0 0x0 0x1", TraceLineError::Missing("a2")),
            ("1 2 3 4 read 0 0x0 0x1 0x2 /a /b", TraceLineError::TooManyFields),
            ("x 2 3 4 read 0 0x0 0x1 0x2", TraceLineError::Malformed("start")),
            ("-1 2 3 4 read 0 0x0 0x1 0x2", TraceLineError::Malformed("start")),
            ("1 2 3 4 read zero 0x0 0x1 0x2", TraceLineError::Malformed("result")),
            ("1 2 3 4 read 0 12 0x1 0x2", TraceLineError::Malformed("a0")),
            ("1 2 3 4 read 0 0x0 0x1 0x2g", TraceLineError::Malformed("a2")),
            ("1 2 3 4 read 0 0x0 0x1 0x10000000000000000", TraceLineError::Malformed("a2")),
            ("1 2 3 99999999999 read 0 0x0 0x1 0x2", TraceLineError::Malformed("tid")),
            ("5 2 3 4 read 0 0x0 0x1 0x2", TraceLineError::EndBeforeStart),
            ("1 2 3 4 open 0 0x0 0x1 0x2 /a\\x2", TraceLineError::BadEscape),
            ("1 2 3 4 open 0 0x0 0x1 0x2 /a\\n00", TraceLineError::BadEscape),
            ("1 2 3 4 open 0 0x0 0x1 0x2 /a\\x+1", TraceLineError::BadEscape),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_line(line), Err(*expected), "{line:?}");
            assert!(!format!("{expected}").is_empty());
        }
    }

    #[test]
    fn the_log_keeps_records_in_order_and_counts_what_does_not_fit() {
        let mut log = TraceLog::new(3 * HEADER_BYTES + 4).unwrap();
        let capacity = log.bytes.capacity();
        assert_eq!(log.push(&record(Some(b"/tmp"))), Pushed::Stored);
        assert_eq!(log.push(&TraceRecord { start: 7, ..record(None) }), Pushed::Stored);
        let mut pushed = 2;
        while log.push(&record(None)) == Pushed::Stored {
            pushed += 1;
        }
        assert_eq!(log.push(&record(Some(b"/x"))), Pushed::Dropped);
        assert_eq!((log.stored(), log.dropped(), log.bytes.capacity()), (pushed, 2, capacity));
        let records: Vec<TraceRecord<'_>> = log.records().collect();
        assert_eq!(records.len() as u64, pushed);
        assert_eq!((records[0], records[1]), (record(Some(b"/tmp")), TraceRecord { start: 7, ..record(None) }));
    }

    #[test]
    fn empty_and_overlong_paths_are_left_out() {
        let mut log = TraceLog::new(4096).unwrap();
        let long = [b'a'; MAX_TRACE_PATH + 1];
        log.push(&record(Some(b"")));
        log.push(&record(Some(&long)));
        log.push(&record(Some(&long[..MAX_TRACE_PATH])));
        let paths: Vec<Option<usize>> = log.records().map(|record| record.path.map(<[u8]>::len)).collect();
        assert_eq!(paths, [None, None, Some(MAX_TRACE_PATH)]);
    }

    #[test]
    fn path_calls_name_the_argument_that_holds_the_path() {
        assert_eq!(path_argument(Sysno::open.number()), Some(0));
        assert_eq!(path_argument(Sysno::execve.number()), Some(0));
        assert_eq!(path_argument(Sysno::newfstatat.number()), Some(1));
        assert_eq!(path_argument(Sysno::readlinkat.number()), Some(1));
        assert_eq!(path_argument(Sysno::read.number()), None);
        assert_eq!(path_argument(0x4c01), None);
    }
}
