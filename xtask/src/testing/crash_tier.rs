//! Part of tier 4: the crash tier of the kernel. Lamina runs a workload
//! (`user/tools/crash_workload.c`, the plan of `crash_check::plan`) on a
//! fresh ext4 image mounted at `/mnt`, while QEMU's `blklogwrites` driver
//! logs every write and flush its virtio disk sees. The log is read back
//! (`crash_check::log_writes`), crash states are cut from it (every flush;
//! random subsets and orders of the writes between two flushes), and each
//! must open with its journal replayed, reopen unchanged, pass `e2fsck -fn`
//! (a sample) and show every path as the workload allows: what was
//! fsynced or synced exactly, renames atomic, no byte a file never held.
//!
//! A mutation check follows: the same log with the flush before (after)
//! each journal commit block dropped must fail — proof that the tier
//! can see a kernel that orders or flushes wrongly.

use super::tally::{CheckResult, Tally};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output};
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;
use crash_check::plan::{kernel_workload, marker_positions, model_of, text, Step};
use crash_check::verdicts::{check_every_state, Sampling, Tally as CrashTally};
use crash_check::{log_writes, lose_flushes, AroundCommit, Event};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(300);
/// The file system's size; the disk is 1 MiB larger and the markers lie
/// in that last MiB.
const FILE_SYSTEM_KIB: u64 = 16 * 1024;
/// The block sizes of the images (mkfs.ext4's choice below 512 MiB, and
/// its usual one).
const BLOCK_SIZES: [u32; 2] = [1024, 4096];
const DISK_BYTES: u64 = (FILE_SYSTEM_KIB + 1024) * 1024;
const FIRST_MARKER_SECTOR: u64 = FILE_SYSTEM_KIB * 2;
/// Fewest states a run must check (the bar).
const MINIMUM_STATES: usize = 1000;
const SAMPLING: Sampling = Sampling { per_window: 10, fsck_every: 10, seed: 0x5EED_C4A5 };

pub fn run_crash_tier(tally: &mut Tally) {
    let runs: Vec<(u32, Result<Recorded, String>)> = BLOCK_SIZES.iter().map(|&block_size| (block_size, record(block_size))).collect();
    let mut total = CrashTally { label: "all block sizes".to_string(), ..CrashTally::default() };
    let mut broken = Vec::new();
    for (block_size, recorded) in &runs {
        match recorded {
            Ok(recorded) => {
                let result = check(recorded, &recorded.events, &format!("{block_size} B blocks, as logged"));
                println!("crash tier (kernel): {result}");
                total.absorb(result);
            }
            Err(why) => broken.push(format!("{block_size} B blocks: {why}")),
        }
    }
    let verdict: CheckResult = if !broken.is_empty() {
        Err(broken.join("\n"))
    } else if !total.failures.is_empty() {
        Err(format!("{} of {} states fail; first:\n{}", total.failures.len(), total.states(), total.failures[..total.failures.len().min(3)].join("\n")))
    } else if total.states() < MINIMUM_STATES || total.replayed == 0 {
        Err(format!("too few states, or none with a journal to replay: {total}"))
    } else {
        Ok(())
    };
    tally.record(
        &format!("crash tier: every crash state of Lamina's own disk writes (ext4 with {BLOCK_SIZES:?} B blocks, logged by QEMU blklogwrites; at least {MINIMUM_STATES}) loses nothing fsynced or synced"),
        verdict,
    );
    for which in [AroundCommit::Before, AroundCommit::After] {
        let caught: CheckResult = match &runs[0].1 {
            Ok(recorded) => {
                let mut events = recorded.events.clone();
                let lost = lose_flushes(&mut events, which);
                let result = check(recorded, &events, &format!("{} B blocks, mutation: flush {which:?} each commit lost", runs[0].0));
                println!("crash tier (kernel): {result}");
                if lost > 0 && !result.failures.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{lost} flushes dropped, yet no state failed: {result}"))
                }
            }
            Err(_) => Err("the workload did not run (see above)".to_string()),
        };
        tally.record(&format!("crash tier: dropping the flush {} each journal commit is caught", format!("{which:?}").to_lowercase()), caught);
    }
}

/// What one run of the workload left.
struct Recorded {
    initial: Vec<u8>,
    events: Vec<Event>,
    steps: Vec<Step>,
}

fn check(recorded: &Recorded, events: &[Event], label: &str) -> CrashTally {
    let positions = marker_positions(events, FIRST_MARKER_SECTOR, recorded.steps.len());
    let model = positions.and_then(|positions| model_of(&recorded.steps, &positions, events.len()));
    match model {
        Ok(model) => check_every_state(label, &recorded.initial, events, &model, SAMPLING),
        Err(why) => CrashTally { label: label.to_string(), failures: vec![format!("the markers: {why}")], ..CrashTally::default() },
    }
}

/// Runs the workload on Lamina over a fresh image with its writes logged.
fn record(block_size: u32) -> Result<Recorded, String> {
    let outcome: Outcome<Recorded> = (|| {
        let directory = crate::workspace::root().join("target").join("crash-tier");
        std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
        let (image, log, plan_file) = (directory.join(format!("disk-{block_size}.img")), directory.join(format!("writes-{block_size}.log")), directory.join("plan.txt"));
        make_image(&image, block_size)?;
        let initial = std::fs::read(&image).context(|| format!("reading {}", image.display()))?;
        std::fs::write(&log, b"").context(|| format!("creating {}", log.display()))?;
        let steps = kernel_workload();
        std::fs::write(&plan_file, text(&steps)).context(|| format!("writing {}", plan_file.display()))?;
        let workload = crate::guest_programs::compile_c("user/tools/crash_workload.c", "crash_workload")?;
        let request = ExecRequest {
            machine: MachineOptions::default(),
            kernel: GuestKernel::Lamina,
            files: vec![FileCopy { host: plan_file, guest: Some("/etc/crash-plan".to_string()) }],
            program: workload,
            program_arguments: ["/etc/crash-plan", "/mnt", "/dev/vda", &FIRST_MARKER_SECTOR.to_string()].map(str::to_string).to_vec(),
            disk: Some(image.clone()),
            mount_disk: true,
            disk_log: Some(log.clone()),
        };
        let run = run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))?;
        let printed = String::from_utf8_lossy(&run.output);
        if run.exit_code != 0 || !printed.contains("operations done") {
            return Err(Failure::failed(format!("the workload failed (exit {}):\n{printed}{}", run.exit_code, String::from_utf8_lossy(&run.errors))));
        }
        let bytes = std::fs::read(&log).context(|| format!("reading {}", log.display()))?;
        let parsed = log_writes::parse(&bytes).map_err(|error| Failure::failed(format!("{}: {error}", log.display())))?;
        if parsed.events.is_empty() {
            return Err(Failure::failed(format!("{}: no writes logged", log.display())));
        }
        Ok(Recorded { initial, events: parsed.events, steps })
    })();
    outcome.map_err(|failure| failure.to_string())
}

/// A fresh image: ext4 (mkfs.ext4's defaults: journal, metadata_csum,
/// 64bit, flex_bg) in its first 16 MiB, and 1 MiB for the markers.
fn make_image(path: &Path, block_size: u32) -> Outcome {
    let file = std::fs::File::create(path).context(|| format!("creating {}", path.display()))?;
    file.set_len(DISK_BYTES).context(|| format!("sizing {}", path.display()))?;
    let output = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-N", "256", "-b"])
        .arg(block_size.to_string())
        .arg(path)
        .arg((FILE_SYSTEM_KIB * 1024 / u64::from(block_size)).to_string())
        .output()
        .context(|| "running mkfs.ext4 (package e2fsprogs)".to_string())?;
    if !output.status.success() {
        return Err(Failure::failed(format!("mkfs.ext4: {}", String::from_utf8_lossy(&output.stderr))));
    }
    Ok(())
}


/// `cargo xtask crash`: this tier alone, with its tallies.
pub fn crash_command() -> Outcome {
    crate::dependencies::ensure_dependencies()?;
    let mut tally = Tally::default();
    run_crash_tier(&mut tally);
    print!("{}", tally.recap());
    println!("{}", tally.summary());
    match tally.failed() {
        0 => Ok(()),
        failed => Err(Failure::failed(format!("{failed} crash check(s) failed"))),
    }
}
