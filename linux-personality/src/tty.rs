//! The console terminal on the serial port: a line discipline (echo,
//! erase, kill line, word erase, ^C/^\/^Z as signals to the foreground
//! process group, ^D as end of file), termios get/set, window size and
//! the foreground process group, raw mode for full-screen programs.
//!
//! An input thread moves received bytes through the discipline as they
//! arrive, so ^C reaches a program that is not reading. Readers sleep
//! until input or a signal comes.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use super::process::Pid;
use super::signals::numbers::{SIGINT, SIGQUIT, SIGTSTP};
use linux_abi::Errno;

const TTY_LEVEL: Level = Level::new(5);

/// `struct termios` (the kernel's, 36 bytes) fields.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Termios {
    pub input: u32,
    pub output: u32,
    pub control: u32,
    pub local: u32,
    pub line: u8,
    pub characters: [u8; 19],
}

/// Termios bits used here.
mod bits {
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

    /// The 36 bytes of `struct termios`.
    pub fn to_bytes(&self) -> [u8; 36] {
        let mut bytes = [0u8; 36];
        for (index, word) in [self.input, self.output, self.control, self.local].into_iter().enumerate() {
            bytes[index * 4..index * 4 + 4].copy_from_slice(&word.to_le_bytes());
        }
        bytes[16] = self.line;
        bytes[17..36].copy_from_slice(&self.characters);
        bytes
    }

    /// Reads `struct termios`.
    pub fn from_bytes(bytes: &[u8; 36]) -> Self {
        let word = |index: usize| u32::from_le_bytes([bytes[index * 4], bytes[index * 4 + 1], bytes[index * 4 + 2], bytes[index * 4 + 3]]);
        let mut characters = [0u8; 19];
        characters.copy_from_slice(&bytes[17..36]);
        Self { input: word(0), output: word(1), control: word(2), local: word(3), line: bytes[16], characters }
    }
}

struct Tty {
    termios: Termios,
    /// The line being edited (canonical mode).
    line: Vec<u8>,
    /// Bytes ready for readers; `None` marks an end of file (^D on an empty line).
    ready: VecDeque<Option<u8>>,
    foreground: Pid,
    session: Pid,
    window: (u16, u16),
    readers: Vec<Arc<sched::Thread>>,
}

static TTY: KernelTicketLock<Tty> = KernelTicketLock::new(
    TTY_LEVEL,
    Tty { termios: Termios::sane(), line: Vec::new(), ready: VecDeque::new(), foreground: 1, session: 1, window: (24, 80), readers: Vec::new() },
);

/// Writes program output, turning `\n` into `\r\n` when the terminal says so.
pub fn write(bytes: &[u8]) {
    let translate = {
        let tty = TTY.lock();
        tty.termios.output & (OPOST | ONLCR) == OPOST | ONLCR
    };
    if !translate {
        machine::serial::write_bytes(bytes);
        return;
    }
    for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
        match piece.split_last() {
            Some((b'\n', text)) => {
                machine::serial::write_bytes(text);
                machine::serial::write_bytes(b"\r\n");
            }
            _ => machine::serial::write_bytes(piece),
        }
    }
}

/// Starts the thread that moves serial input through the discipline.
pub fn start_input() -> Result<(), sched::SpawnError> {
    sched::spawn("tty-input", || loop {
        let mut any = false;
        while let Some(byte) = machine::serial::read_byte() {
            input(byte);
            any = true;
        }
        if any {
            let readers = core::mem::take(&mut TTY.lock().readers);
            for reader in &readers {
                sched::unpark(reader);
            }
        }
        let deadline = machine::timer::uptime_nanoseconds() + 10_000_000;
        sched::sleep_until(deadline, || false);
    })
    .map(drop)
}

/// One received byte through the line discipline.
fn input(mut byte: u8) {
    let mut echo: Vec<u8> = Vec::new();
    let mut signal = None;
    {
        let mut tty = TTY.lock();
        let termios = tty.termios;
        if termios.input & ICRNL != 0 && byte == b'\r' {
            byte = b'\n';
        }
        let cc = termios.characters;
        if termios.local & ISIG != 0 && (byte == cc[VINTR] || byte == cc[VQUIT] || byte == cc[VSUSP]) && byte != 0 {
            signal = Some((if byte == cc[VINTR] { SIGINT } else if byte == cc[VQUIT] { SIGQUIT } else { SIGTSTP }, tty.foreground));
            tty.line.clear();
            if termios.local & ECHO != 0 {
                echo.extend_from_slice(&[b'^', byte + 0x40, b'\r', b'\n']);
            }
        } else if termios.local & ICANON != 0 {
            if byte == cc[VERASE] || byte == 0x08 {
                if tty.line.pop().is_some() && termios.local & ECHO != 0 {
                    echo.extend_from_slice(b"\x08 \x08");
                }
            } else if byte == cc[VKILL] {
                for _ in 0..tty.line.len() {
                    echo.extend_from_slice(b"\x08 \x08");
                }
                tty.line.clear();
            } else if byte == cc[VWERASE] {
                while tty.line.last() == Some(&b' ') {
                    tty.line.pop();
                    echo.extend_from_slice(b"\x08 \x08");
                }
                while tty.line.last().is_some_and(|last| *last != b' ') {
                    tty.line.pop();
                    echo.extend_from_slice(b"\x08 \x08");
                }
            } else if byte == cc[VEOF] {
                let line = core::mem::take(&mut tty.line);
                if line.is_empty() {
                    tty.ready.push_back(None);
                } else {
                    tty.ready.extend(line.into_iter().map(Some));
                }
            } else if byte == b'\n' {
                let mut line = core::mem::take(&mut tty.line);
                line.push(b'\n');
                tty.ready.extend(line.into_iter().map(Some));
                if termios.local & ECHO != 0 {
                    echo.extend_from_slice(b"\r\n");
                }
            } else if tty.line.len() < 4095 {
                tty.line.push(byte);
                if termios.local & ECHO != 0 {
                    echo.push(byte);
                }
            }
        } else {
            if tty.ready.len() < 4096 {
                tty.ready.push_back(Some(byte));
            }
            if termios.local & ECHO != 0 {
                echo.push(byte);
            }
        }
    }
    if !echo.is_empty() {
        machine::serial::write_bytes(&echo);
    }
    if let Some((signal, group)) = signal {
        crate::syscall::signal_group(group, signal);
    }
}

/// Reads from the terminal: a line in canonical mode, else what `VMIN`
/// asks for. `interrupted` is checked while waiting (`EINTR`).
pub fn read(buffer: &mut [u8], nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<usize, Errno> {
    if buffer.is_empty() {
        return Ok(0);
    }
    loop {
        {
            let mut tty = TTY.lock();
            let canonical = tty.termios.local & ICANON != 0;
            let minimum = usize::from(tty.termios.characters[VMIN]).max(1).min(buffer.len());
            let available = tty.ready.iter().take_while(|byte| byte.is_some()).count();
            let enough = if canonical { tty.ready.iter().any(|byte| matches!(byte, None | Some(b'\n'))) } else { available >= minimum || tty.ready.front() == Some(&None) };
            if enough || (!canonical && tty.termios.characters[VMIN] == 0) {
                let mut count = 0;
                while count < buffer.len() {
                    match tty.ready.front() {
                        Some(Some(byte)) => {
                            buffer[count] = *byte;
                            count += 1;
                            tty.ready.pop_front();
                            if canonical && buffer[count - 1] == b'\n' {
                                break;
                            }
                        }
                        Some(None) => {
                            if count == 0 {
                                tty.ready.pop_front();
                            }
                            break;
                        }
                        None => break,
                    }
                }
                return Ok(count);
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if tty.readers.try_reserve(1).is_ok() {
                tty.readers.push(sched::current());
            }
        }
        if interrupted() {
            return Err(Errno::EINTR);
        }
        let deadline = machine::timer::uptime_nanoseconds() + 100_000_000;
        sched::sleep_until(deadline, || interrupted() || has_input());
    }
}

fn has_input() -> bool {
    !TTY.lock().ready.is_empty()
}

/// Whether a read would not wait.
pub fn readable() -> bool {
    let tty = TTY.lock();
    if tty.termios.local & ICANON != 0 {
        tty.ready.iter().any(|byte| matches!(byte, None | Some(b'\n')))
    } else {
        !tty.ready.is_empty()
    }
}

/// The terminal's settings.
pub fn termios() -> Termios {
    TTY.lock().termios
}

/// New settings; `flush_input` drops pending input (`TCSETSF`).
pub fn set_termios(termios: Termios, flush_input: bool) {
    let mut tty = TTY.lock();
    tty.termios = termios;
    if flush_input {
        tty.ready.clear();
        tty.line.clear();
    }
}

/// The foreground process group.
pub fn foreground() -> Pid {
    TTY.lock().foreground
}

/// Sets the foreground process group.
pub fn set_foreground(group: Pid) {
    TTY.lock().foreground = group;
}

/// The session the terminal belongs to.
pub fn session() -> Pid {
    TTY.lock().session
}

/// Window size (rows, columns).
pub fn window() -> (u16, u16) {
    TTY.lock().window
}

/// Sets the window size.
pub fn set_window(rows: u16, columns: u16) {
    TTY.lock().window = (rows, columns);
}
