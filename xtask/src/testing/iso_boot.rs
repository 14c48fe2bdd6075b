//! ISO boot tests: the GRUB CD (multiboot2) must reach the prompt under
//! SeaBIOS and under OVMF (UEFI).

use super::tally::{with_log, CheckResult, Tally};
use crate::iso::build_iso;
use crate::machine_options::MachineOptions;
use crate::qemu_command::{BootMedium, Firmware};
use crate::qemu_session::QemuSession;
use crate::serial_protocol::{cpus_online, has_line_containing, POWEROFF, PROMPT};
use std::path::Path;
use std::time::Duration;

/// Firmware and GRUB are slow under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(180);

pub fn run_iso_tests(tally: &mut Tally) {
    let iso = match build_iso() {
        Ok(iso) => iso,
        Err(failure) => return tally.record("iso: build the CD image", Err(failure.to_string())),
    };
    tally.record(
        "iso: SeaBIOS boot reaches the prompt",
        boot_cd(&iso, Firmware::SeaBios),
    );
    tally.record(
        "iso: OVMF (UEFI) boot reaches the prompt",
        boot_cd(&iso, Firmware::Ovmf),
    );
}

fn boot_cd(iso: &Path, firmware: Firmware) -> CheckResult {
    let machine = MachineOptions::default();
    let medium = BootMedium::Cdrom(iso.to_path_buf(), firmware);
    let mut session =
        QemuSession::start(&machine, &medium, TIME_LIMIT).map_err(|failure| failure.to_string())?;
    session
        .wait_for_text(PROMPT, 1)
        .map_err(|why| with_log(format!("no prompt: {why}"), &session))?;
    let expected = cpus_online(machine.cpu_count);
    if !has_line_containing(&session.log(), &expected) {
        return Err(with_log(
            format!("expected a line `{expected}, ...`"),
            &session,
        ));
    }
    // Power-off is checked by the direct boot tests; here QEMU is killed if it lingers.
    let _ = session.send(POWEROFF);
    Ok(())
}
