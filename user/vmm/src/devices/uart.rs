//! A 16550A serial port (COM1, ports 0x3F8-0x3FF) as Linux's 8250 driver
//! uses it: the registers it probes (scratch, interrupt enable, FIFO
//! identification, loopback), transmit with the "transmitter empty"
//! interrupt, and receive from bytes the VMM hands in. What the guest
//! sends is returned to the VMM, which writes it out. The interrupt line
//! is IRQ 4, gated by MCR's OUT2 as on a PC.

use std::collections::VecDeque;

const IER_RECEIVED: u8 = 0x01;
const IER_TRANSMIT_EMPTY: u8 = 0x02;
const LCR_DIVISOR_LATCH: u8 = 0x80;
const MCR_OUT2: u8 = 0x08;
const MCR_LOOPBACK: u8 = 0x10;

#[derive(Debug, Default, Clone)]
pub struct Uart {
    interrupt_enable: u8,
    line_control: u8,
    modem_control: u8,
    scratch: u8,
    divisor: u16,
    fifo_enabled: bool,
    /// A "transmitter empty" interrupt waits to be read from IIR.
    transmit_empty_pending: bool,
    received: VecDeque<u8>,
}

/// The line COM1 raises on the PIC.
pub const IRQ: u8 = 4;

impl Uart {
    pub fn owns(port: u16) -> bool {
        (0x3F8..0x400).contains(&port)
    }

    /// Whether the interrupt output is asserted now.
    pub fn interrupt_line(&self) -> bool {
        self.modem_control & MCR_OUT2 != 0 && self.interrupt_identity() & 1 == 0
    }

    fn interrupt_identity(&self) -> u8 {
        if self.interrupt_enable & IER_RECEIVED != 0 && !self.received.is_empty() {
            0x04
        } else if self.interrupt_enable & IER_TRANSMIT_EMPTY != 0 && self.transmit_empty_pending {
            0x02
        } else {
            0x01
        }
    }

    /// Bytes typed for the guest.
    pub fn receive(&mut self, bytes: &[u8]) {
        self.received.extend(bytes);
    }

    /// A write; the byte the guest transmitted, if it was one.
    pub fn write(&mut self, port: u16, value: u8) -> Option<u8> {
        let divisor_latch = self.line_control & LCR_DIVISOR_LATCH != 0;
        match port - 0x3F8 {
            0 if divisor_latch => self.divisor = (self.divisor & 0xFF00) | u16::from(value),
            0 => {
                self.transmit_empty_pending = true;
                if self.modem_control & MCR_LOOPBACK != 0 {
                    self.received.push_back(value);
                    return None;
                }
                return Some(value);
            }
            1 if divisor_latch => self.divisor = (self.divisor & 0x00FF) | u16::from(value) << 8,
            1 => {
                let newly_enabled = value & IER_TRANSMIT_EMPTY != 0 && self.interrupt_enable & IER_TRANSMIT_EMPTY == 0;
                self.interrupt_enable = value & 0x0F;
                if newly_enabled {
                    // The transmitter is always empty: enabling its interrupt raises it.
                    self.transmit_empty_pending = true;
                }
            }
            2 => self.fifo_enabled = value & 1 != 0,
            3 => self.line_control = value,
            4 => self.modem_control = value & 0x1F,
            7 => self.scratch = value,
            _ => {}
        }
        None
    }

    pub fn read(&mut self, port: u16) -> u8 {
        let divisor_latch = self.line_control & LCR_DIVISOR_LATCH != 0;
        match port - 0x3F8 {
            0 if divisor_latch => self.divisor as u8,
            0 => self.received.pop_front().unwrap_or(0),
            1 if divisor_latch => (self.divisor >> 8) as u8,
            1 => self.interrupt_enable,
            2 => {
                let identity = self.interrupt_identity();
                if identity == 0x02 {
                    // Reading IIR clears the "transmitter empty" interrupt.
                    self.transmit_empty_pending = false;
                }
                identity | if self.fifo_enabled { 0xC0 } else { 0 }
            }
            3 => self.line_control,
            4 => self.modem_control,
            // Transmitter holding register and shifter empty; data ready.
            5 => 0x60 | u8::from(!self.received.is_empty()),
            6 => {
                if self.modem_control & MCR_LOOPBACK != 0 {
                    // RTS→CTS, DTR→DSR, OUT1→RI, OUT2→DCD.
                    let m = self.modem_control;
                    ((m & 0x02) << 3) | ((m & 0x01) << 5) | ((m & 0x04) << 4) | ((m & 0x08) << 4)
                } else {
                    0xB0
                }
            }
            7 => self.scratch,
            _ => 0xFF,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_8250_probe_sees_a_16550a() {
        let mut uart = Uart::default();
        uart.write(0x3F9, 0x0F);
        assert_eq!(uart.read(0x3F9), 0x0F, "IER reads back");
        uart.write(0x3FF, 0xA5);
        assert_eq!(uart.read(0x3FF), 0xA5, "scratch reads back");
        uart.write(0x3FA, 0x01);
        assert_eq!(uart.read(0x3FA) & 0xC0, 0xC0, "FIFOs: a 16550A");
    }

    #[test]
    fn transmit_empty_interrupts_once_per_byte_and_needs_out2() {
        let mut uart = Uart::default();
        uart.write(0x3F9, IER_TRANSMIT_EMPTY);
        assert!(!uart.interrupt_line(), "OUT2 gates the line");
        uart.write(0x3FC, MCR_OUT2);
        assert!(uart.interrupt_line());
        assert_eq!(uart.read(0x3FA) & 0x0F, 0x02);
        assert!(!uart.interrupt_line(), "reading IIR cleared it");
        assert_eq!(uart.write(0x3F8, b'x'), Some(b'x'));
        assert!(uart.interrupt_line());
    }

    #[test]
    fn received_bytes_raise_the_line_and_read_out_in_order() {
        let mut uart = Uart::default();
        uart.write(0x3FC, MCR_OUT2);
        uart.write(0x3F9, IER_RECEIVED);
        uart.receive(b"ls\n");
        assert!(uart.interrupt_line());
        assert_eq!(uart.read(0x3FD) & 1, 1);
        assert_eq!([uart.read(0x3F8), uart.read(0x3F8), uart.read(0x3F8)], *b"ls\n");
        assert!(!uart.interrupt_line());
    }
}
