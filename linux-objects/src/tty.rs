//! The console terminal on the serial port: `linux-abi`'s line discipline
//! (echo, erase, kill line, word erase, ^C, ^\ and ^Z as signals to the
//! foreground process group, ^D as end of file, raw mode) behind one lock,
//! termios get/set, window size and the foreground process group.
//!
//! An input thread moves received bytes through the discipline as they
//! arrive, so ^C reaches a program that is not reading. Readers sleep
//! until input or a signal comes.

use alloc::sync::Arc;
use alloc::vec::Vec;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use super::process::Pid;
use super::signals::numbers::{SIGINT, SIGQUIT, SIGTSTP};
use linux_abi::line_discipline::{translate_output, LineDiscipline, TerminalSignal};
pub use linux_abi::line_discipline::Termios;
use linux_abi::Errno;

const TTY_LEVEL: Level = Level::new(5);

struct Tty {
    discipline: LineDiscipline,
    foreground: Pid,
    session: Pid,
    window: (u16, u16),
    readers: Vec<Arc<sched::Thread>>,
}

static TTY: KernelTicketLock<Tty> = KernelTicketLock::new(
    TTY_LEVEL,
    Tty { discipline: LineDiscipline::new(Termios::sane()), foreground: 1, session: 1, window: (24, 80), readers: Vec::new() },
);

/// Writes program output, turning `\n` into `\r\n` when the terminal says so.
pub fn write(bytes: &[u8]) {
    let termios = TTY.lock().discipline.termios;
    translate_output(&termios, bytes, machine::serial::write_bytes);
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
fn input(byte: u8) {
    let (effect, group) = {
        let mut tty = TTY.lock();
        (tty.discipline.input(byte), tty.foreground)
    };
    if !effect.echo.is_empty() {
        machine::serial::write_bytes(&effect.echo);
    }
    if let Some(signal) = effect.signal {
        let number = match signal {
            TerminalSignal::Interrupt => SIGINT,
            TerminalSignal::Quit => SIGQUIT,
            TerminalSignal::Suspend => SIGTSTP,
        };
        crate::signal_sending::signal_group(group, number);
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
            if let Some(count) = tty.discipline.read(buffer) {
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
            return Err(linux_abi::restart::ERESTARTSYS);
        }
        let deadline = machine::timer::uptime_nanoseconds() + 100_000_000;
        sched::sleep_until(deadline, || interrupted() || has_input());
    }
}

fn has_input() -> bool {
    TTY.lock().discipline.has_input()
}

/// Whether a read would not wait.
pub fn readable() -> bool {
    TTY.lock().discipline.readable()
}

/// The terminal's settings.
pub fn termios() -> Termios {
    TTY.lock().discipline.termios
}

/// New settings; `flush_input` drops pending input (`TCSETSF`).
pub fn set_termios(termios: Termios, flush_input: bool) {
    TTY.lock().discipline.set_termios(termios, flush_input);
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
