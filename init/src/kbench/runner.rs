//! Runs the benchmarks that fit the clock mode, then ends the run.

use machine::stop::{self, ExitCode};

use super::records::ClockMode;
use super::{lock_efficiency, sched_paths};

/// Runs every benchmark for the mode named by `kbench=` and powers off.
pub fn run_all(command_line: &str) -> ! {
    let mode = match command_line.split_whitespace().find_map(|word| word.strip_prefix("kbench=")) {
        Some("wall") => ClockMode::Wall,
        _ => ClockMode::Instructions,
    };
    machine::println!("kbench: mode {:?} on {} CPUs", mode, machine::percpu::online_count());
    match mode {
        ClockMode::Instructions => {
            sched_paths::yield_switch(mode);
        }
        ClockMode::Wall => {
            sched_paths::cross_cpu_wakeup(mode);
            lock_efficiency::efficiency();
        }
    }
    machine::println!("kbench: done");
    stop::halt_machine(ExitCode::Success)
}
