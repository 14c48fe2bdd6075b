//! The in-kernel test runner.
//!
//! Runs the tests in [`FILES`] in order on one thread, prints
//! `ktest: <name> ... ok (<ms> ms)` or `... FAILED: <why> (<ms> ms)`, then
//! `ktest: N passed, M failed`, and ends QEMU through the exit device with
//! success only when nothing failed. The kernel command line can select
//! tests and ask for many rounds in one boot (see [`StressPlan`]); a failure
//! ends the run with a stall report of every CPU.

use alloc::string::String;
use alloc::vec::Vec;

use machine::stop::{self, ExitCode};
use machine::timer;

use super::{boot_checks, capabilities, containers, socket_charges, user_mode, exceptions, exhaustion, frame_record, frames_and_contexts, protection_faults, frames_every_cpu, groups, locks, memory, multikernel, smp, sync_objects, threads, tlb_reach, virtualization};
use super::stress_plan::StressPlan;
use super::{stall_report, watchdog};
use kernel_objects::SystemFacts;

/// A test's verdict: `Err` says what was expected and what was seen.
pub type Outcome = Result<(), String>;

/// One in-kernel test.
pub struct Test {
    pub name: &'static str,
    pub body: fn(&SystemFacts) -> Outcome,
}

/// Every file's tests, in the order they run. A file of tests missing
/// here leaves its `TESTS` unused, which this crate refuses to compile.
static FILES: &[&[Test]] = &[
    boot_checks::TESTS,
    memory::TESTS,
    frame_record::TESTS,
    // Before the SMAP/SMEP probes: they show that running a guest left
    // the host's protections as they were.
    virtualization::TESTS,
    protection_faults::TESTS,
    frames_and_contexts::TESTS,
    exceptions::TESTS,
    smp::TESTS,
    frames_every_cpu::TESTS,
    exhaustion::TESTS,
    containers::TESTS,
    user_mode::TESTS,
    tlb_reach::TESTS,
    capabilities::TESTS,
    multikernel::TESTS,
    groups::TESTS,
    locks::TESTS,
    threads::TESTS,
    sync_objects::TESTS,
    // Last: it leaves the network (a lazily made global, never freed) on
    // the heap, which before caps' 100,000-copy chain could split the
    // largest free block (that test then saw OutOfMemory at smp=8, once).
    socket_charges::TESTS,
];

/// Lists the tests of one file where they are written, as `TESTS`: each
/// named `group::function`, so a name cannot drift from its function. A
/// test function left out of the list is dead code, which this crate
/// refuses to compile.
#[macro_export]
macro_rules! kernel_tests {
    ($($group:literal => [$($test:ident),* $(,)?]),* $(,)?) => {
        pub(crate) const TESTS: &[$crate::runner::Test] = &[
            $($($crate::runner::Test { name: concat!($group, "::", stringify!($test)), body: $test },)*)*
        ];
    };
}

/// Runs the tests the command line selects, as many rounds as it asks
/// for, and ends the run: at the first failing round, after a stall report.
pub fn run_all(facts: &'static SystemFacts) -> ! {
    let plan = match StressPlan::parse(&facts.command_line) {
        Ok(plan) => plan,
        Err(why) => {
            machine::println!("ktest: bad command line: {why}");
            stop::halt_machine(ExitCode::Failure)
        }
    };
    let selected: Vec<&Test> = FILES.iter().copied().flatten().filter(|test| plan.selects(test.name)).collect();
    machine::println!(
        "ktest: running {} tests on {} CPUs, {} round(s)",
        selected.len(),
        machine::percpu::online_count(),
        plan.rounds
    );
    watchdog::start();
    let (mut passed, mut failed) = (0, 0);
    for round in 1..=plan.rounds {
        if plan.rounds > 1 {
            machine::println!("ktest: round {round} of {}", plan.rounds);
        }
        for test in &selected {
            match run_one(test, facts) {
                Ok(()) => passed += 1,
                Err(_) if plan.rounds > 1 => {
                    // Report while the failure is fresh, and stop here.
                    failed += 1;
                    stall_report::print(test.name);
                    break;
                }
                Err(_) => failed += 1,
            }
        }
        if failed > 0 {
            if plan.rounds == 1 {
                stall_report::print("after a failed round");
            }
            break;
        }
    }
    machine::println!("ktest: {passed} passed, {failed} failed");
    stop::halt_machine(if failed == 0 { ExitCode::Success } else { ExitCode::Failure })
}

/// Runs one test under the watchdog and prints its verdict and duration.
fn run_one(test: &Test, facts: &SystemFacts) -> Outcome {
    let started = timer::uptime_nanoseconds();
    watchdog::watch(test.name, started);
    let outcome = (test.body)(facts);
    watchdog::watch("", 0);
    let milliseconds = (timer::uptime_nanoseconds() - started) / 1_000_000;
    match &outcome {
        Ok(()) => {
            watchdog::count_pass();
            machine::println!("ktest: {} ... ok ({milliseconds} ms)", test.name)
        }
        Err(why) => machine::println!("ktest: {} ... FAILED: {why} ({milliseconds} ms)", test.name),
    }
    outcome
}

/// `Ok` when `condition` holds, else `Err(message())`.
pub fn check(condition: bool, message: impl FnOnce() -> String) -> Outcome {
    if condition {
        Ok(())
    } else {
        Err(message())
    }
}
