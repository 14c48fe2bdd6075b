//! Part of tier 4: a virtio disk (`cargo xtask exec --disk`) on both
//! kernels. The guest reads `/dev/vda` whole and at its last sector, writes
//! at an odd offset (a partial sector, read-modified-written) and in a run
//! larger than one request, flushes, reads back, and asks the size by
//! ioctl; the outputs must be identical on Lamina and Linux, and each
//! kernel's image on the host must afterwards hold exactly the expected
//! bytes (nothing lost, nothing written elsewhere).

use super::tally::{CheckResult, Tally};
use crate::exec::{run_program, ExecRequest, GuestKernel, Input, Output, ProgramRun};
use crate::failure::{Context, Outcome};
use crate::machine_options::MachineOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(180);
const IMAGE_BYTES: usize = 8 << 20;
/// Where the script writes "hello", and the zeroed run it writes.
const HELLO_AT: usize = 1000;
/// 13 writes of 192 KiB: each more than one 64 KiB request.
const ZEROED: std::ops::Range<usize> = 3 * 65536..42 * 65536;

const SCRIPT: &str = "\
ls -l /dev/vda | cut -c1-10
blockdev --getsize64 /dev/vda
dd if=/dev/vda bs=4096 count=256 2>/dev/null | md5sum
dd if=/dev/vda bs=512 skip=16383 count=1 2>/dev/null | md5sum
printf hello | dd of=/dev/vda bs=1 seek=1000 conv=notrunc 2>/dev/null
dd if=/dev/zero of=/dev/vda bs=196608 seek=1 count=13 conv=notrunc 2>/dev/null
sync
dd if=/dev/vda bs=1 skip=995 count=15 2>/dev/null | od -An -c
dd if=/dev/vda bs=65536 skip=2 count=42 2>/dev/null | md5sum
dd if=/dev/vda bs=512 skip=16384 count=1 2>/dev/null | wc -c
";

pub fn run_disk_checks(tally: &mut Tally) {
    let runs: Vec<(GuestKernel, Outcome<(ProgramRun, PathBuf)>)> = [GuestKernel::Lamina, GuestKernel::Linux].into_iter().map(|kernel| (kernel, run_on(kernel))).collect();
    let expected = expected_image();
    for (kernel, run) in &runs {
        let image_check: CheckResult = match run {
            Ok((run, _)) if run.exit_code != 0 => Err(format!("exit {}; stderr {}", run.exit_code, String::from_utf8_lossy(&run.errors))),
            Ok((_, image)) => compare_image(image, &expected),
            Err(failure) => Err(failure.to_string()),
        };
        tally.record(&format!("disk: /dev/vda keeps exactly what was written, at odd offsets and across requests ({kernel:?})"), image_check);
    }
    let same = match (&runs[0].1, &runs[1].1) {
        (Ok((lamina, _)), Ok((linux, _))) if lamina.output == linux.output && !lamina.output.is_empty() => Ok(()),
        (Ok((lamina, _)), Ok((linux, _))) => Err(format!("Lamina printed:\n{}\nLinux printed:\n{}", String::from_utf8_lossy(&lamina.output), String::from_utf8_lossy(&linux.output))),
        _ => Err("a run failed (see the checks above)".to_string()),
    };
    tally.record("disk: reads, sizes and writes of /dev/vda print the same on Lamina and Linux", same);
}

fn run_on(kernel: GuestKernel) -> Outcome<(ProgramRun, PathBuf)> {
    let image = crate::workspace::root().join("target").join(format!("disk-check-{kernel:?}.img"));
    std::fs::write(&image, pattern()).context(|| format!("writing {}", image.display()))?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: crate::guest_files::BUSYBOX.into(),
        program_arguments: vec!["sh".to_string(), "-c".to_string(), SCRIPT.to_string()],
        disk: Some(image.clone()),
        // Raw writes to the disk: it must not be mounted.
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    let run = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))?;
    Ok((run, image))
}

/// The image before: every byte a function of its offset.
fn pattern() -> Vec<u8> {
    (0..IMAGE_BYTES).map(|offset| (offset.wrapping_mul(31).wrapping_add(offset >> 9) % 251) as u8).collect()
}

/// The image after the script's writes.
fn expected_image() -> Vec<u8> {
    let mut image = pattern();
    image[HELLO_AT..HELLO_AT + 5].copy_from_slice(b"hello");
    image[ZEROED].fill(0);
    image
}

fn compare_image(path: &Path, expected: &[u8]) -> CheckResult {
    let found = std::fs::read(path).map_err(|error| format!("reading {}: {error}", path.display()))?;
    if found.len() != expected.len() {
        return Err(format!("the image is {} bytes, expected {}", found.len(), expected.len()));
    }
    match found.iter().zip(expected).position(|(seen, wanted)| seen != wanted) {
        None => Ok(()),
        Some(offset) => Err(format!("byte {offset} is {:#x}, expected {:#x}", found[offset], expected[offset])),
    }
}
