//! Part of tier 4: `make run`'s persistent root, as a user meets it. A
//! fresh root image is made from the shell's tree; the first boot (the
//! very QEMU command `make run` builds, on a piped console) makes files at
//! the shell and powers off with BusyBox `poweroff`; the image must then
//! pass `e2fsck -fn`; a second boot must find the files, byte for byte,
//! and name the disk as its root in `/proc/mounts`.
//!
//! A third boot writes a file, never syncs, sleeps 12 s and is killed (a
//! power cut): after `e2fsck -fy` replays the journal the file must hold
//! its bytes — the commit thread made it durable within 5 s.
//!
//! The typed commands never contain the text the checks look for (the
//! console echoes what is typed), so only the guest's output can match.

use super::tally::{with_log, CheckResult, Tally};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, EXIT_PASSED};
use crate::qemu_session::QemuSession;
use crate::run::shell_boot;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Longest one boot may take under TCG.
const TIME_LIMIT: Duration = Duration::from_secs(240);
/// BusyBox's prompt for root in `/`.
const SHELL_PROMPT: &str = "/ # ";

const FIRST_BOOT: &str = "\
mkdir -p /home/user && echo $((6*7))-kept > /root/note && cp /bin/busybox /home/user/copy && ln -s copy /home/user/link
md5sum /home/user/copy > /root/sums && echo made-$((2+3))
poweroff
";

const SECOND_BOOT: &str = "\
cat /root/note; md5sum -c /root/sums; readlink /home/user/link; head -n 1 /proc/mounts
poweroff
";

/// Typed, then QEMU is killed (a power cut): no sync, no unmount; only
/// the commit thread (every 5 s) can have made the file durable.
const CUT_AFTER_A_WHILE: &str = "echo durable-$((3*3)) > /root/late; sleep 12; echo slept-$((1+1))\n";

pub fn run_root_disk_checks(tally: &mut Tally) {
    let image = crate::workspace::root().join("target").join("root-disk-check.img");
    let _ = std::fs::remove_file(&image);
    let survived = boot_twice(&image);
    let ran = survived.is_ok();
    tally.record("make run: files made at the shell survive poweroff and the next boot (root on target/lamina-disk.img)", survived);
    let cut = if ran { power_cut(&image) } else { Err("the boots before did not work".to_string()) };
    tally.record("make run: a file never synced is on the disk after a power cut 12 s later (the 5 s commit thread), journal replayed by e2fsck", cut);
}

/// Writes a file without syncing, waits, kills QEMU, and reads the file
/// back from the image after e2fsck replayed the journal.
fn power_cut(image: &Path) -> CheckResult {
    let kernel = build_kernel(ImageKind::Normal).map_err(|failure| failure.to_string())?;
    let mut session = start_shell(&kernel, image)?;
    session.send(CUT_AFTER_A_WHILE).map_err(|failure| failure.to_string())?;
    session.wait_for_text("slept-2", 1).map_err(|why| with_log(format!("the shell did not finish its sleep: {why}"), &session))?;
    drop(session);
    let copy = image.with_extension("cut.img");
    std::fs::copy(image, &copy).map_err(|error| format!("copying {}: {error}", image.display()))?;
    let repair = Command::new("e2fsck").args(["-fy"]).arg(&copy).output().map_err(|error| format!("running e2fsck: {error}"))?;
    // 0: clean; 1: the journal was replayed or something fixed.
    if !matches!(repair.status.code(), Some(0 | 1)) {
        return Err(format!("e2fsck -fy after the power cut: {}\n{}", repair.status, String::from_utf8_lossy(&repair.stdout)));
    }
    let check = Command::new("e2fsck").args(["-fn"]).arg(&copy).output().map_err(|error| format!("running e2fsck: {error}"))?;
    if !check.status.success() {
        return Err(format!("e2fsck -fn after the replay: {}\n{}", check.status, String::from_utf8_lossy(&check.stdout)));
    }
    let read = Command::new("debugfs").args(["-R", "cat /root/late"]).arg(&copy).output().map_err(|error| format!("running debugfs: {error}"))?;
    let _ = std::fs::remove_file(&copy);
    let content = String::from_utf8_lossy(&read.stdout);
    if content.trim() != "durable-9" {
        return Err(format!("/root/late after the power cut holds {content:?} (debugfs: {})", String::from_utf8_lossy(&read.stderr).trim()));
    }
    Ok(())
}

fn boot_twice(image: &Path) -> CheckResult {
    let kernel = build_kernel(ImageKind::Normal).map_err(|failure| failure.to_string())?;
    let first = boot_and_type(&kernel, image, FIRST_BOOT)?;
    if !first.contains("made-5") {
        return Err(format!("the first boot did not make the files:\n{}", tail(&first)));
    }
    let check = Command::new("e2fsck").args(["-fn"]).arg(image).output().map_err(|error| format!("running e2fsck: {error}"))?;
    if !check.status.success() {
        return Err(format!("e2fsck -fn after poweroff: {}\n{}", check.status, String::from_utf8_lossy(&check.stdout)));
    }
    let second = boot_and_type(&kernel, image, SECOND_BOOT)?;
    for expected in ["42-kept", "/home/user/copy: OK", "\ncopy", "/dev/vda / ext4 rw"] {
        if !second.contains(expected) {
            return Err(format!("the second boot did not print `{}`:\n{}", expected.trim(), tail(&second)));
        }
    }
    Ok(())
}

/// Boots the shell with its root on `image`, up to its prompt.
fn start_shell(kernel: &Path, image: &Path) -> Result<QemuSession, String> {
    let boot = shell_boot(kernel.to_path_buf(), Some(image)).map_err(|failure| failure.to_string())?;
    let mut session = QemuSession::start_with(&MachineOptions::default(), &boot.medium, &boot.disk_arguments, TIME_LIMIT).map_err(|failure| failure.to_string())?;
    session.wait_for_text(SHELL_PROMPT, 1).map_err(|why| with_log(format!("no shell prompt: {why}"), &session))?;
    Ok(session)
}

/// Boots the shell with its root on `image`, types `commands` at the
/// prompt, and waits for the guest to power off; returns the console.
fn boot_and_type(kernel: &Path, image: &Path, commands: &str) -> Result<String, String> {
    let mut session = start_shell(kernel, image)?;
    session.send(commands).map_err(|failure| failure.to_string())?;
    match session.wait_for_exit() {
        Ok(Some(0 | EXIT_PASSED)) => Ok(session.log()),
        Ok(code) => Err(with_log(format!("poweroff: QEMU exited with {}", describe_exit_status(code)), &session)),
        Err(why) => Err(with_log(format!("poweroff did not end QEMU: {why}"), &session)),
    }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
