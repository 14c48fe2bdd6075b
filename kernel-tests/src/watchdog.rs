//! The test watchdog: a thread that wakes every second and, when one test
//! has run longer than [`TEST_TIME_LIMIT_SECONDS`], prints the stall report
//! and ends the run as failed. A test that hangs (rather than failing its
//! own deadline) then still leaves a report of every CPU behind, instead of
//! a QEMU killed by xtask's time limit with nothing said.

use core::sync::atomic::{AtomicU64, Ordering};

use machine::irq_lock::IrqLock;
use machine::percpu;
use machine::stop::{self, ExitCode};
use machine::timer;
use sched::Pinning;

use super::stall_report;

/// Longest one test may run. The slowest, `all_cpus_together_get_every_frame`,
/// takes about 20 s at 8 CPUs on a 2-core host running a second such guest,
/// and 60 s with a build running too; tests wait for progress, not for a
/// deadline (`waiting.rs`), so this is only the last resort for a hang.
const TEST_TIME_LIMIT_SECONDS: u64 = 180;
const SECOND: u64 = 1_000_000_000;

/// Uptime (ns) at which the running test started; 0 between tests.
static STARTED: AtomicU64 = AtomicU64::new(0);
/// Tests passed so far in this run (for the summary line of a hang).
static PASSED: AtomicU64 = AtomicU64::new(0);
static NAME: IrqLock<&'static str> = IrqLock::new("");

/// Records that one more test passed.
pub fn count_pass() {
    // Relaxed: read only by the watchdog for its summary line.
    PASSED.fetch_add(1, Ordering::Relaxed);
}

/// Records that test `name` started at `started` (0: no test runs).
pub fn watch(name: &'static str, started: u64) {
    *NAME.lock() = name;
    // Release: the watchdog that sees the time sees the name.
    STARTED.store(started, Ordering::Release);
}

/// Starts the watchdog thread on the last CPU (nothing happens if it
/// cannot start: the tests still run, only without a watchdog).
pub fn start() {
    let cpu = percpu::online_count() - 1;
    if let Err(error) = sched::spawn_on(cpu, Pinning::Pinned, "ktest-watchdog", watch_forever) {
        machine::println!("ktest: no watchdog: {error:?}");
    }
}

fn watch_forever() {
    loop {
        sched::sleep_until(timer::uptime_nanoseconds() + SECOND, || false);
        let started = STARTED.load(Ordering::Acquire);
        if started != 0 && timer::uptime_nanoseconds() - started > TEST_TIME_LIMIT_SECONDS * SECOND {
            let name = *NAME.lock();
            machine::println!("ktest: {name} ... FAILED: still running after {TEST_TIME_LIMIT_SECONDS} s");
            stall_report::print("a test hangs");
            machine::println!("ktest: {} passed, 1 failed", PASSED.load(Ordering::Relaxed));
            stop::fatal_stop(ExitCode::Failure);
        }
    }
}
