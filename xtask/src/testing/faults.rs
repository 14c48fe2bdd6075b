//! Fault-report tests: the normal image, told by `fault=` on its command
//! line to overflow its stack, panic or execute an invalid opcode, must
//! print the report (exception name, registers, symbolized backtrace naming
//! the faulting function) and end QEMU with status 35.

use super::tally::{with_log, CheckResult, Tally};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, BootMedium, EXIT_FAILED};
use crate::qemu_session::QemuSession;
use std::path::Path;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(120);

/// Each fault and the text its report must contain.
const FAULTS: &[(&str, &[&str])] = &[
    (
        "stack-overflow",
        &[
            "FATAL: double fault",
            "kernel stack overflow",
            "rsp ",
            "backtrace:",
            "lamina::faults::overflow_the_stack",
        ],
    ),
    (
        "panic",
        &[
            "PANIC on CPU 0",
            "deliberate panic",
            "backtrace:",
            "lamina::faults::deliberate_panic",
        ],
    ),
    (
        "invalid-opcode",
        &[
            "FATAL: invalid opcode",
            "rax ",
            "cr3 ",
            "lamina::faults::inject_if_asked",
        ],
    ),
];

pub fn run_fault_tests(image: &Path, tally: &mut Tally) {
    for (fault, expected) in FAULTS {
        tally.record(
            &format!("boot: fault={fault} is reported"),
            injected_fault(image, fault, expected),
        );
    }
}

fn injected_fault(image: &Path, fault: &str, expected: &[&str]) -> CheckResult {
    let medium = BootMedium::KernelWithCommandLine(image.to_path_buf(), format!("fault={fault}"));
    let mut session = QemuSession::start(&MachineOptions::with(2, 256), &medium, TIME_LIMIT)
        .map_err(|failure| failure.to_string())?;
    let code = session
        .wait_for_exit()
        .map_err(|why| with_log(why, &session))?;
    let log = session.log();
    if let Some(missing) = expected.iter().find(|text| !log.contains(*text)) {
        return Err(with_log(format!("the report lacks `{missing}`"), &session));
    }
    if code != Some(EXIT_FAILED) {
        return Err(with_log(
            format!(
                "expected exit 35, QEMU exited with {}",
                describe_exit_status(code)
            ),
            &session,
        ));
    }
    Ok(())
}
