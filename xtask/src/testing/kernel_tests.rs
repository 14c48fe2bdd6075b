//! Tier 3: the in-kernel test image under TCG with 1, 2, 4 and 8 CPUs. It
//! passes only on exit status 33 with `ktest: N passed, 0 failed`, N > 0.

use super::tally::{with_log, CheckResult, Tally};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, BootMedium, EXIT_PASSED};
use crate::qemu_session::QemuSession;
use crate::serial_protocol::ktest_counts;
use std::path::Path;
use std::time::Duration;

/// CPU counts the tests run with.
pub const CPU_COUNTS: [u32; 4] = [1, 2, 4, 8];
/// Guest memory: 1 GiB gives a 64 MiB kernel heap, room for the
/// capability tests' 100,000-node chains and trees.
const KTEST_MEMORY_MIB: u32 = 1024;
/// Longest one run of the test image may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(120);

pub fn run_kernel_tests(tally: &mut Tally) {
    let image = match build_kernel(ImageKind::Test) {
        Ok(image) => image,
        Err(failure) => {
            return tally.record("ktest: build the test image", Err(failure.to_string()))
        }
    };
    for cpu_count in CPU_COUNTS {
        tally.record(
            &format!("ktest: smp={cpu_count}"),
            run_test_image(&image, cpu_count),
        );
    }
}

fn run_test_image(image: &Path, cpu_count: u32) -> CheckResult {
    let machine = MachineOptions::with(cpu_count, KTEST_MEMORY_MIB);
    let medium = BootMedium::Kernel(image.to_path_buf());
    let mut session =
        QemuSession::start(&machine, &medium, TIME_LIMIT).map_err(|failure| failure.to_string())?;
    let code = session
        .wait_for_exit()
        .map_err(|why| with_log(why, &session))?;
    let log = session.log();
    match (code, ktest_counts(&log)) {
        (Some(EXIT_PASSED), Some((passed, 0))) if passed > 0 => Ok(()),
        (_, None) => Err(with_log(
            format!("no `ktest: N passed, M failed` line; QEMU exited with {}", describe_exit_status(code)),
            &session,
        )),
        (_, Some((passed, failed))) => Err(with_log(
            format!("expected exit 33 and N>0 passed, 0 failed; saw {passed} passed, {failed} failed, exit {}",
                describe_exit_status(code)),
            &session,
        )),
    }
}
