//! The boot sequence above the machine layer.

use alloc::boxed::Box;
use alloc::string::ToString;

use machine::{percpu, Handoff};

use crate::system::SystemFacts;

/// First code above the machine layer, on the bootstrap processor.
pub fn bootstrap_main(handoff: Handoff) -> ! {
    let free_bytes = crate::physical_memory::init(&handoff.free_memory) * frames::FRAME_SIZE;
    crate::kernel_memory::init();
    let facts: &'static SystemFacts = Box::leak(Box::new(SystemFacts {
        usable_bytes: handoff.usable_bytes,
        machine_bytes: handoff.machine_bytes,
        firmware_processors: handoff.acpi.processors.iter().filter(|processor| processor.usable).count(),
        command_line: handoff.boot.command_line().to_string(),
        free_bytes,
    }));
    sched::init_cpu(crate::physical_memory::kernel_stack);
    sched::enable_preemption();
    machine::println!("Lamina {} (x86-64, {:?} boot)", env!("CARGO_PKG_VERSION"), handoff.boot.protocol);
    machine::println!(
        "lamina: {} CPUs online, {} MiB memory",
        percpu::online_count(),
        (handoff.usable_bytes + (1 << 19)) >> 20
    );
    crate::faults::inject_if_asked(&facts.command_line);
    if let Err(error) = sched::spawn("main", move || run(facts)) {
        machine::println!("lamina: boot failed: cannot start the main thread: {error:?}");
        machine::stop::halt_machine(machine::stop::ExitCode::BootFailure);
    }
    sched::idle_loop()
}

#[cfg(feature = "ktest")]
fn run(facts: &'static SystemFacts) -> ! {
    crate::ktest::run_all(facts)
}

#[cfg(all(feature = "kbench", not(feature = "ktest")))]
fn run(facts: &'static SystemFacts) -> ! {
    crate::kbench::run_all(&facts.command_line)
}

#[cfg(not(any(feature = "ktest", feature = "kbench")))]
fn run(facts: &'static SystemFacts) -> ! {
    crate::monitor::run(facts)
}

/// First code above the machine layer on every other CPU: become this
/// CPU's idle thread and run whatever the scheduler gives it.
pub fn secondary_main(_cpu_index: usize) -> ! {
    sched::init_cpu(crate::physical_memory::kernel_stack);
    sched::idle_loop()
}
