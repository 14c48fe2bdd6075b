//! Reading a guest's console for `exec`: what the program printed between
//! `/init`'s markers (`lamina-exec: start` … `lamina-exec: exit N`, see
//! `user/init/init.c`), fed one console line at a time so that whoever
//! feeds it can also watch the clock. It only parses; it starts nothing.

use std::io::Write;

/// How `/init` runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleMode {
    /// Its output is the console itself.
    Console,
    /// Its output arrives as `lamina-exec: out|err BASE64` lines; any other
    /// console line (a kernel message) is not the program's.
    Piped,
}

/// What happens to what the program writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// To xtask's stdout (and stderr, for a piped program) as it comes.
    Stream,
    /// Kept in [`Followed`].
    Capture,
}

/// What the console said between the markers (so far).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Followed {
    pub output: Vec<u8>,
    pub errors: Vec<u8>,
    pub exit_code: Option<i32>,
}

const MARKER: &str = "lamina-exec: ";

/// Takes console lines: drops everything before `lamina-exec: start`, then
/// the program's output (as `mode` says it comes) up to
/// `lamina-exec: exit N`, streaming or capturing it. A piped stream line
/// that does not decode is an error: bytes would be lost.
pub struct ConsoleFollower {
    mode: ConsoleMode,
    output: Output,
    started: bool,
    pub followed: Followed,
}

impl ConsoleFollower {
    pub fn new(mode: ConsoleMode, output: Output) -> Self {
        ConsoleFollower { mode, output, started: false, followed: Followed::default() }
    }

    /// Whether the exit marker has been seen.
    pub fn finished(&self) -> bool {
        self.followed.exit_code.is_some()
    }

    /// One console line, with its line end if it had one.
    pub fn feed(&mut self, raw: &[u8]) -> Result<(), String> {
        if self.finished() {
            return Ok(());
        }
        let mut line = raw.to_vec();
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            line.push(b'\n');
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        let trimmed = text.trim_end();
        if !self.started {
            self.started = trimmed.ends_with("lamina-exec: start");
            return Ok(());
        }
        let marker = trimmed.find(MARKER);
        if let Some(code) = marker.and_then(|position| trimmed[position + MARKER.len()..].strip_prefix("exit ")) {
            if self.mode == ConsoleMode::Console {
                self.pass_on(false, &line[..marker.unwrap_or(0)]);
            }
            // An unreadable status still ends the program; -1 says so.
            self.followed.exit_code = Some(code.trim().parse().unwrap_or(-1));
            return Ok(());
        }
        match self.mode {
            ConsoleMode::Console => self.pass_on(false, &line),
            ConsoleMode::Piped => {
                let Some(position) = marker else { return Ok(()) };
                let rest = &trimmed[position + MARKER.len()..];
                let (to_errors, encoded) = match (rest.strip_prefix("out "), rest.strip_prefix("err ")) {
                    (Some(encoded), _) => (false, encoded),
                    (_, Some(encoded)) => (true, encoded),
                    _ => return Ok(()),
                };
                let bytes = decode_base64(encoded).ok_or_else(|| format!("a garbled output line on the console: {trimmed}"))?;
                self.pass_on(to_errors, &bytes);
            }
        }
        Ok(())
    }

    fn pass_on(&mut self, to_errors: bool, bytes: &[u8]) {
        match (self.output, to_errors) {
            (Output::Capture, false) => self.followed.output.extend_from_slice(bytes),
            (Output::Capture, true) => self.followed.errors.extend_from_slice(bytes),
            (Output::Stream, false) => {
                let mut out = std::io::stdout();
                let _ = out.write_all(bytes);
                let _ = out.flush();
            }
            (Output::Stream, true) => {
                let mut err = std::io::stderr();
                let _ = err.write_all(bytes);
                let _ = err.flush();
            }
        }
    }
}

/// Standard base64 (with `=` padding); `None` for anything else.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |byte: u8| match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut decoded = Vec::with_capacity(bytes.len() / 4 * 3);
    for (index, group) in bytes.chunks(4).enumerate() {
        let last = index + 1 == bytes.len() / 4;
        let padding = group.iter().rev().take_while(|&&byte| byte == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut word = 0u32;
        for &byte in &group[..4 - padding] {
            word = (word << 6) | u32::from(value(byte)?);
        }
        word <<= 6 * padding as u32;
        let three = [(word >> 16) as u8, (word >> 8) as u8, word as u8];
        decoded.extend_from_slice(&three[..3 - padding]);
    }
    Some(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follow_console(console: &[u8], mode: ConsoleMode) -> Result<Followed, String> {
        let mut follower = ConsoleFollower::new(mode, Output::Capture);
        for line in console.split_inclusive(|&byte| byte == b'\n') {
            follower.feed(line)?;
        }
        Ok(follower.followed)
    }

    #[test]
    fn the_console_is_read_between_the_markers() {
        let console = b"Lamina 0.1.0\r\nlamina-exec: start\r\nhello\r\nworld\nlamina-exec: exit 3\r\nafter\r\n";
        let followed = follow_console(&console[..], ConsoleMode::Console).unwrap();
        assert_eq!((followed.output.as_slice(), followed.exit_code), (&b"hello\nworld\n"[..], Some(3)));
        let unfinished = b"lamina-exec: start\npartial";
        let followed = follow_console(&unfinished[..], ConsoleMode::Console).unwrap();
        assert_eq!((followed.output.as_slice(), followed.exit_code), (&b"partial"[..], None));
    }

    #[test]
    fn piped_streams_are_decoded_apart_and_other_console_lines_ignored() {
        let console = b"boot noise\r\nlamina-exec: start\r\nlamina-exec: out aGVs\r\n[ 1.0] a kernel message\r\n\
lamina-exec: err ZXJy\nlamina-exec: out bG8K\nlamina-exec: out AA==\nlamina-exec: exit 7\n";
        let followed = follow_console(&console[..], ConsoleMode::Piped).unwrap();
        assert_eq!(followed, Followed { output: b"hello\n\0".to_vec(), errors: b"err".to_vec(), exit_code: Some(7) });
        let garbled = b"lamina-exec: start\nlamina-exec: out aGV[x\n";
        assert!(follow_console(&garbled[..], ConsoleMode::Piped).is_err());
    }

    #[test]
    fn base64_decodes_every_length_and_refuses_bad_text() {
        let cases: &[(&str, &[u8])] = &[("", b""), ("AA==", b"\0"), ("AAE=", b"\0\x01"), ("/+8A", b"\xff\xef\0"), ("aGVsbG8K", b"hello\n")];
        for (text, bytes) in cases {
            assert_eq!(decode_base64(text).as_deref(), Some(*bytes), "{text}");
        }
        for bad in ["A", "AA=A", "A===", "AA==AAAA", "A*AA"] {
            assert_eq!(decode_base64(bad), None, "{bad}");
        }
    }
}
