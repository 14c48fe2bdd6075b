//! System-call traces recorded on Lamina (`cargo xtask exec --trace FILE`):
//! one line per call, `start end pid tid name ret a0 a1 a2 [path]`, times
//! in guest instructions, arguments in hex, `#` lines for comments.
//!
//! Must refuse a malformed line with its number, never panic on one; the
//! line itself is read by the tracer's parser, `linux_abi::syscall_trace`.

use linux_abi::syscall_trace::parse_line;

/// One system call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Instruction count at entry and at exit.
    pub start: u64,
    pub end: u64,
    pub pid: u32,
    pub tid: u32,
    /// The Linux name (`openat`), or `sys_N`.
    pub name: String,
    /// The result (a negative errno on failure).
    pub ret: i64,
    /// The first three arguments.
    pub args: [u64; 3],
    /// The path argument of calls that take one (unescaped).
    pub path: Option<String>,
}

/// A whole trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Its comment lines (what was traced, on which commit).
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

/// A line through the tracer's own parser (`linux_abi::syscall_trace`).
fn record(line: &str) -> Result<Record, String> {
    let line = parse_line(line).map_err(|error| error.to_string())?;
    let path = line.path.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    Ok(Record { start: line.start, end: line.end, pid: line.pid, tid: line.tid, name: line.name, ret: line.result, args: line.arguments, path })
}

/// Parses a trace file.
pub fn parse(text: &str) -> Result<Trace, String> {
    let mut trace = Trace { comments: Vec::new(), records: Vec::new() };
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            trace.comments.push(comment.trim().to_string());
        } else if !line.is_empty() {
            trace.records.push(record(line).map_err(|error| format!("trace line {}: {error}", number + 1))?);
        }
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_records() {
        let trace = parse("# trace of tar cf\n10 30 7 7 openat 3 0xffffffffffffff9c 0x7ffe10 0x0 /tmp/a\\x20b\n40 41 7 7 close 0 0x3 0x0 0x0\n").unwrap();
        assert_eq!(trace.comments, ["trace of tar cf"]);
        assert_eq!(trace.records.len(), 2);
        let open = &trace.records[0];
        assert_eq!((open.start, open.end, open.ret, open.path.as_deref()), (10, 30, 3, Some("/tmp/a b")));
        assert_eq!(open.args[0], (-100i64) as u64);
        assert_eq!(trace.records[1].path, None);
    }

    #[test]
    fn malformed_lines_are_refused_with_their_number() {
        for bad in ["10 30 7 7 openat", "10 x 7 7 close 0 0x3 0x0 0x0", "10 30 7 7 close 0 3 0x0 0x0", "30 10 7 7 close 0 0x3 0x0 0x0", "1 2 3 4 n 0 0x0 0x0 0x0 p extra"] {
            let error = parse(&format!("# ok\n{bad}\n")).unwrap_err();
            assert!(error.starts_with("trace line 2:"), "{bad}: {error}");
        }
    }
}
