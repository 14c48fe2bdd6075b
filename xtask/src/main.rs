//! `cargo xtask`: Lamina's host tool. It checks the host's packages, builds
//! the kernel images (writing their symbol tables), boots them in QEMU,
//! runs the test tiers, builds the GRUB CD and runs benchmarks. It never
//! touches the host beyond installing Debian packages when run as root.
#![forbid(unsafe_code)]

mod apps;
mod arguments;
mod bench;
mod bench_results;
mod boottime;
mod commands;
mod cost_model;
mod crate_graph;
mod dependencies;
mod disk_image;
mod exec;
mod exec_console;
mod failure;
mod fs_bench;
mod guest_files;
mod guest_programs;
mod host_lock_bench;
mod iso;
mod json;
mod json_parser;
mod kernel_bench;
mod kernel_build;
mod linux_bench;
mod linux_kernel;
mod linux_modules;
mod machine_options;
mod net_bench;
mod vm_bench;
mod network;
mod outside;
mod profile;
mod qemu_command;
mod qemu_session;
mod run;
mod serial_protocol;
mod shared_libraries;
mod simulate;
mod statistics;
mod symbol_table;
mod syscall_traces;
mod testing;
mod traces;
mod workspace;

fn main() {
    if let Err(failure) = commands::dispatch(std::env::args().skip(1)) {
        eprintln!("xtask: {failure}");
        std::process::exit(failure.exit_status());
    }
}
