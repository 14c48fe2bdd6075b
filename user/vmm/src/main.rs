//! `vmm`: boots a Linux `vmlinux` in a virtual machine through the KVM
//! interface only, so it runs on Lamina's `/dev/kvm` and on Linux's alike:
//!
//!   vmm --kernel VMLINUX [--initrd FILE] [--cmdline TEXT] [--mem MIB]
//!
//! The kernel starts at its PVH entry (the Xen ELF note
//! `XEN_ELFNOTE_PHYS32_ENTRY`): 32-bit protected mode, paging off, EBX
//! the address of an `hvm_start_info` that names the command line, the
//! memory map and the initrd. The guest's serial port (COM1) is this
//! program's standard output; other ports read as all ones and writes to
//! them vanish, as do MMIO accesses. The run ends when the guest halts
//! with interrupts off, shuts down (a triple fault: the guest's registers
//! and its page walk of CR2 are reported), or the hypervisor
//! reports an error; a summary of the exits goes to standard error.
//!
//! Not yet: interrupt controllers and timers (a guest that waits for a
//! timer halts here), several vCPUs, disks.

mod devices;
mod host_timer;
mod kvm;
mod linux_boot;
mod run_loop;

use std::process::ExitCode;

struct Options {
    kernel: String,
    initrd: Option<String>,
    cmdline: String,
    memory_mib: usize,
}

fn options() -> Result<Options, String> {
    let mut arguments = std::env::args().skip(1);
    let mut options = Options { kernel: String::new(), initrd: None, cmdline: "console=ttyS0 earlyprintk=serial,ttyS0 noapic nolapic nosmp acpi=off pci=off tsc=reliable lpj=1000000 panic=-1".into(), memory_mib: 256 };
    while let Some(argument) = arguments.next() {
        let mut value = || arguments.next().ok_or_else(|| format!("{argument} needs a value"));
        match argument.as_str() {
            "--kernel" => options.kernel = value()?,
            "--initrd" => options.initrd = Some(value()?),
            "--cmdline" => options.cmdline = value()?,
            "--mem" => options.memory_mib = value()?.parse().map_err(|_| "--mem takes MiB".to_string())?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.kernel.is_empty() {
        return Err("usage: vmm --kernel VMLINUX [--initrd FILE] [--cmdline TEXT] [--mem MIB]".into());
    }
    Ok(options)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("vmm: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let options = options()?;
    let kvm = kvm::Kvm::open().map_err(|error| format!("/dev/kvm: {error}"))?;
    let version = kvm.api_version().map_err(|error| format!("KVM_GET_API_VERSION: {error}"))?;
    if version != 12 {
        return Err(format!("KVM API version {version}, not 12"));
    }
    let vm = kvm.create_vm().map_err(|error| format!("KVM_CREATE_VM: {error}"))?;
    let mut memory = kvm::GuestMemory::new(options.memory_mib << 20).map_err(|error| format!("guest memory: {error}"))?;
    vm.set_memory(0, 0, &memory).map_err(|error| format!("KVM_SET_USER_MEMORY_REGION: {error}"))?;
    let kernel = std::fs::read(&options.kernel).map_err(|error| format!("{}: {error}", options.kernel))?;
    let initrd = options.initrd.as_ref().map(|path| std::fs::read(path).map_err(|error| format!("{path}: {error}"))).transpose()?;
    let start = linux_boot::load(&mut memory, &kernel, initrd.as_deref(), &options.cmdline)?;
    let mmap_size = kvm.vcpu_mmap_size().map_err(|error| format!("KVM_GET_VCPU_MMAP_SIZE: {error}"))?;
    let vcpu = vm.create_vcpu(0, mmap_size).map_err(|error| format!("KVM_CREATE_VCPU: {error}"))?;
    // The guest sees what the hypervisor offers (Linux's KVM shows a guest
    // no CPUID at all until the VMM sets it: no long mode, no PAE).
    let cpuid = kvm.supported_cpuid().map_err(|error| format!("KVM_GET_SUPPORTED_CPUID: {error}"))?;
    vcpu.set_cpuid(&cpuid).map_err(|error| format!("KVM_SET_CPUID2: {error}"))?;
    linux_boot::enter_protected_mode(&vcpu, &start).map_err(|error| format!("setting up the vCPU: {error}"))?;
    Ok(run_loop::run_guest(&vcpu, &mut memory))
}

/// The entries a 4-level walk of `address` from `cr3` meets in guest
/// memory, as the VMM sees it: for a triple fault's report.
pub(crate) fn describe_walk(memory: &mut kvm::GuestMemory, cr3: u64, address: u64) -> String {
    let mut table = cr3 & 0x000F_FFFF_FFFF_F000;
    let mut text = String::new();
    for level in (0..4).rev() {
        let index = (address >> (12 + 9 * level)) & 511;
        let Some(bytes) = memory.slice_mut(table + index * 8, 8) else {
            text.push_str(&format!(" table {table:#x} outside memory"));
            break;
        };
        let entry = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
        text.push_str(&format!(" L{}[{index}]@{table:#x}={entry:#x}", level + 1));
        if entry & 1 == 0 || (level > 0 && level < 3 && entry & 0x80 != 0) {
            break;
        }
        table = entry & 0x000F_FFFF_FFFF_F000;
    }
    text
}
