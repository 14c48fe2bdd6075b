//! The Linux personality's objects: what Linux system calls act on, kept
//! apart from the calls themselves (the table and its decoding are the
//! `linux-personality` crate above this one). Where things are:
//! `process.rs` and `exec.rs` processes and program images; `fs.rs`,
//! `open_files.rs`, `flocks.rs` and `file_mappings.rs` files; `pipes.rs`,
//! `fifos.rs`, `unix_sockets.rs`, `inet_sockets.rs`, `event_counters.rs`, `epoll.rs`,
//! `poll_wakeups.rs`, `mqueues.rs`, `sysv_ipc.rs` and `futexes.rs` the
//! ways processes talk and wait; `signals.rs` and `signal_sending.rs`
//! signal state and delivery; `itimers.rs`, `cpu_itimers.rs`,
//! `posix_timers.rs`, `timer_fds.rs`, `signal_fds.rs` and `clock.rs`
//! clocks and timers; `tty.rs` the console's line discipline; `procfs.rs`
//! `/proc`; `sysfs.rs` `/sys`; `syscall_trace.rs` the system-call tracer's log.
//!
//! Pure rules (errno values, structure layouts, queue arithmetic) live in
//! the host-tested `linux-abi`; this crate holds the running kernel's
//! tables of them. Must not decode system-call arguments or touch user
//! registers (that is the personality's job), and must never contain
//! `unsafe` code.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod address_randomization;
pub mod block_files;
pub mod clock;
pub mod cpu_itimers;
pub mod descriptor_cache;
pub mod descriptor_passing;
pub mod epoll;
pub mod event_counters;
pub mod exec;
pub mod exec_cache;
pub mod ext4_mount_changes;
pub mod ext4_mounts;
pub mod fifos;
pub mod file_mappings;
pub mod flocks;
pub mod fs;
pub mod group_descriptors;
pub mod futexes;
pub mod inet_sockets;
pub mod itimers;
pub mod kernel_log;
pub mod mqueues;
pub mod named_sockets;
pub mod netlink_sockets;
pub mod open_files;
pub mod page_cache;
pub mod pipes;
pub mod poll_wakeups;
pub mod posix_timers;
pub mod process;
pub mod procfs;
pub mod random;
pub mod record_locks;
pub mod signal_fds;
pub mod signal_sending;
pub mod signals;
pub mod socket_waits;
pub mod sleep_lock;
pub mod syscall_trace;
pub mod sysfs;
pub mod sysv_ipc;
pub mod timer_fds;
pub mod tmpfs_pages;
pub mod tty;
pub mod unix_sockets;
pub mod uts_names;
pub mod vdso;
