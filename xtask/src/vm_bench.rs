//! The `vm` benchmark group (issue 24): what a guest's exits cost on
//! Lamina's hypervisor and on Linux's KVM (nested SVM under QEMU's TCG),
//! in the same QEMU configuration, in one run (instructions under icount
//! and wall time): `user/bench/vm.c` times a `cpuid` the hypervisor
//! answers itself, an `out` the VMM sees, and a guest's first touch of a
//! page. The Linux guests load `kvm_amd` and what it needs.

use crate::bench_results::BenchmarkRecord;
use crate::exec::{ExecRequest, FileCopy, GuestKernel};
use crate::failure::Outcome;
use crate::guest_programs::compile_c;
use crate::linux_bench::measure;
use crate::machine_options::MachineOptions;

/// The `vm` group.
pub fn run_vm_group() -> Outcome<Vec<BenchmarkRecord>> {
    let program = compile_c("user/bench/vm.c", "bench-vm")?;
    let mut modules = Vec::new();
    for file in crate::linux_modules::guest_files(&["kvm_amd"], &crate::workspace::root().join("target"))? {
        modules.push(FileCopy { host: file.host, guest: Some(file.guest) });
    }
    let request = |kernel: GuestKernel, machine: MachineOptions| -> ExecRequest {
        ExecRequest {
            machine,
            kernel,
            files: if kernel == GuestKernel::Lamina { Vec::new() } else { modules.clone() },
            program: program.clone(),
            program_arguments: Vec::new(),
            disk: None,
            mount_disk: false,
            disk_log: None,
            network: None,
        }
    };
    measure("vm", &request)
}
