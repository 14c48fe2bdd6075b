//! The `net` benchmark group: TCP and UDP over each kernel's loopback
//! interface, in the same QEMU configuration, in one run (instructions
//! under icount and wall time): `user/bench/net.c` measures a 1-byte TCP
//! and UDP round trip between two processes, connect+accept+close, 64 MiB
//! through one connection, and redis-benchmark's 50 clients against
//! redis-server (GET and SET, pipelining 1 and 16), both built from
//! Debian's sources by the programs recipe.
//!
//! Inside the guest on purpose: QEMU's user network accepts forwarded
//! connections through a listen backlog of 1, so 50 clients connecting at
//! once from the host stall on either kernel (docs/benchmarks.md).

use crate::bench_results::BenchmarkRecord;
use crate::exec::{ExecRequest, FileCopy, GuestKernel};
use crate::failure::Outcome;
use crate::guest_programs::compile_c;
use crate::linux_bench::measure;
use crate::machine_options::MachineOptions;
use crate::outside::programs::{built, companions, PROGRAMS};

/// The `net` group.
pub fn run_net_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/net.c", "bench-net")?;
    let mut files = vec![FileCopy { host: program.clone(), guest: Some("/bench/net".to_string()) }];
    if let Some(nginx) = PROGRAMS.iter().find(|program| program.name == "nginx") {
        files.push(FileCopy { host: built(nginx)?, guest: Some("/bench/nginx".to_string()) });
        // Debian's own wrk, dynamic: its libraries follow it into the guest.
        files.push(FileCopy { host: "/usr/bin/wrk".into(), guest: Some("/bench/wrk".to_string()) });
    }
    if let Some(redis) = PROGRAMS.iter().find(|program| program.name == "redis-server") {
        files.push(FileCopy { host: built(redis)?, guest: Some("/bench/redis-server".to_string()) });
        for (name, path) in companions(redis)? {
            files.push(FileCopy { host: path, guest: Some(format!("/bench/{name}")) });
        }
    }
    let request = |kernel: GuestKernel, machine: MachineOptions| -> ExecRequest {
        ExecRequest {
            machine,
            kernel,
            files: files.clone(),
            program: program.clone(),
            program_arguments: vec!["/bench".to_string()],
            disk: None,
            mount_disk: false,
            disk_log: None,
            network: None,
        }
    };
    measure("net", &request)
}
