//! A QEMU child driven through pipes: collects its serial output (and
//! stderr), waits for text or for its exit against one deadline, types on
//! its serial input, and is killed when the session is dropped.

use crate::failure::{Context, Outcome};
use crate::machine_options::MachineOptions;
use crate::qemu_command::{describe_exit_status, qemu_command, BootMedium, Console};
use crate::workspace;
use std::fmt;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How often we look at the child while no output arrives.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Why a wait ended without what it waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFailure {
    /// The deadline passed.
    TimedOut(Duration),
    /// The guest printed nothing for this long (a session
    /// [`failing_when_quiet`](QemuSession::failing_when_quiet)).
    Quiet(Duration),
    /// QEMU ended first, with this exit code (`None`: killed by a signal).
    Exited(Option<i32>),
}

impl fmt::Display for WaitFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitFailure::TimedOut(limit) => {
                write!(formatter, "timed out after {} s", limit.as_secs())
            }
            WaitFailure::Quiet(limit) => {
                write!(formatter, "printed nothing for {} s", limit.as_secs())
            }
            WaitFailure::Exited(code) => write!(
                formatter,
                "QEMU exited with {}",
                describe_exit_status(*code)
            ),
        }
    }
}

/// A running QEMU.
pub struct QemuSession {
    child: Child,
    input: Option<ChildStdin>,
    chunks: Receiver<Vec<u8>>,
    output: Vec<u8>,
    output_closed: bool,
    exit_code: Option<Option<i32>>,
    started: Instant,
    time_limit: Duration,
    /// With [`QemuSession::failing_when_quiet`]: the longest the guest may
    /// print nothing, and when it last printed.
    quiet_limit: Option<Duration>,
    last_output: Instant,
}

impl QemuSession {
    /// Starts QEMU; every wait fails once `time_limit` has passed since now.
    pub fn start(
        machine: &MachineOptions,
        medium: &BootMedium,
        time_limit: Duration,
    ) -> Outcome<Self> {
        Self::start_with(machine, medium, &[], time_limit)
    }

    /// [`start`](Self::start) with more QEMU arguments (a disk).
    pub fn start_with(
        machine: &MachineOptions,
        medium: &BootMedium,
        extra_arguments: &[String],
        time_limit: Duration,
    ) -> Outcome<Self> {
        let mut command = qemu_command(machine, medium, Console::Piped);
        command.args(extra_arguments);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let shown = workspace::describe(&command);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .context(|| format!("cannot start {shown}"))?;
        let (sender, chunks) = mpsc::channel();
        forward(child.stdout.take(), sender.clone());
        forward(child.stderr.take(), sender);
        let input = child.stdin.take();
        let (output, output_closed, exit_code) = (Vec::new(), false, None);
        Ok(QemuSession {
            child,
            input,
            chunks,
            output,
            output_closed,
            exit_code,
            started,
            time_limit,
            quiet_limit: None,
            last_output: started,
        })
    }

    /// Makes every wait fail only when the guest has printed nothing for
    /// `quiet_limit` (its overall time limit still holds): for guests that
    /// report progress line by line, whose total time depends on how much
    /// of the host's CPUs they get (the in-kernel tests on 8 vCPUs of a
    /// loaded 2-core host), so that slow is not taken for stuck.
    pub fn failing_when_quiet(mut self, quiet_limit: Duration) -> Self {
        self.quiet_limit = Some(quiet_limit);
        self
    }

    /// When QEMU was spawned.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Everything QEMU printed so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }

    /// Waits until `text` has appeared `count` times in the output.
    pub fn wait_for_text(&mut self, text: &str, count: usize) -> Result<(), WaitFailure> {
        // The session's own time limit ends the wait first.
        let never = self.started + self.time_limit + Duration::from_secs(1);
        self.wait_for_text_until(text, count, never).map(|_| ())
    }

    /// [`Self::wait_for_text`] until `until` at the latest: `Ok(false)` if
    /// the text has not appeared by then.
    pub fn wait_for_text_until(&mut self, text: &str, count: usize, until: Instant) -> Result<bool, WaitFailure> {
        loop {
            if self.log().matches(text).count() >= count {
                return Ok(true);
            }
            if let Some(code) = self.finished_code() {
                return Err(WaitFailure::Exited(code));
            }
            if Instant::now() >= until {
                return Ok(false);
            }
            self.receive_until_deadline()?;
        }
    }

    /// Waits for QEMU to exit by itself; returns its exit code.
    pub fn wait_for_exit(&mut self) -> Result<Option<i32>, WaitFailure> {
        loop {
            if let Some(code) = self.finished_code() {
                return Ok(code);
            }
            self.receive_until_deadline()?;
        }
    }

    /// Types `text` on the guest's serial input.
    pub fn send(&mut self, text: &str) -> Outcome {
        let input = self
            .input
            .as_mut()
            .expect("stdin is piped until the session ends");
        input
            .write_all(text.as_bytes())
            .context(|| "cannot write to QEMU's serial input".to_string())?;
        input
            .flush()
            .context(|| "cannot write to QEMU's serial input".to_string())
    }

    /// The exit code once QEMU has exited and all its output is read.
    fn finished_code(&mut self) -> Option<Option<i32>> {
        if self.exit_code.is_none() {
            self.exit_code = self
                .child
                .try_wait()
                .ok()
                .flatten()
                .map(|status| status.code());
        }
        self.exit_code.filter(|_| self.output_closed)
    }

    /// Takes output for at most one poll interval; fails past the deadline.
    fn receive_until_deadline(&mut self) -> Result<(), WaitFailure> {
        let elapsed = self.started.elapsed();
        if elapsed >= self.time_limit {
            return Err(WaitFailure::TimedOut(self.time_limit));
        }
        let mut left = self.time_limit - elapsed;
        if let Some(quiet_limit) = self.quiet_limit {
            let quiet = self.last_output.elapsed();
            if quiet >= quiet_limit {
                return Err(WaitFailure::Quiet(quiet_limit));
            }
            left = left.min(quiet_limit - quiet);
        }
        let wait = POLL_INTERVAL.min(left);
        match self.chunks.recv_timeout(wait) {
            Ok(chunk) => {
                self.output.extend_from_slice(&chunk);
                self.last_output = Instant::now();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => self.note_output_closed(wait),
        }
        Ok(())
    }

    /// Both pipes are closed; wait for the exit without spinning.
    fn note_output_closed(&mut self, wait: Duration) {
        self.output_closed = true;
        if self.finished_code().is_none() {
            std::thread::sleep(wait);
        }
    }
}

impl Drop for QemuSession {
    fn drop(&mut self) {
        if self.exit_code.is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Copies everything from `source` into `sink` on a thread of its own.
fn forward(source: Option<impl Read + Send + 'static>, sink: Sender<Vec<u8>>) {
    let Some(mut source) = source else { return };
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(length @ 1..) = source.read(&mut buffer) {
            if sink.send(buffer[..length].to_vec()).is_err() {
                break;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu_command::{Firmware, QEMU};
    use std::path::PathBuf;

    /// These tests start the real QEMU; without it (`cargo xtask deps`) they are skipped.
    fn qemu_is_installed() -> bool {
        let found = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|directory| directory.join(QEMU).is_file())
        });
        if !found {
            eprintln!("skipped: {QEMU} is not installed");
        }
        found
    }

    #[test]
    fn qemu_refusing_to_start_is_reported_with_its_message() {
        if !qemu_is_installed() {
            return;
        }
        let medium = BootMedium::Kernel(PathBuf::from("/nonexistent/lamina"));
        let mut session = QemuSession::start(
            &MachineOptions::with(1, 64),
            &medium,
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(
            session.wait_for_text("lamina> ", 1),
            Err(WaitFailure::Exited(Some(1)))
        );
        assert!(
            session.log().contains("/nonexistent/lamina"),
            "log: {}",
            session.log()
        );
    }

    #[test]
    fn a_silent_guest_times_out_and_is_killed() {
        if !qemu_is_installed() {
            return;
        }
        let empty_cd = std::env::temp_dir().join(format!("xtask-empty-{}.iso", std::process::id()));
        std::fs::write(&empty_cd, [0u8; 2048]).unwrap();
        let medium = BootMedium::Cdrom(empty_cd.clone(), Firmware::SeaBios);
        let limit = Duration::from_secs(2);
        let mut session = QemuSession::start(&MachineOptions::with(1, 64), &medium, limit).unwrap();
        assert_eq!(
            session.wait_for_text("lamina> ", 1),
            Err(WaitFailure::TimedOut(limit))
        );
        assert!(session.started().elapsed() < limit + Duration::from_secs(1));
        let process = PathBuf::from(format!("/proc/{}", session.child.id()));
        drop(session);
        assert!(!process.exists(), "QEMU outlived its session");
        std::fs::remove_file(empty_cd).unwrap();
    }
}
