//! The two cascaded Intel 8259A interrupt controllers of a PC (ports
//! 0x20/0x21 and 0xA0/0xA1): the initialization words a kernel sends, the
//! mask, edge-triggered requests, in-service bits and end-of-interrupt.
//! Only what a Linux guest's `i8259` driver uses: no special mask mode,
//! no rotation, no level triggering. Knows nothing of KVM.

/// One 8259A.
#[derive(Debug, Default, Clone)]
struct Chip {
    requests: u8,
    mask: u8,
    in_service: u8,
    vector_base: u8,
    /// Which initialization word comes next (0: none, initialized).
    init_step: u8,
    wants_icw4: bool,
    auto_eoi: bool,
    read_in_service: bool,
}

impl Chip {
    /// The highest-priority request (lowest line) not masked and not
    /// blocked by a line of equal or higher priority in service.
    fn pending_line(&self, extra_requests: u8) -> Option<u8> {
        let ready = (self.requests | extra_requests) & !self.mask;
        (0..8u8).find(|&line| self.in_service & (1 << line) != 0 || ready & (1 << line) != 0).filter(|&line| self.in_service & (1 << line) == 0)
    }

    fn write_command(&mut self, value: u8) {
        if value & 0x10 != 0 {
            // ICW1: start initialization.
            *self = Chip { wants_icw4: value & 1 != 0, init_step: 1, ..Chip::default() };
        } else if value & 0x08 != 0 {
            // OCW3: which register a command-port read returns.
            if value & 0x02 != 0 {
                self.read_in_service = value & 0x01 != 0;
            }
        } else {
            // OCW2: end of interrupt, non-specific (0x20) or specific (0x60 | line).
            match value & 0xE0 {
                0x20 => {
                    if let Some(line) = (0..8u8).find(|&line| self.in_service & (1 << line) != 0) {
                        self.in_service &= !(1 << line);
                    }
                }
                0x60 => self.in_service &= !(1 << (value & 7)),
                _ => {}
            }
        }
    }

    fn write_data(&mut self, value: u8) {
        match self.init_step {
            1 => {
                self.vector_base = value & 0xF8;
                self.init_step = 2;
            }
            2 => self.init_step = if self.wants_icw4 { 3 } else { 0 },
            3 => {
                self.auto_eoi = value & 0x02 != 0;
                self.init_step = 0;
            }
            _ => self.mask = value,
        }
    }

    fn read_command(&self) -> u8 {
        if self.read_in_service {
            self.in_service
        } else {
            self.requests
        }
    }

    fn acknowledge(&mut self, line: u8) -> u8 {
        self.requests &= !(1 << line);
        if !self.auto_eoi {
            self.in_service |= 1 << line;
        }
        self.vector_base | line
    }
}

/// The master (lines 0-7, the slave on line 2) and the slave (lines 8-15).
#[derive(Debug, Default, Clone)]
pub struct Pics {
    master: Chip,
    slave: Chip,
}

/// The cascade line on the master.
const CASCADE: u8 = 2;

impl Pics {
    /// Whether `port` is one of the controllers'.
    pub fn owns(port: u16) -> bool {
        matches!(port, 0x20 | 0x21 | 0xA0 | 0xA1)
    }

    /// An edge on interrupt line `line` (0-15).
    pub fn raise(&mut self, line: u8) {
        match line {
            0..=7 => self.master.requests |= 1 << line,
            8..=15 => self.slave.requests |= 1 << (line - 8),
            _ => {}
        }
    }

    fn slave_line(&self) -> Option<u8> {
        self.slave.pending_line(0)
    }

    /// The vector the CPU would take now, if any.
    pub fn pending_vector(&self) -> Option<u8> {
        let cascade = if self.slave_line().is_some() { 1 << CASCADE } else { 0 };
        let line = self.master.pending_line(cascade)?;
        if line == CASCADE && cascade != 0 {
            self.slave_line().map(|slave| self.slave.vector_base | slave)
        } else {
            Some(self.master.vector_base | line)
        }
    }

    /// The CPU takes the pending interrupt: its vector, now in service.
    pub fn acknowledge(&mut self) -> Option<u8> {
        let cascade = if self.slave_line().is_some() { 1 << CASCADE } else { 0 };
        let line = self.master.pending_line(cascade)?;
        if line == CASCADE && cascade != 0 {
            let slave = self.slave_line()?;
            self.master.acknowledge(CASCADE);
            Some(self.slave.acknowledge(slave))
        } else {
            Some(self.master.acknowledge(line))
        }
    }

    pub fn write(&mut self, port: u16, value: u8) {
        match port {
            0x20 => self.master.write_command(value),
            0x21 => self.master.write_data(value),
            0xA0 => self.slave.write_command(value),
            0xA1 => self.slave.write_data(value),
            _ => {}
        }
    }

    pub fn read(&self, port: u16) -> u8 {
        match port {
            0x20 => self.master.read_command(),
            0x21 => self.master.mask,
            0xA0 => self.slave.read_command(),
            0xA1 => self.slave.mask,
            _ => 0xFF,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux's `init_8259A`: vectors 0x30 and 0x38, master with ICW4.
    fn initialized() -> Pics {
        let mut pics = Pics::default();
        for (port, value) in [(0x20, 0x11), (0x21, 0x30), (0x21, 0x04), (0x21, 0x01), (0xA0, 0x11), (0xA1, 0x38), (0xA1, 0x02), (0xA1, 0x01), (0x21, 0xFA), (0xA1, 0xFF)] {
            pics.write(port, value);
        }
        pics
    }

    #[test]
    fn a_timer_edge_is_taken_once_and_blocks_until_eoi() {
        let mut pics = initialized();
        assert_eq!(pics.pending_vector(), None);
        pics.raise(0);
        assert_eq!(pics.acknowledge(), Some(0x30));
        pics.raise(0);
        assert_eq!(pics.pending_vector(), None, "line 0 is in service");
        pics.write(0x20, 0x20);
        assert_eq!(pics.acknowledge(), Some(0x30));
    }

    #[test]
    fn masked_lines_wait_and_priority_goes_to_the_lower_line() {
        let mut pics = initialized();
        pics.raise(4);
        assert_eq!(pics.pending_vector(), None, "line 4 is masked");
        pics.write(0x21, 0xEA); // unmask 0, 2, 4
        pics.raise(0);
        assert_eq!(pics.acknowledge(), Some(0x30));
        assert_eq!(pics.pending_vector(), None, "line 0 in service blocks line 4");
        pics.write(0x20, 0x60); // specific EOI of line 0
        assert_eq!(pics.acknowledge(), Some(0x34));
    }

    #[test]
    fn slave_lines_come_through_the_cascade() {
        let mut pics = initialized();
        pics.write(0xA1, 0xFE); // unmask line 8
        pics.raise(8);
        assert_eq!(pics.acknowledge(), Some(0x38));
        pics.write(0x20, 0x0B); // OCW3: read ISR
        assert_eq!(pics.read(0x20), 1 << CASCADE);
    }
}
