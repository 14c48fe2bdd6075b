//! A terminal's line discipline as Linux's `N_TTY` behaves for a serial
//! console: `struct termios` and its defaults, canonical-mode line editing
//! (erase, kill line, word erase, end of file), the signal characters, raw
//! mode's `VMIN`, echo, and output's `\n` to `\r\n`. Plain state and
//! logic: the personality's `tty.rs` keeps one behind its lock, feeds it
//! received bytes and writes out what it says to echo.
//!
//! Must never panic on any byte or termios, nor grow without bound (a line
//! stops at 4095 bytes, raw input at 4096).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// `struct termios` (the kernel's, 36 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Termios {
    /// `c_iflag`.
    pub input: u32,
    /// `c_oflag`.
    pub output: u32,
    /// `c_cflag`.
    pub control: u32,
    /// `c_lflag`.
    pub local: u32,
    /// `c_line`.
    pub line: u8,
    /// `c_cc`.
    pub characters: [u8; 19],
}

/// The termios bits and character indexes the discipline uses.
#[allow(missing_docs)]
pub mod bits {
    pub const ICRNL: u32 = 0o400;
    pub const IXON: u32 = 0o2000;
    pub const OPOST: u32 = 0o1;
    pub const ONLCR: u32 = 0o4;
    pub const ISIG: u32 = 0o1;
    pub const ICANON: u32 = 0o2;
    pub const ECHO: u32 = 0o10;
    pub const ECHOE: u32 = 0o20;
    pub const ECHOK: u32 = 0o40;
    pub const ECHOCTL: u32 = 0o1000;
    pub const ECHOKE: u32 = 0o4000;
    pub const IEXTEN: u32 = 0o100000;
    pub const VINTR: usize = 0;
    pub const VQUIT: usize = 1;
    pub const VERASE: usize = 2;
    pub const VKILL: usize = 3;
    pub const VEOF: usize = 4;
    pub const VMIN: usize = 6;
    pub const VSUSP: usize = 10;
    pub const VWERASE: usize = 14;
}
use bits::*;

/// Bytes of `struct termios`.
pub const TERMIOS_BYTES: usize = 36;
/// The longest line canonical mode keeps (Linux's `N_TTY_BUF_SIZE - 1`).
pub const MAX_LINE: usize = 4095;
/// The most unread bytes raw mode keeps.
pub const MAX_RAW_INPUT: usize = 4096;

impl Termios {
    /// Linux's defaults for a serial console (`stty sane`).
    pub const fn sane() -> Self {
        let mut characters = [0u8; 19];
        characters[VINTR] = 3;
        characters[VQUIT] = 0x1c;
        characters[VERASE] = 0x7f;
        characters[VKILL] = 0x15;
        characters[VEOF] = 4;
        characters[VMIN] = 1;
        characters[8] = 0x11; // VSTART
        characters[9] = 0x13; // VSTOP
        characters[VSUSP] = 0x1a;
        characters[12] = 0x12; // VREPRINT
        characters[13] = 0x0f; // VDISCARD
        characters[VWERASE] = 0x17;
        characters[15] = 0x16; // VLNEXT
        Self {
            input: ICRNL | IXON,
            output: OPOST | ONLCR,
            control: 0o17 | 0o60 | 0o200 | 0o2000, // B38400 CS8 CREAD HUPCL
            local: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            line: 0,
            characters,
        }
    }

    /// The bytes of `struct termios`.
    pub fn to_bytes(&self) -> [u8; TERMIOS_BYTES] {
        let mut bytes = [0u8; TERMIOS_BYTES];
        for (index, word) in [self.input, self.output, self.control, self.local].into_iter().enumerate() {
            bytes[index * 4..index * 4 + 4].copy_from_slice(&word.to_le_bytes());
        }
        bytes[16] = self.line;
        bytes[17..36].copy_from_slice(&self.characters);
        bytes
    }

    /// Reads `struct termios`.
    pub fn from_bytes(bytes: &[u8; TERMIOS_BYTES]) -> Self {
        let word = |index: usize| u32::from_le_bytes([bytes[index * 4], bytes[index * 4 + 1], bytes[index * 4 + 2], bytes[index * 4 + 3]]);
        let mut characters = [0u8; 19];
        characters.copy_from_slice(&bytes[17..36]);
        Self { input: word(0), output: word(1), control: word(2), local: word(3), line: bytes[16], characters }
    }

    /// Whether output `\n` becomes `\r\n`.
    pub fn translates_newlines(&self) -> bool {
        self.output & (OPOST | ONLCR) == OPOST | ONLCR
    }

    fn canonical(&self) -> bool {
        self.local & ICANON != 0
    }
}

/// A signal character the discipline saw (the terminal sends the signal
/// to its foreground process group).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TerminalSignal {
    /// `VINTR` (^C): SIGINT.
    Interrupt,
    /// `VQUIT` (^\): SIGQUIT.
    Quit,
    /// `VSUSP` (^Z): SIGTSTP.
    Suspend,
}

/// What one received byte did.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct InputEffect {
    /// Bytes to echo to the terminal.
    pub echo: Vec<u8>,
    /// A signal for the foreground group.
    pub signal: Option<TerminalSignal>,
}

/// One terminal's line discipline.
#[derive(Debug)]
pub struct LineDiscipline {
    /// The settings.
    pub termios: Termios,
    /// The line being edited (canonical mode).
    line: Vec<u8>,
    /// Bytes ready for readers; `None` marks where `VEOF` ended a line (a
    /// delimiter that is not data; alone it reads as an end of file).
    ready: VecDeque<Option<u8>>,
}

const RUB_OUT: &[u8] = b"\x08 \x08";

impl LineDiscipline {
    /// A discipline with `termios` and no input.
    pub const fn new(termios: Termios) -> Self {
        Self { termios, line: Vec::new(), ready: VecDeque::new() }
    }

    /// Takes one received byte.
    pub fn input(&mut self, mut byte: u8) -> InputEffect {
        let mut effect = InputEffect::default();
        let termios = self.termios;
        let echoing = termios.local & ECHO != 0;
        if termios.input & ICRNL != 0 && byte == b'\r' {
            byte = b'\n';
        }
        let cc = termios.characters;
        let signal = match byte {
            0 => None,
            _ if byte == cc[VINTR] => Some(TerminalSignal::Interrupt),
            _ if byte == cc[VQUIT] => Some(TerminalSignal::Quit),
            _ if byte == cc[VSUSP] => Some(TerminalSignal::Suspend),
            _ => None,
        };
        if let Some(signal) = signal.filter(|_| termios.local & ISIG != 0) {
            effect.signal = Some(signal);
            self.line.clear();
            if echoing {
                effect.echo.extend_from_slice(&[b'^', byte.wrapping_add(0x40), b'\r', b'\n']);
            }
        } else if termios.canonical() {
            self.edit(byte, echoing, &mut effect.echo);
        } else {
            if self.ready.len() < MAX_RAW_INPUT {
                self.ready.push_back(Some(byte));
            }
            if echoing {
                effect.echo.push(byte);
            }
        }
        effect
    }

    /// Canonical mode: edits the line, or ends it.
    fn edit(&mut self, byte: u8, echoing: bool, echo: &mut Vec<u8>) {
        let cc = self.termios.characters;
        let mut rub_out = |count: usize| {
            for _ in 0..count {
                echo.extend_from_slice(RUB_OUT);
            }
        };
        if byte == cc[VERASE] || byte == 0x08 {
            if self.line.pop().is_some() && echoing {
                rub_out(1);
            }
        } else if byte == cc[VKILL] {
            rub_out(self.line.len());
            self.line.clear();
        } else if byte == cc[VWERASE] {
            let kept = self.line.iter().rposition(|byte| *byte != b' ').map_or(0, |last| {
                self.line[..=last].iter().rposition(|byte| *byte == b' ').map_or(0, |space| space + 1)
            });
            rub_out(self.line.len() - kept);
            self.line.truncate(kept);
        } else if byte == cc[VEOF] {
            let line = core::mem::take(&mut self.line);
            self.ready.extend(line.into_iter().map(Some));
            self.ready.push_back(None);
        } else if byte == b'\n' {
            let line = core::mem::take(&mut self.line);
            self.ready.extend(line.into_iter().map(Some));
            self.ready.push_back(Some(b'\n'));
            if echoing {
                echo.extend_from_slice(b"\r\n");
            }
        } else if self.line.len() < MAX_LINE {
            self.line.push(byte);
            if echoing {
                echo.push(byte);
            }
        }
    }

    /// Whether a read would return now (a whole line or an end of file in
    /// canonical mode; any byte in raw mode).
    pub fn readable(&self) -> bool {
        if self.termios.canonical() {
            self.ready.iter().any(|byte| matches!(byte, None | Some(b'\n')))
        } else {
            !self.ready.is_empty()
        }
    }

    /// Whether any input waits, complete or not.
    pub fn has_input(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Reads into `buffer` (not empty): a line in canonical mode, else at
    /// least `VMIN` bytes (or what is there when `VMIN` is 0). `Some(0)` is
    /// an end of file; `None`: the reader must wait.
    pub fn read(&mut self, buffer: &mut [u8]) -> Option<usize> {
        let canonical = self.termios.canonical();
        let vmin = usize::from(self.termios.characters[VMIN]);
        let minimum = vmin.max(1).min(buffer.len());
        let available = self.ready.iter().take_while(|byte| byte.is_some()).count();
        let enough = if canonical { self.readable() } else { available >= minimum || self.ready.front() == Some(&None) };
        if !enough && (canonical || vmin != 0) {
            return None;
        }
        let mut count = 0;
        while count < buffer.len() {
            match self.ready.front() {
                Some(Some(byte)) => {
                    buffer[count] = *byte;
                    count += 1;
                    self.ready.pop_front();
                    if canonical && buffer[count - 1] == b'\n' {
                        break;
                    }
                }
                Some(None) => {
                    // The end-of-file character ends the line it follows
                    // and is taken with it; alone, it is an end of file
                    // (a read of 0), as in Linux's `N_TTY`.
                    self.ready.pop_front();
                    break;
                }
                None => break,
            }
        }
        Some(count)
    }

    /// New settings; `flush_input` drops pending input (`TCSETSF`).
    pub fn set_termios(&mut self, termios: Termios, flush_input: bool) {
        self.termios = termios;
        if flush_input {
            self.ready.clear();
            self.line.clear();
        }
    }
}

/// Calls `emit` with `bytes` as the terminal shows them: with `\n` as
/// `\r\n` when `termios` says so.
pub fn translate_output(termios: &Termios, bytes: &[u8], mut emit: impl FnMut(&[u8])) {
    if !termios.translates_newlines() {
        emit(bytes);
        return;
    }
    for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
        match piece.split_last() {
            Some((b'\n', text)) => {
                emit(text);
                emit(b"\r\n");
            }
            _ => emit(piece),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn typed(discipline: &mut LineDiscipline, bytes: &[u8]) -> Vec<u8> {
        let mut echo = Vec::new();
        for byte in bytes {
            echo.extend(discipline.input(*byte).echo);
        }
        echo
    }

    fn read_all(discipline: &mut LineDiscipline) -> Option<Vec<u8>> {
        let mut buffer = [0u8; 64];
        discipline.read(&mut buffer).map(|count| buffer[..count].to_vec())
    }

    #[test]
    fn a_line_is_edited_then_read_whole() {
        let mut tty = LineDiscipline::new(Termios::sane());
        let echo = typed(&mut tty, b"ls -l foo\x7f\x7fix bar\x17baz");
        assert!(!tty.readable(), "no line before the newline");
        assert_eq!(read_all(&mut tty), None);
        typed(&mut tty, b"\r");
        assert_eq!(read_all(&mut tty), Some(b"ls -l fix baz\n".to_vec()));
        assert!(echo.starts_with(b"ls -l foo\x08 \x08\x08 \x08"));
        // The word erase rubbed out "bar" (three characters).
        let word_erase = b"ix bar\x08 \x08\x08 \x08\x08 \x08baz";
        assert!(echo.windows(word_erase.len()).any(|window| window == word_erase), "{echo:?}");
    }

    #[test]
    fn kill_line_and_word_erase_over_spaces() {
        let mut tty = LineDiscipline::new(Termios::sane());
        typed(&mut tty, b"one two  \x17");
        typed(&mut tty, b"\n");
        assert_eq!(read_all(&mut tty), Some(b"one \n".to_vec()));
        typed(&mut tty, b"gone\x15kept\n");
        assert_eq!(read_all(&mut tty), Some(b"kept\n".to_vec()));
    }

    #[test]
    fn end_of_file_on_an_empty_line_reads_as_zero_once() {
        let mut tty = LineDiscipline::new(Termios::sane());
        typed(&mut tty, b"abc\x04");
        assert!(tty.readable(), "^D after text ends the line");
        assert_eq!(read_all(&mut tty), Some(b"abc".to_vec()), "^D after text ends the line without a newline");
        assert_eq!(read_all(&mut tty), None, "and is taken with it: no end of file follows");
        typed(&mut tty, b"\x04");
        assert!(tty.readable());
        assert_eq!(read_all(&mut tty), Some(vec![]));
        assert_eq!(read_all(&mut tty), None, "the end of file is taken once");
    }

    #[test]
    fn signal_characters_drop_the_line_and_echo_a_caret() {
        let mut tty = LineDiscipline::new(Termios::sane());
        typed(&mut tty, b"half");
        let effect = tty.input(3);
        assert_eq!(effect.signal, Some(TerminalSignal::Interrupt));
        assert_eq!(effect.echo, b"^C\r\n");
        assert_eq!(tty.input(0x1a).signal, Some(TerminalSignal::Suspend));
        assert_eq!(tty.input(0x1c).signal, Some(TerminalSignal::Quit));
        typed(&mut tty, b"\n");
        assert_eq!(read_all(&mut tty), Some(b"\n".to_vec()), "the half line was dropped");
        let mut quiet = Termios::sane();
        quiet.local &= !ISIG;
        tty.set_termios(quiet, true);
        assert_eq!(tty.input(3).signal, None, "no signals without ISIG");
    }

    #[test]
    fn raw_mode_hands_bytes_over_as_vmin_says() {
        let mut raw = Termios::sane();
        raw.local &= !(ICANON | ECHO);
        raw.characters[VMIN] = 2;
        let mut tty = LineDiscipline::new(raw);
        assert!(typed(&mut tty, b"x").is_empty(), "no echo");
        assert_eq!(read_all(&mut tty), None, "one byte is below VMIN");
        typed(&mut tty, b"\x7f");
        assert_eq!(read_all(&mut tty), Some(b"x\x7f".to_vec()), "erase is a plain byte in raw mode");
        raw.characters[VMIN] = 0;
        tty.set_termios(raw, false);
        assert_eq!(read_all(&mut tty), Some(vec![]), "VMIN 0 never waits");
    }

    #[test]
    fn lines_and_raw_input_stay_bounded() {
        let mut tty = LineDiscipline::new(Termios::sane());
        for _ in 0..MAX_LINE + 10 {
            tty.input(b'a');
        }
        tty.input(b'\n');
        let mut buffer = vec![0u8; MAX_LINE + 10];
        assert_eq!(tty.read(&mut buffer), Some(MAX_LINE + 1));
        let mut raw = Termios::sane();
        raw.local &= !ICANON;
        tty.set_termios(raw, true);
        for _ in 0..MAX_RAW_INPUT + 10 {
            tty.input(b'b');
        }
        let mut buffer = vec![0u8; MAX_RAW_INPUT + 10];
        assert_eq!(tty.read(&mut buffer), Some(MAX_RAW_INPUT));
    }

    #[test]
    fn termios_round_trips_and_output_gets_carriage_returns() {
        let sane = Termios::sane();
        assert_eq!(Termios::from_bytes(&sane.to_bytes()), sane);
        assert_eq!(&sane.to_bytes()[12..16], &(ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN).to_le_bytes());
        let mut shown = Vec::new();
        translate_output(&sane, b"a\nb\n", |piece| shown.extend_from_slice(piece));
        assert_eq!(shown, b"a\r\nb\r\n");
        let mut plain = sane;
        plain.output = 0;
        shown.clear();
        translate_output(&plain, b"a\nb", |piece| shown.extend_from_slice(piece));
        assert_eq!(shown, b"a\nb");
    }
}
