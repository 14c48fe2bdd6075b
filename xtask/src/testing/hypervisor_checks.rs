//! Part of tier 4: the hypervisor (issue 24) through Linux's KVM interface.
//! `user/tests/kvm/kvm_basic.c` (system, VM and vCPU ioctls and their
//! errnos, memory slots, a real-mode and a long-mode guest's port I/O,
//! `hlt` and MMIO exits) runs on Lamina's `/dev/kvm` and on Debian's Linux
//! with its KVM modules loaded (`-cpu max` gives the Linux guest nested
//! SVM under TCG); the outputs must be equal line for line, and the
//! program's own checks must pass.

use super::tally::Tally;
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::Outcome;
use crate::machine_options::MachineOptions;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(300);
/// What Linux must load for `/dev/kvm` (its dependencies come along).
const KVM_MODULES: [&str; 1] = ["kvm_amd"];

pub fn run_hypervisor_checks(tally: &mut Tally) {
    let runs = [GuestKernel::Lamina, GuestKernel::Linux].map(|kernel| (kernel, run(kernel)));
    for (kernel, run) in &runs {
        tally.record(&format!("hypervisor: kvm_basic's checks pass ({kernel:?})"), match run {
            Ok(run) if run.exit_code == 0 && String::from_utf8_lossy(&run.output).ends_with("PASS: 0 failures\n") => Ok(()),
            Ok(run) => Err(format!("exit {}\n{}{}", run.exit_code, String::from_utf8_lossy(&run.output), String::from_utf8_lossy(&run.errors))),
            Err(failure) => Err(failure.to_string()),
        });
    }
    if let [(_, Ok(lamina)), (_, Ok(linux))] = &runs {
        let (ours, theirs) = (String::from_utf8_lossy(&lamina.output), String::from_utf8_lossy(&linux.output));
        tally.record("hypervisor: kvm_basic (Lamina = Linux)", super::user_space::compare("kvm_basic", Some(&format!("{ours}--- exit {}\n", lamina.exit_code)), &format!("{theirs}--- exit {}\n", linux.exit_code)));
    }
}

fn run(kernel: GuestKernel) -> Outcome<ProgramRun> {
    let program = crate::guest_programs::compile_c("user/tests/kvm/kvm_basic.c", "kvm_basic")?;
    let mut files = Vec::new();
    if kernel == GuestKernel::Linux {
        let scratch = crate::workspace::root().join("target");
        for file in crate::linux_modules::guest_files(&KVM_MODULES, &scratch)? {
            files.push(FileCopy { host: file.host, guest: Some(file.guest) });
        }
    }
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files,
        program,
        program_arguments: Vec::new(),
        disk: None,
        mount_disk: false,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}
