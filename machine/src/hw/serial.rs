//! COM1 (16550 UART at 0x3F8): the kernel console.
//!
//! Output is polled; input arrives by interrupt (IRQ 4) into a small ring
//! that [`read_byte`] drains. The console lock is an [`IrqLock`], so printing
//! is safe from interrupt handlers and from any CPU.

use core::fmt::{self, Write};

use super::cpu::{inb, outb};
use super::irq_lock::IrqLock;

const COM1: u16 = 0x3F8;
const DATA: u16 = COM1;
const INTERRUPT_ENABLE: u16 = COM1 + 1;
const FIFO_CONTROL: u16 = COM1 + 2;
const LINE_CONTROL: u16 = COM1 + 3;
const MODEM_CONTROL: u16 = COM1 + 4;
const LINE_STATUS: u16 = COM1 + 5;
const LINE_STATUS_DATA_READY: u8 = 1 << 0;
const LINE_STATUS_TRANSMIT_EMPTY: u8 = 1 << 5;

struct Uart;

static CONSOLE: IrqLock<Uart> = IrqLock::new(Uart);
static INPUT: IrqLock<InputRing> = IrqLock::new(InputRing::new());

/// Sets up COM1 at 115200 baud, 8N1, FIFOs on, receive interrupts on.
pub fn init() {
    outb(INTERRUPT_ENABLE, 0x00);
    outb(LINE_CONTROL, 0x80); // divisor latch
    outb(DATA, 0x01); // 115200 baud
    outb(INTERRUPT_ENABLE, 0x00);
    outb(LINE_CONTROL, 0x03); // 8 bits, no parity, one stop bit
    outb(FIFO_CONTROL, 0xC7);
    outb(MODEM_CONTROL, 0x0B); // DTR, RTS, OUT2 (routes the IRQ line)
    outb(INTERRUPT_ENABLE, 0x01); // data-available interrupt
}

impl Uart {
    fn put(&mut self, byte: u8) {
        while inb(LINE_STATUS) & LINE_STATUS_TRANSMIT_EMPTY == 0 {
            core::hint::spin_loop();
        }
        outb(DATA, byte);
    }
}

impl Write for Uart {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for byte in text.bytes() {
            if byte == b'\n' {
                self.put(b'\r');
            }
            self.put(byte);
        }
        Ok(())
    }
}

/// Prints formatted text on the console (used by `machine::print!`).
pub fn print(arguments: fmt::Arguments<'_>) {
    let _ = CONSOLE.lock().write_fmt(arguments);
}

/// Prints even if another CPU holds the console lock (it may have died
/// holding it): used only by the panic and fatal-trap paths.
pub fn print_emergency(arguments: fmt::Arguments<'_>) {
    match CONSOLE.try_lock() {
        Some(mut console) => {
            let _ = console.write_fmt(arguments);
        }
        None => {
            let _ = Uart.write_fmt(arguments);
        }
    }
}

/// Writes raw bytes (no newline translation) to the console.
pub fn write_bytes(bytes: &[u8]) {
    let mut console = CONSOLE.lock();
    for &byte in bytes {
        console.put(byte);
    }
}

/// The serial interrupt handler's body: moves received bytes to the ring.
pub(crate) fn handle_interrupt() {
    let mut input = INPUT.lock();
    while inb(LINE_STATUS) & LINE_STATUS_DATA_READY != 0 {
        input.push(inb(DATA));
    }
}

/// Takes one received byte, if any.
pub fn read_byte() -> Option<u8> {
    let mut input = INPUT.lock();
    // Also poll, in case the interrupt is not routed (early boot, no IOAPIC).
    while inb(LINE_STATUS) & LINE_STATUS_DATA_READY != 0 {
        input.push(inb(DATA));
    }
    input.pop()
}

const INPUT_CAPACITY: usize = 256;

/// Received bytes not yet read; drops new bytes when full.
struct InputRing {
    bytes: [u8; INPUT_CAPACITY],
    head: usize,
    length: usize,
}

impl InputRing {
    const fn new() -> Self {
        Self { bytes: [0; INPUT_CAPACITY], head: 0, length: 0 }
    }

    fn push(&mut self, byte: u8) {
        if self.length < INPUT_CAPACITY {
            self.bytes[(self.head + self.length) % INPUT_CAPACITY] = byte;
            self.length += 1;
        }
    }

    fn pop(&mut self) -> Option<u8> {
        if self.length == 0 {
            return None;
        }
        let byte = self.bytes[self.head];
        self.head = (self.head + 1) % INPUT_CAPACITY;
        self.length -= 1;
        Some(byte)
    }
}
