//! The CMOS real-time clock: the wall-clock time at boot, read once (the
//! kernel keeps time from the uptime clock after that).

use super::cpu::{inb, outb};

const INDEX: u16 = 0x70;
const DATA: u16 = 0x71;

fn read(register: u8) -> u8 {
    // Bit 7 of the index keeps NMIs disabled as the firmware left them.
    outb(INDEX, 0x80 | register);
    inb(DATA)
}

fn updating() -> bool {
    read(0x0A) & 0x80 != 0
}

/// Seconds since 1970-01-01 UTC, if the clock gives a plausible date.
pub fn seconds_since_epoch() -> Option<u64> {
    // Read until two reads agree, outside an update cycle.
    let snapshot = || {
        while updating() {
            core::hint::spin_loop();
        }
        [read(0x00), read(0x02), read(0x04), read(0x07), read(0x08), read(0x09), read(0x0B)]
    };
    let mut values = snapshot();
    for _ in 0..10 {
        let again = snapshot();
        if again == values {
            break;
        }
        values = again;
    }
    let [second, minute, hour, day, month, year, status] = values;
    let binary = status & 0x04 != 0;
    let decode = |value: u8| if binary { u64::from(value) } else { u64::from((value >> 4) * 10 + (value & 0x0F)) };
    let twelve_hour_pm = status & 0x02 == 0 && hour & 0x80 != 0;
    let mut hours = decode(hour & 0x7F);
    if twelve_hour_pm {
        hours = (hours % 12) + 12;
    }
    let (year, month, day) = (2000 + decode(year), decode(month), decode(day));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hours > 23 {
        return None;
    }
    Some(days_since_epoch(year, month, day) * 86_400 + hours * 3600 + decode(minute) * 60 + decode(second))
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    let (year, month) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let day_of_year = (153 * month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}
