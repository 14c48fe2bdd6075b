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
use crate::disk_image::Mkfs;
use crate::failure::{Context, Failure, Outcome};
use crate::machine_options::MachineOptions;
use crash_check::check::ExtraVerdict;
use crash_check::plan::{kernel_workload, marker_positions, model_of, sql_rows_allowed, sql_spans, sqlite_workload, text, Step, SQL_DATABASE};
use crash_check::states::CrashDisk;
use crash_check::verdicts::{check_every_state, Sampling, Tally as CrashTally};
use crash_check::{log_writes, lose_flushes, AroundCommit, Event};
use crash_check::ext4::{Ext4, Resolution};
use std::path::{Path, PathBuf};
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
    let runs: Vec<(u32, Result<Recorded, String>)> = BLOCK_SIZES.iter().map(|&block_size| (block_size, record(block_size, kernel_workload(), None))).collect();
    let mut total = CrashTally { label: "all block sizes".to_string(), ..CrashTally::default() };
    let mut broken = Vec::new();
    for (block_size, recorded) in &runs {
        match recorded {
            Ok(recorded) => {
                let result = check(recorded, &recorded.events, &format!("{block_size} B blocks, as logged"), None);
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
                let result = check(recorded, &events, &format!("{} B blocks, mutation: flush {which:?} each commit lost", runs[0].0), None);
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
    tally.record(
        "crash tier: SQLite transactions on Lamina (a sqlite3 process per insert) survive every crash state: integrity_check ok, every committed row there, no row half-inserted",
        sqlite_crashes(),
    );
}

/// The SQLite workload's run and verdicts.
fn sqlite_crashes() -> CheckResult {
    let sqlite = crate::outside::programs::PROGRAMS
        .iter()
        .find(|program| program.name == "sqlite3")
        .ok_or("no sqlite3 recipe")?;
    let binary = crate::outside::programs::built(sqlite).map_err(|failure| failure.to_string())?;
    let recorded = record(4096, sqlite_workload(), Some(&binary))?;
    let positions = marker_positions(&recorded.events, FIRST_MARKER_SECTOR, recorded.steps.len())?;
    let spans = sql_spans(&recorded.steps, &positions, SQL_DATABASE);
    let scratch = crate::workspace::root().join("target").join("crash-tier").join("sqlite-state");
    let verdict = |fs: &Ext4<CrashDisk>, bound: usize| -> Result<(), String> {
        let (fewest, most, table) = sql_rows_allowed(&spans, bound);
        let rows = database_rows(fs, &binary, &scratch)?;
        match rows {
            None if !table && fewest == 0 => Ok(()),
            None => Err(format!("no table t, though its create returned ({fewest} to {most} rows expected; files: {})", describe_files(fs))),
            Some((count, highest)) if (fewest..=most).contains(&count) && highest == i64::from(count) - 1 => Ok(()),
            Some((count, highest)) => Err(format!("{count} rows (highest id {highest}); {fewest} to {most} expected, ids 0 up")),
        }
    };
    let result = check(&recorded, &recorded.events, "SQLite, 4096 B blocks", Some(&verdict));
    println!("crash tier (kernel): {result}");
    if !result.failures.is_empty() {
        return Err(format!("{} of {} states fail; first:\n{}", result.failures.len(), result.states(), result.failures[..result.failures.len().min(3)].join("\n")));
    }
    if result.states() < 100 {
        return Err(format!("too few states: {result}"));
    }
    Ok(())
}

/// The database's files in a crashed file system, with their sizes.
fn describe_files(fs: &Ext4<CrashDisk>) -> String {
    ["/sql/db", "/sql/db-journal"]
        .iter()
        .map(|name| match fs.resolve(name.as_bytes()) {
            Ok(Resolution::Found(number)) => fs.inode(number).map_or_else(|error| format!("{name} unreadable: {error}"), |inode| format!("{name} {} bytes", inode.size)),
            _ => format!("no {name}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rows of table `t` in the crashed file system's database, as the
/// host's SQLite sees them after rolling back a hot journal: `None` when
/// there is no database or no table; fails on a damaged database.
fn database_rows(fs: &Ext4<CrashDisk>, sqlite: &Path, scratch: &Path) -> Result<Option<(u32, i64)>, String> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).map_err(|error| format!("{}: {error}", scratch.display()))?;
    let mut found_database = false;
    for (name, file) in [(SQL_DATABASE.to_string(), "db"), (format!("{SQL_DATABASE}-journal"), "db-journal")] {
        let number = match fs.resolve(name.as_bytes()) {
            Ok(Resolution::Found(number)) => number,
            _ => continue,
        };
        let inode = fs.inode(number).map_err(|error| format!("{name}: {error}"))?;
        let bytes = crash_check::read_all(fs, &inode, 64 << 20).map_err(|error| format!("{name}: {error}"))?;
        std::fs::write(scratch.join(file), bytes).map_err(|error| format!("{}: {error}", scratch.display()))?;
        found_database |= file == "db";
    }
    if !found_database {
        return Ok(None);
    }
    let output = Command::new(sqlite)
        .arg("-batch")
        .arg(scratch.join("db"))
        .arg("pragma integrity_check; select count(*), coalesce(max(id), -1) from t;")
        .output()
        .map_err(|error| format!("running {}: {error}", sqlite.display()))?;
    let (printed, complaints) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if complaints.contains("no such table: t") {
        return Ok(None);
    }
    let lines: Vec<&str> = printed.lines().collect();
    match lines.as_slice() {
        ["ok", counts] => {
            let (count, highest) = counts.split_once('|').ok_or_else(|| format!("sqlite3 printed {printed:?}"))?;
            let count = count.parse().map_err(|_| format!("sqlite3 printed {printed:?}"))?;
            let highest = highest.parse().map_err(|_| format!("sqlite3 printed {printed:?}"))?;
            Ok(Some((count, highest)))
        }
        _ => Err(format!("the database is damaged: sqlite3 printed {printed:?} {complaints:?}")),
    }
}

/// What one run of the workload left.
struct Recorded {
    initial: Vec<u8>,
    events: Vec<Event>,
    steps: Vec<Step>,
}

fn check(recorded: &Recorded, events: &[Event], label: &str, extra: Option<ExtraVerdict<'_>>) -> CrashTally {
    let positions = marker_positions(events, FIRST_MARKER_SECTOR, recorded.steps.len());
    let model = positions.and_then(|positions| model_of(&recorded.steps, &positions, events.len()));
    match model {
        Ok(model) => check_every_state(label, &recorded.initial, events, &model, SAMPLING, extra),
        Err(why) => CrashTally { label: label.to_string(), failures: vec![format!("the markers: {why}")], ..CrashTally::default() },
    }
}

/// Runs the plan `steps` on Lamina over a fresh image with its writes
/// logged (`sqlite`: the SQLite binary, put at `/bin/sqlite3`).
fn record(block_size: u32, steps: Vec<Step>, sqlite: Option<&Path>) -> Result<Recorded, String> {
    let outcome: Outcome<Recorded> = (|| {
        let directory = crate::workspace::root().join("target").join("crash-tier");
        std::fs::create_dir_all(&directory).context(|| format!("creating {}", directory.display()))?;
        let (image, log, plan_file) = (directory.join(format!("disk-{block_size}.img")), directory.join(format!("writes-{block_size}.log")), directory.join("plan.txt"));
        make_image(&image, block_size)?;
        let initial = std::fs::read(&image).context(|| format!("reading {}", image.display()))?;
        std::fs::write(&log, b"").context(|| format!("creating {}", log.display()))?;
        std::fs::write(&plan_file, text(&steps)).context(|| format!("writing {}", plan_file.display()))?;
        let workload = crate::guest_programs::compile_c("user/tools/crash_workload.c", "crash_workload")?;
        let request = ExecRequest {
            machine: MachineOptions::default(),
            kernel: GuestKernel::Lamina,
            files: [Some((plan_file, "/etc/crash-plan")), sqlite.map(|binary| (binary.to_path_buf(), "/bin/sqlite3"))]
                .into_iter()
                .flatten()
                .map(|(host, guest): (PathBuf, &str)| FileCopy { host, guest: Some(guest.to_string()) })
                .collect(),
            program: workload,
            program_arguments: ["/etc/crash-plan", "/mnt", "/dev/vda", &FIRST_MARKER_SECTOR.to_string()].map(str::to_string).to_vec(),
            disk: Some(image.clone()),
            mount_disk: true,
            disk_log: Some(log.clone()),
            network: None,
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
    let block = block_size.to_string();
    let blocks = FILE_SYSTEM_KIB * 1024 / u64::from(block_size);
    crate::disk_image::format(path, DISK_BYTES, Mkfs { options: &["-N", "256", "-b", &block], blocks: Some(blocks), ..Mkfs::default() })
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
