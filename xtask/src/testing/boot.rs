//! Boot tests of the normal image: with 1, 2, 4 and 8 CPUs it must reach the
//! prompt, report the right CPU count, answer `cpus` and power off; with
//! 8 MiB it must report a failed boot and end QEMU with status 37.

use super::kernel_tests::CPU_COUNTS;
use super::tally::{with_log, CheckResult, Tally};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, BootMedium, EXIT_BOOT_ERROR, EXIT_PASSED};
use crate::qemu_session::QemuSession;
use crate::serial_protocol::{cpus_online, has_line_containing, BOOT_FAILED, POWEROFF, PROMPT};
use std::path::Path;
use std::time::Duration;

/// Longest one boot session may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// Too little memory to boot.
const TOO_LITTLE_MEMORY_MIB: u32 = 8;

pub fn run_boot_tests(tally: &mut Tally) {
    let image = match build_kernel(ImageKind::Normal) {
        Ok(image) => image,
        Err(failure) => {
            return tally.record("boot: build the kernel image", Err(failure.to_string()))
        }
    };
    for cpu_count in CPU_COUNTS {
        tally.record(
            &format!("boot: smp={cpu_count} prompt, cpus, poweroff"),
            boot_and_power_off(&image, cpu_count),
        );
    }
    tally.record(
        &format!("boot: mem={TOO_LITTLE_MEMORY_MIB} fails cleanly"),
        boot_with_too_little_memory(&image),
    );
    super::faults::run_fault_tests(&image, tally);
}

fn start(image: &Path, machine: MachineOptions) -> Result<QemuSession, String> {
    QemuSession::start(
        &machine,
        &BootMedium::Kernel(image.to_path_buf()),
        TIME_LIMIT,
    )
    .map_err(|failure| failure.to_string())
}

fn boot_and_power_off(image: &Path, cpu_count: u32) -> CheckResult {
    let mut session = start(image, MachineOptions::with(cpu_count, 256))?;
    session
        .wait_for_text(PROMPT, 1)
        .map_err(|why| with_log(format!("no prompt: {why}"), &session))?;
    let expected = cpus_online(cpu_count);
    if !has_line_containing(&session.log(), &expected) {
        return Err(with_log(
            format!("expected a line `{expected}, ...`"),
            &session,
        ));
    }
    session
        .send("cpus\n")
        .map_err(|failure| failure.to_string())?;
    session
        .wait_for_text(PROMPT, 2)
        .map_err(|why| with_log(format!("no prompt after `cpus`: {why}"), &session))?;
    session
        .send(POWEROFF)
        .map_err(|failure| failure.to_string())?;
    match session.wait_for_exit() {
        Ok(Some(0 | EXIT_PASSED)) => Ok(()),
        Ok(code) => Err(with_log(
            format!("poweroff: QEMU exited with {}", describe_exit_status(code)),
            &session,
        )),
        Err(why) => Err(with_log(
            format!("poweroff did not end QEMU: {why}"),
            &session,
        )),
    }
}

fn boot_with_too_little_memory(image: &Path) -> CheckResult {
    let mut session = start(image, MachineOptions::with(1, TOO_LITTLE_MEMORY_MIB))?;
    let code = session
        .wait_for_exit()
        .map_err(|why| with_log(why, &session))?;
    if !has_line_containing(&session.log(), BOOT_FAILED) {
        return Err(with_log(
            format!("expected a line with `{BOOT_FAILED}`"),
            &session,
        ));
    }
    if code != Some(EXIT_BOOT_ERROR) {
        return Err(with_log(
            format!(
                "expected exit 37, QEMU exited with {}",
                describe_exit_status(code)
            ),
            &session,
        ));
    }
    Ok(())
}
