//! Channel 0 of the Intel 8254 timer (ports 0x40 and 0x43) as a Linux
//! guest drives it for its clock events: periodic (modes 2 and 3) or one
//! shot (mode 0), the count written low byte then high byte. It only
//! computes what the VMM should arm (a period or a single deadline) and
//! what a latched read shows; the VMM owns the host timer. Channels 1 and
//! 2 and the speaker port are not modelled (reads there give all ones).

use std::time::{Duration, Instant};

/// The 8254's input clock.
pub const INPUT_HERTZ: u64 = 1_193_182;

/// What channel 0 asks of the host timer after a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// Nothing changed.
    Unchanged,
    /// Fire every period.
    Periodic(Duration),
    /// Fire once after the delay.
    Once(Duration),
    /// Stop.
    Stop,
}

#[derive(Debug, Clone)]
pub struct Pit {
    mode: u8,
    /// The count being written: its low byte, once it came.
    low_byte: Option<u8>,
    reload: u16,
    started: Instant,
    latched: Option<u16>,
    read_high_next: bool,
}

impl Default for Pit {
    fn default() -> Self {
        Pit { mode: 0, low_byte: None, reload: 0, started: Instant::now(), latched: None, read_high_next: false }
    }
}

/// The time `count` input ticks take (a count of 0 means 65,536).
pub fn ticks(count: u16) -> Duration {
    let count = if count == 0 { 65_536 } else { u64::from(count) };
    Duration::from_nanos(count * 1_000_000_000 / INPUT_HERTZ)
}

impl Pit {
    pub fn owns(port: u16) -> bool {
        port == 0x40 || port == 0x43
    }

    pub fn write(&mut self, port: u16, value: u8) -> Arm {
        match port {
            0x43 if value >> 6 == 0 => {
                if (value >> 4) & 3 == 0 {
                    // Counter latch command.
                    self.latched = Some(self.current());
                    self.read_high_next = false;
                    Arm::Unchanged
                } else {
                    self.mode = (value >> 1) & 7;
                    self.low_byte = None;
                    // A new mode stops the counter until its count comes.
                    Arm::Stop
                }
            }
            0x40 => match self.low_byte.take() {
                None => {
                    self.low_byte = Some(value);
                    Arm::Unchanged
                }
                Some(low) => {
                    self.reload = u16::from_le_bytes([low, value]);
                    self.started = Instant::now();
                    match self.mode {
                        2 | 3 | 6 | 7 => Arm::Periodic(ticks(self.reload)),
                        _ => Arm::Once(ticks(self.reload)),
                    }
                }
            },
            _ => Arm::Unchanged,
        }
    }

    /// The count now, as the counter would show it.
    fn current(&self) -> u16 {
        let period = if self.reload == 0 { 65_536 } else { u64::from(self.reload) };
        let elapsed = self.started.elapsed().as_nanos() as u64 * INPUT_HERTZ / 1_000_000_000;
        let left = match self.mode {
            2 | 3 | 6 | 7 => period - elapsed % period,
            _ => period.saturating_sub(elapsed),
        };
        left as u16
    }

    pub fn read(&mut self, port: u16) -> u8 {
        if port != 0x40 {
            return 0xFF;
        }
        let value = self.latched.unwrap_or_else(|| self.current());
        let byte = if self.read_high_next { (value >> 8) as u8 } else { value as u8 };
        if self.read_high_next {
            self.latched = None;
        }
        self.read_high_next = !self.read_high_next;
        byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_periodic_and_one_shot_setups_arm_the_right_timer() {
        let mut pit = Pit::default();
        // Periodic at HZ=250: mode 2, count 4773.
        assert_eq!(pit.write(0x43, 0x34), Arm::Stop);
        assert_eq!(pit.write(0x40, (4773 & 0xFF) as u8), Arm::Unchanged);
        assert_eq!(pit.write(0x40, (4773 >> 8) as u8), Arm::Periodic(ticks(4773)));
        assert!(ticks(4773).as_micros().abs_diff(4000) < 5);
        // One shot: mode 0, then each event's count.
        assert_eq!(pit.write(0x43, 0x30), Arm::Stop);
        pit.write(0x40, 0x10);
        assert_eq!(pit.write(0x40, 0x00), Arm::Once(ticks(16)));
    }

    #[test]
    fn a_latched_count_reads_low_then_high() {
        let mut pit = Pit::default();
        pit.write(0x43, 0x34);
        pit.write(0x40, 0xFF);
        pit.write(0x40, 0xFF);
        pit.write(0x43, 0x00);
        let low = pit.read(0x40);
        let high = pit.read(0x40);
        assert!(u16::from_le_bytes([low, high]) > 0x8000, "a count just loaded is near its top");
        assert_eq!(pit.read(0x43), 0xFF);
    }
}
