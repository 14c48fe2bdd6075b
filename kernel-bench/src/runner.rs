//! Runs the benchmarks that fit the clock mode, then ends the run.

use machine::stop::{self, ExitCode};

use super::records::ClockMode;
use spinlock::kernel::BIG_KERNEL_LOCK_BUILD;

use super::{cap_paths, cost_paths, frame_paths, ipc_round_trip, map_paths, lock_efficiency, multikernel_paths, sched_paths, server_client};

/// Runs the benchmarks `kbench=` names (`icount`, the default; `wall`;
/// `serverclient`, `pairs`; `multikernel` and `costs`, under icount too) and powers
/// off.
pub fn run_all(command_line: &str) -> ! {
    let requested = command_line.split_whitespace().find_map(|word| word.strip_prefix("kbench="));
    let mode = match requested {
        Some("wall" | "serverclient" | "pairs") => ClockMode::Wall,
        _ => ClockMode::Instructions,
    };
    machine::println!("kbench: mode {:?} on {} CPUs", mode, machine::percpu::online_count());
    match requested {
        // mC2's comparison of fine-grained locks and a big kernel lock: the
        // one benchmark both builds run, in a boot of its own.
        Some("serverclient") => server_client::speedups(),
        // The big-kernel-lock build exists for that comparison only.
        _ if BIG_KERNEL_LOCK_BUILD => {}
        Some("multikernel") => multikernel_paths::protocol_paths(mode),
        Some("pairs") => server_client::pairs_by_group(),
        Some("costs") => cost_paths::cost_model(mode),
        Some("wall") => {
            sched_paths::cross_cpu_wakeup(mode);
            lock_efficiency::efficiency();
            frame_paths::alloc_free_parallel();
        }
        _ => {
            sched_paths::yield_switch(mode);
            ipc_round_trip::round_trips(mode);
            frame_paths::alloc_free(mode);
            map_paths::map_unmap(mode);
            cap_paths::capability_paths(mode);
        }
    }
    machine::println!("kbench: done");
    stop::halt_machine(ExitCode::Success)
}
