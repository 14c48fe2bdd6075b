//! The in-kernel test runner.
//!
//! Runs the tests in [`TESTS`] in order on one thread, prints
//! `ktest: <name> ... ok (<ms> ms)` or `... FAILED: <why> (<ms> ms)`, then
//! `ktest: N passed, M failed`, and ends QEMU through the exit device with
//! success only when nothing failed. The kernel command line can select
//! tests and ask for many rounds in one boot (see [`StressPlan`]); a failure
//! ends the run with a stall report of every CPU.

use alloc::string::String;
use alloc::vec::Vec;

use machine::stop::{self, ExitCode};
use machine::timer;

use super::{boot_checks, capabilities, containers, user_mode, exceptions, exhaustion, frames_and_contexts, frames_every_cpu, locks, memory, smp, sync_objects, threads};
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

static TESTS: &[Test] = &[
    Test { name: "boot::memory_map_is_sane", body: boot_checks::memory_map_is_sane },
    Test { name: "boot::cpu_count_matches_firmware", body: boot_checks::cpu_count_matches_firmware },
    Test { name: "boot::timer_is_calibrated", body: boot_checks::timer_is_calibrated },
    Test { name: "memory::heap_allocations_are_disjoint_and_returned", body: memory::heap_allocations_are_disjoint_and_returned },
    Test { name: "memory::kernel_sections_have_their_rights", body: memory::kernel_sections_have_their_rights },
    Test { name: "memory::stack_has_guard_page", body: memory::stack_has_guard_page },
    Test { name: "memory::frame_allocator_hands_out_each_frame_once", body: frames_and_contexts::frame_allocator_hands_out_each_frame_once },
    Test { name: "memory::kernel_stacks_made_after_boot_are_guarded", body: frames_and_contexts::kernel_stacks_made_after_boot_are_guarded },
    Test { name: "context::switch_ping_pongs", body: frames_and_contexts::context_switch_ping_pongs },
    Test { name: "exceptions::breakpoint_is_reported_and_resumes", body: exceptions::breakpoint_is_reported_and_resumes },
    Test { name: "exceptions::symbols_name_kernel_functions", body: exceptions::symbols_name_kernel_functions },
    Test { name: "smp::every_cpu_runs_work", body: smp::every_cpu_runs_work },
    Test { name: "smp::apic_ids_are_distinct", body: smp::apic_ids_are_distinct },
    Test { name: "smp::timer_ticks_on_every_cpu", body: smp::timer_ticks_on_every_cpu },
    Test { name: "memory::every_cpu_allocates_and_frees_at_once", body: frames_every_cpu::every_cpu_allocates_and_frees_at_once },
    Test { name: "memory::all_cpus_together_get_every_frame", body: frames_every_cpu::all_cpus_together_get_every_frame },
    Test { name: "memory::requests_on_every_cpu_exhaust_the_budget_and_fail_cleanly", body: exhaustion::requests_on_every_cpu_exhaust_the_budget_and_fail_cleanly },
    Test { name: "containers::full_container_gets_enomem_while_another_keeps_running", body: containers::full_container_gets_enomem_while_another_keeps_running },
    Test { name: "containers::a_finished_tree_of_containers_and_threads_frees_every_frame", body: containers::a_finished_tree_of_containers_and_threads_frees_every_frame },
    Test { name: "memory::a_program_runs_in_ring_3_and_fork_copies_on_write", body: user_mode::a_program_runs_in_ring_3_and_fork_copies_on_write },
    Test { name: "caps::a_process_reaches_only_what_its_capabilities_allow", body: capabilities::a_process_reaches_only_what_its_capabilities_allow },
    Test { name: "caps::after_a_revoke_no_cpu_reaches_the_pages", body: capabilities::after_a_revoke_no_cpu_reaches_the_pages },
    Test { name: "caps::long_chains_and_wide_trees_revoke_in_linear_work", body: capabilities::long_chains_and_wide_trees_revoke_in_linear_work },
    Test { name: "caps::a_revoke_racing_delegations_on_other_cpus_leaves_no_survivor", body: capabilities::a_revoke_racing_delegations_on_other_cpus_leaves_no_survivor },
    Test { name: "locks::ticket_lock_excludes_on_every_cpu", body: locks::ticket_lock_excludes_on_every_cpu },
    Test { name: "locks::mcs_lock_excludes_on_every_cpu", body: locks::mcs_lock_excludes_on_every_cpu },
    Test { name: "threads::yield_alternates_threads_on_one_cpu", body: threads::yield_alternates_threads_on_one_cpu },
    Test { name: "threads::park_and_unpark_across_cpus", body: threads::park_and_unpark_across_cpus },
    Test { name: "threads::preemption_shares_a_cpu_between_spinners", body: threads::preemption_shares_a_cpu_between_spinners },
    Test { name: "threads::a_thread_migrates_to_every_cpu", body: threads::a_thread_migrates_to_every_cpu },
    Test { name: "threads::no_lost_wakeups_under_stress", body: threads::no_lost_wakeups_under_stress },
    Test { name: "sync::wait_queue_wakes_in_arrival_order", body: sync_objects::wait_queue_wakes_in_arrival_order },
    Test { name: "sync::condvar_signals_oldest_waiter_across_cpus", body: sync_objects::condvar_signals_oldest_waiter_across_cpus },
    Test { name: "sync::condvar_broadcast_loses_no_wakeup", body: sync_objects::condvar_broadcast_loses_no_wakeup },
    Test { name: "sync::bounded_queue_of_one_moves_every_item_once", body: sync_objects::bounded_queue_of_one_moves_every_item_once },
    Test { name: "sync::bounded_queue_of_four_moves_every_item_once", body: sync_objects::bounded_queue_of_four_moves_every_item_once },
    Test { name: "sync::channels_carry_every_size_across_cpus", body: sync_objects::channels_carry_every_size_across_cpus },
];

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
    let selected: Vec<&Test> = TESTS.iter().filter(|test| plan.selects(test.name)).collect();
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
