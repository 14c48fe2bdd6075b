//! Runs the benchmarks that fit the clock mode, then ends the run.

use machine::stop::{self, ExitCode};

use super::records::ClockMode;
use spinlock::kernel::BIG_KERNEL_LOCK_BUILD;

use super::{ipc_round_trip, lock_efficiency, sched_paths, server_client};

/// Runs every benchmark for the mode named by `kbench=` and powers off.
pub fn run_all(command_line: &str) -> ! {
    let mode = match command_line.split_whitespace().find_map(|word| word.strip_prefix("kbench=")) {
        Some("wall") => ClockMode::Wall,
        _ => ClockMode::Instructions,
    };
    machine::println!("kbench: mode {:?} on {} CPUs", mode, machine::percpu::online_count());
    match mode {
        // The big-kernel-lock build exists for one comparison.
        ClockMode::Wall if BIG_KERNEL_LOCK_BUILD => server_client::speedups(),
        ClockMode::Instructions if BIG_KERNEL_LOCK_BUILD => {}
        ClockMode::Instructions => {
            sched_paths::yield_switch(mode);
            ipc_round_trip::round_trips(mode);
        }
        ClockMode::Wall => {
            sched_paths::cross_cpu_wakeup(mode);
            lock_efficiency::efficiency();
            server_client::speedups();
        }
    }
    machine::println!("kbench: done");
    stop::halt_machine(ExitCode::Success)
}
