//! In-kernel benchmarks (a `kbench` build): run by `make bench`, each
//! printed as one `kbench: {json}` line that xtask turns into a record.
//! Linked only into the benchmark images. Never contains `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod cap_paths;
mod cost_paths;
mod frame_paths;
mod map_paths;
mod multikernel_paths;
mod ipc_round_trip;
mod lock_efficiency;
mod records;
mod runner;
mod sched_paths;
mod server_client;

pub use runner::run_all;
