//! Part of tier 4: the page cache under memory pressure, on both kernels
//! (a 256 MiB guest, a fresh 400 MiB ext4 image each, mounted at /mnt).
//! A 300 MiB file is written and read twice, which fills memory with
//! cached file data (`/proc/meminfo` must count over 64 MiB of it: Linux
//! keeps ~175 MiB, Lamina ~120 MiB, bounded by its kernel heap); then
//! an 80 MiB tmpfs file and a program touching 80 MiB of its own memory
//! (`user/tools/hold_memory.c`) must both fit: the cache gives frames back
//! to a tmpfs write and to page faults instead of failing them. The two
//! kernels must print the same lines.

use super::guest_runs::{fresh_ext4_image, same_output};
use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::MachineOptions;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(300);

const SCRIPT: &str = r#"
cd /mnt
dd if=/dev/zero of=big bs=1M count=300 2>/dev/null; sync
cat big > /dev/null; cat big > /dev/null
awk '/^Cached:/ { print ($2 > 65536) ? "cached: over 64 MiB" : "cached: only " $2 " kB" }' /proc/meminfo
head -c 80m /dev/zero > /tmp/fill && echo "tmpfs: 80 MiB written"
/hold_memory 80
rm /tmp/fill big
echo done
"#;

pub fn run_page_cache_checks(tally: &mut Tally) {
    let runs = std::thread::scope(|scope| {
        let lamina = scope.spawn(|| boot(GuestKernel::Lamina));
        let linux = boot(GuestKernel::Linux);
        (lamina.join().unwrap_or_else(|_| Err(crate::failure::Failure::failed("the Lamina run panicked"))), linux)
    });
    let result = match runs {
        (Ok(lamina), Ok(linux)) => same_output(&lamina, &linux, |output| output.ends_with("held 80 MiB\ndone\n")),
        (Err(failure), _) => Err(format!("Lamina: {failure}")),
        (_, Err(failure)) => Err(format!("Linux: {failure}")),
    };
    tally.record("page cache: a 300 MiB file fills memory, then tmpfs and page faults get it back (Lamina = Linux)", result);
}

fn boot(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let image = fresh_ext4_image(&format!("page-cache-check-{kernel:?}"), "400M")?;
    let hold_memory = crate::guest_programs::compile_c("user/tools/hold_memory.c", "hold_memory")?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: vec![FileCopy { host: hold_memory, guest: Some("/hold_memory".to_string()) }],
        program: crate::guest_files::BUSYBOX.into(),
        program_arguments: vec!["sh".to_string(), "-c".to_string(), format!("exec 2>&1\n{SCRIPT}")],
        disk: Some(image.clone()),
        mount_disk: true,
        disk_log: None,
        network: None,
    };
    let run = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT));
    let _ = std::fs::remove_file(&image);
    run
}
