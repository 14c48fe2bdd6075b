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

mod kvm;
mod linux_boot;

use std::collections::BTreeMap;
use std::io::Write;
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
    Ok(run_guest(&vcpu, &mut memory))
}

/// The serial port's registers at COM1: a transmitter always empty, no
/// input, no interrupts.
fn serial_in(offset: u16) -> u8 {
    match offset {
        5 => 0x60, // line status: transmitter holding register and shifter empty
        6 => 0xB0, // modem status: DCD, DSR, CTS
        _ => 0,
    }
}

fn run_guest(vcpu: &kvm::Vcpu, memory: &mut kvm::GuestMemory) -> ExitCode {
    let mut exits: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut output = std::io::stdout();
    let code = loop {
        let reason = match vcpu.run() {
            Ok(reason) => reason,
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => continue,
            Err(error) => {
                eprintln!("vmm: KVM_RUN: {error}");
                break ExitCode::from(3);
            }
        };
        match reason {
            kvm::exit::IO => {
                *exits.entry("io").or_default() += 1;
                let (input, size, port, count, data) = vcpu.io();
                for index in 0..count as usize {
                    let at = data + index * usize::from(size);
                    if input {
                        let value = if (0x3F8..0x400).contains(&port) { serial_in(port - 0x3F8) } else { 0xFF };
                        for byte in 0..usize::from(size) {
                            vcpu.set_byte(at + byte, if byte == 0 { value } else { 0xFF });
                        }
                    } else if port == 0x3F8 {
                        let _ = output.write_all(&[vcpu.byte(at)]);
                        let _ = output.flush();
                    }
                }
            }
            kvm::exit::MMIO => {
                *exits.entry("mmio").or_default() += 1;
                let (_, length, write) = vcpu.mmio();
                if !write {
                    for byte in 0..length.min(8) as usize {
                        vcpu.set_byte(40 + byte, 0xFF);
                    }
                }
            }
            kvm::exit::HLT => {
                *exits.entry("hlt").or_default() += 1;
                let interrupts_on = vcpu.regs().map(|regs| regs.rflags & (1 << 9) != 0).unwrap_or(false);
                if !interrupts_on {
                    eprintln!("vmm: the guest halted with interrupts off");
                    break ExitCode::SUCCESS;
                }
                // Nothing will ever interrupt it (no timers yet).
                eprintln!("vmm: the guest waits for an interrupt; no timer is emulated yet");
                break ExitCode::from(4);
            }
            kvm::exit::SHUTDOWN => {
                eprintln!("vmm: the guest shut down (triple fault)");
                if let (Ok(regs), Ok(sregs)) = (vcpu.regs(), vcpu.sregs()) {
                    eprintln!(
                        "vmm: at rip {:#x} rsp {:#x}, cr0 {:#x} cr2 {:#x} cr3 {:#x} cr4 {:#x} efer {:#x}, idt {:#x}+{:#x}",
                        regs.rip, regs.rsp, sregs.cr0, sregs.cr2, sregs.cr3, sregs.cr4, sregs.efer, sregs.idt.base, sregs.idt.limit
                    );
                    eprintln!("vmm: the guest's walk of cr2: {}", describe_walk(memory, sregs.cr3, sregs.cr2));
                }
                break ExitCode::from(5);
            }
            kvm::exit::INTR => continue,
            kvm::exit::FAIL_ENTRY => {
                eprintln!("vmm: the CPU refused the guest's state (reason {:#x})", vcpu.read_u64(32));
                break ExitCode::from(6);
            }
            kvm::exit::INTERNAL_ERROR => {
                let rip = vcpu.regs().map(|regs| regs.rip).unwrap_or(0);
                eprintln!("vmm: the hypervisor could not go on (suberror {}) at rip {rip:#x}", vcpu.read_u32(32));
                break ExitCode::from(6);
            }
            other => {
                let rip = vcpu.regs().map(|regs| regs.rip).unwrap_or(0);
                eprintln!("vmm: exit {other} at rip {rip:#x} (suberror or reason {:#x})", vcpu.read_u64(32));
                break ExitCode::from(6);
            }
        }
    };
    eprintln!("vmm: exits {exits:?}");
    code
}

/// The entries a 4-level walk of `address` from `cr3` meets in guest
/// memory, as the VMM sees it: for a triple fault's report.
fn describe_walk(memory: &mut kvm::GuestMemory, cr3: u64, address: u64) -> String {
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
