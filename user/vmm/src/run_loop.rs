//! The vCPU's run loop: `KVM_RUN` until the guest powers off or fails,
//! with the PC devices (`devices`) on their ports, the PIT's channel 0 on
//! the host timer, and their interrupts delivered through the 8259 pair
//! with `KVM_INTERRUPT` whenever the guest can take one (else the
//! interrupt window is asked for). Without an in-kernel irqchip this is
//! what a VMM does on Linux's KVM too.

use crate::devices::pic::Pics;
use crate::devices::pit::{Arm, Pit};
use crate::devices::uart::{self, Uart};
use crate::{host_timer, kvm};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// The guest's devices and the state of their interrupt lines.
struct Board {
    pics: Pics,
    pit: Pit,
    uart: Uart,
    uart_line: bool,
}

impl Board {
    fn port_in(&mut self, port: u16) -> u8 {
        if Pics::owns(port) {
            self.pics.read(port)
        } else if Pit::owns(port) {
            self.pit.read(port)
        } else if Uart::owns(port) {
            self.uart.read(port)
        } else {
            0xFF
        }
    }

    /// A port write; a byte the guest's serial port sent, if any.
    fn port_out(&mut self, port: u16, value: u8) -> Option<u8> {
        if Pics::owns(port) {
            self.pics.write(port, value);
        } else if Pit::owns(port) {
            match self.pit.write(port, value) {
                Arm::Unchanged => {}
                Arm::Periodic(period) => {
                    let period = period.max(Duration::from_millis(1));
                    host_timer::arm(period, period);
                }
                Arm::Once(delay) => host_timer::arm(delay, Duration::ZERO),
                Arm::Stop => host_timer::arm(Duration::ZERO, Duration::ZERO),
            }
        } else if Uart::owns(port) {
            return self.uart.write(port, value);
        }
        None
    }

    /// Turns device events into edges on the PIC's lines.
    fn update_lines(&mut self) {
        if host_timer::take_expiry() {
            self.pics.raise(0);
            // Typed input reaches the serial port at the timer's pace.
            let typed = standard_input_waiting();
            if !typed.is_empty() {
                self.uart.receive(&typed);
            }
        }
        let line = self.uart.interrupt_line();
        if line && !self.uart_line {
            self.pics.raise(uart::IRQ);
        }
        self.uart_line = line;
    }

    /// Hands the PIC's pending interrupt to the vCPU if it can take it
    /// now; asks for the interrupt window otherwise.
    fn deliver(&mut self, vcpu: &kvm::Vcpu) {
        self.update_lines();
        let pending = self.pics.pending_vector().is_some();
        if pending && vcpu.can_take_interrupt() {
            if let Some(vector) = self.pics.acknowledge() {
                let _ = vcpu.interrupt(vector);
            }
            vcpu.request_interrupt_window(self.pics.pending_vector().is_some());
        } else {
            vcpu.request_interrupt_window(pending);
        }
    }
}

/// Whatever standard input holds now, without waiting.
fn standard_input_waiting() -> Vec<u8> {
    let mut waiting = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, a zero timeout.
    if unsafe { libc::poll(&mut waiting, 1, 0) } != 1 || waiting.revents & libc::POLLIN == 0 {
        return Vec::new();
    }
    let mut bytes = [0u8; 256];
    // SAFETY: reading into a local buffer of its length; poll said a read
    // will not block.
    let count = unsafe { libc::read(0, bytes.as_mut_ptr().cast(), bytes.len()) };
    bytes[..count.max(0) as usize].to_vec()
}

pub fn run_guest(vcpu: &kvm::Vcpu, memory: &mut kvm::GuestMemory) -> ExitCode {
    host_timer::install();
    let mut board = Board { pics: Pics::default(), pit: Pit::default(), uart: Uart::default(), uart_line: false };
    let mut exits: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut output = std::io::stdout();
    let code = loop {
        board.deliver(vcpu);
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
                    for byte in 0..usize::from(size) {
                        let port = port.wrapping_add(byte as u16);
                        if input {
                            vcpu.set_byte(at + byte, board.port_in(port));
                        } else if let Some(sent) = board.port_out(port, vcpu.byte(at + byte)) {
                            let _ = output.write_all(&[sent]);
                            let _ = output.flush();
                        }
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
                // Idle until a device interrupts it (only the timer can, here).
                board.update_lines();
                if board.pics.pending_vector().is_none() {
                    host_timer::wait_for_expiry();
                }
            }
            kvm::exit::IRQ_WINDOW_OPEN => *exits.entry("irq window").or_default() += 1,
            kvm::exit::SHUTDOWN => {
                eprintln!("vmm: the guest shut down (triple fault)");
                if let (Ok(regs), Ok(sregs)) = (vcpu.regs(), vcpu.sregs()) {
                    eprintln!(
                        "vmm: at rip {:#x} rsp {:#x}, cr0 {:#x} cr2 {:#x} cr3 {:#x} cr4 {:#x} efer {:#x}, idt {:#x}+{:#x}",
                        regs.rip, regs.rsp, sregs.cr0, sregs.cr2, sregs.cr3, sregs.cr4, sregs.efer, sregs.idt.base, sregs.idt.limit
                    );
                    eprintln!("vmm: the guest's walk of cr2: {}", crate::describe_walk(memory, sregs.cr3, sregs.cr2));
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
    host_timer::arm(Duration::ZERO, Duration::ZERO);
    eprintln!("vmm: exits {exits:?}");
    code
}
