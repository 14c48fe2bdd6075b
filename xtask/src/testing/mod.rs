//! `cargo xtask test`: every test tier that exists so far.

mod bad_packet_checks;
pub mod boot;
pub mod command;
pub mod crash_tier;
mod disk_checks;
mod ext4_mount_checks;
mod ext4_write_checks;
mod exec_pipes;
mod group_checks;
mod network_checks;
mod packet_frames;
mod page_cache_checks;
mod guest_runs;
mod faults;
pub mod fuzz_checks;
pub mod allocation_failure_checks;
pub mod parser_fuzz_checks;
pub mod host;
pub mod iso_boot;
pub mod kernel_tests;
pub mod outside_python;
pub mod outside_programs;
pub mod outside_suites;
mod root_disk_checks;
pub mod stress;
pub mod tally;
mod user_space;
