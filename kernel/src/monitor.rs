//! The kernel monitor: a small command line on the serial console, until
//! user space exists.

use alloc::string::String;

use machine::{cpu, heap, percpu, serial, stop, timer};

use kernel_objects::SystemFacts;

const PROMPT: &str = "lamina> ";

/// Reads commands forever.
pub fn run(facts: &'static SystemFacts) -> ! {
    machine::println!("Kernel monitor. Type 'help' for commands.");
    loop {
        machine::print!("{PROMPT}");
        let line = read_line();
        execute(line.trim(), facts);
    }
}

fn execute(command: &str, facts: &SystemFacts) {
    match command {
        "" => {}
        "help" => {
            machine::println!("  help      this list");
            machine::println!("  cpus      the CPUs online, each answering from itself");
            machine::println!("  mem       memory: usable, used by the kernel, free, heap");
            machine::println!("  uptime    time since boot and timer ticks per CPU");
            machine::println!("  pci       the PCI functions found at boot, with their windows and interrupt");
            machine::println!("  poweroff  power the machine off");
        }
        "cpus" => {
            machine::println!("{} CPUs online ({} listed by the firmware):", percpu::online_count(), facts.firmware_processors);
            sched::run_everywhere(report_cpu);
        }
        "mem" => report_memory(facts),
        "uptime" => report_uptime(),
        "pci" => report_pci(),
        "poweroff" => {
            machine::println!("lamina: powering off");
            stop::power_off()
        }
        other => machine::println!("unknown command '{other}'; type 'help'"),
    }
}

/// Run on each CPU by `cpus`: the CPU prints its own line.
pub fn report_cpu(index: usize) {
    if let Some(this) = percpu::cpu(index) {
        machine::println!("  cpu {:>3}  apic id {:>3}  timer ticks {}", this.index, this.apic_id, this.ticks.load(core::sync::atomic::Ordering::Relaxed));
    }
}

fn mebibytes(bytes: u64) -> u64 {
    (bytes + (1 << 19)) >> 20
}

fn report_memory(facts: &SystemFacts) {
    let (heap_free, heap_total) = heap::usage();
    machine::println!("  usable memory    {:>6} MiB", mebibytes(facts.usable_bytes));
    machine::println!("  kernel image + machine layer (page tables, heap, stacks) {:>6} KiB", facts.machine_bytes >> 10);
    machine::println!("  free frames      {:>6} MiB", mebibytes(facts.free_bytes));
    machine::println!("  heap             {:>6} KiB used of {} KiB", (heap_total - heap_free) >> 10, heap_total >> 10);
}

fn report_pci() {
    use machine::pci::Bar;
    for function in machine::pci::functions() {
        let at = function.address;
        machine::println!(
            "  {:02x}:{:02x}.{} {:04x}:{:04x} class {:06x} subsystem {:04x} pin {} line {}",
            at.bus, at.device, at.function, function.vendor, function.device, function.class, function.subsystem, function.interrupt_pin, function.interrupt_line
        );
        for index in 0..6 {
            match function.bar(index) {
                Bar::Unused => {}
                Bar::Io { port, size } => machine::println!("      bar {index}: io {port:#x} +{size:#x}"),
                Bar::Memory { physical, size, mapped } => {
                    machine::println!("      bar {index}: memory {physical:#x} +{size:#x}{}", if mapped.is_some() { " (mapped)" } else { "" })
                }
            }
        }
    }
}

fn report_uptime() {
    let nanoseconds = timer::uptime_nanoseconds();
    machine::println!("  up {}.{:03} s; TSC {} kHz", nanoseconds / 1_000_000_000, nanoseconds / 1_000_000 % 1000, timer::tsc_per_millisecond());
}

/// Reads one line with echo and backspace, halting while no input waits.
fn read_line() -> String {
    let mut line = String::new();
    loop {
        let Some(byte) = next_byte() else { continue };
        match byte {
            b'\r' | b'\n' => {
                machine::println!();
                return line;
            }
            0x08 | 0x7F => {
                if line.pop().is_some() {
                    serial::write_bytes(b"\x08 \x08");
                }
            }
            0x15 => {
                // ^U: kill the line.
                for _ in 0..line.len() {
                    serial::write_bytes(b"\x08 \x08");
                }
                line.clear();
            }
            byte if byte.is_ascii_graphic() || byte == b' ' => {
                line.push(char::from(byte));
                serial::write_bytes(&[byte]);
            }
            _ => {}
        }
    }
}

/// One input byte, sleeping until an interrupt when none is waiting.
fn next_byte() -> Option<u8> {
    cpu::disable_interrupts();
    match serial::read_byte() {
        Some(byte) => {
            cpu::enable_interrupts();
            Some(byte)
        }
        None => {
            cpu::enable_interrupts_and_halt();
            None
        }
    }
}
