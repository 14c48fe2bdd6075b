//! The boot sequence above the machine layer.

use alloc::boxed::Box;
use alloc::string::ToString;

use core::sync::atomic::{AtomicU64, Ordering};

use containers::ContainerId;
use machine::{percpu, Handoff};

use kernel_objects::SystemFacts;

/// The root container, published for the other CPUs once it exists.
static ROOT_CONTAINER: PublishedContainer = PublishedContainer(AtomicU64::new(0));

struct PublishedContainer(AtomicU64);

impl PublishedContainer {
    fn store(&self, id: ContainerId) {
        // Release: a CPU that sees the id sees the tree built before it.
        self.0.store((u64::from(id.index()) << 32 | u64::from(id.generation())) + 1, Ordering::Release);
    }

    fn load(&self) -> Option<ContainerId> {
        let word = self.0.load(Ordering::Acquire).checked_sub(1)?;
        Some(ContainerId::from_parts((word >> 32) as u32, word as u32))
    }
}

/// First code above the machine layer, on the bootstrap processor.
pub fn bootstrap_main(handoff: Handoff) -> ! {
    // The groups first: the frame allocator is built per group.
    let groups = kernel_objects::groups::init(handoff.boot.command_line());
    let free_frames = kernel_objects::physical_memory::init(&handoff.free_memory);
    let free_bytes = free_frames * frames::FRAME_SIZE;
    kernel_objects::kernel_memory::init();
    let root = match kernel_objects::kernel_containers::init(free_frames) {
        Ok(root) => root,
        Err(error) => {
            machine::println!("lamina: boot failed: no container tree: {error:?}");
            machine::stop::halt_machine(machine::stop::ExitCode::BootFailure);
        }
    };
    ROOT_CONTAINER.store(root);
    let memory_end = handoff.free_memory.iter().map(|range| range.end).max().unwrap_or(0);
    if !kernel_objects::address_spaces::init(memory_end) {
        machine::println!("lamina: boot failed: no owner table for {memory_end:#x} bytes");
        machine::stop::halt_machine(machine::stop::ExitCode::BootFailure);
    }
    let facts: &'static SystemFacts = Box::leak(Box::new(SystemFacts {
        usable_bytes: handoff.usable_bytes,
        machine_bytes: handoff.machine_bytes,
        firmware_processors: handoff.acpi.processors.iter().filter(|processor| processor.usable).count(),
        command_line: handoff.boot.command_line().to_string(),
        free_bytes,
    }));
    sched::init_cpu(&kernel_objects::physical_memory::STACK_SOURCE, root);
    sched::enable_preemption();
    machine::println!("Lamina {} (x86-64, {:?} boot)", env!("CARGO_PKG_VERSION"), handoff.boot.protocol);
    machine::println!(
        "lamina: {} CPUs online, {} MiB memory",
        percpu::online_count(),
        (handoff.usable_bytes + (1 << 19)) >> 20
    );
    report_groups(groups);
    crate::faults::inject_if_asked(&facts.command_line);
    let initramfs = handoff.modules.first().copied();
    // The main thread starts the drivers first: they need the scheduler
    // (a request parks its thread) and the frame allocator.
    if let Err(error) = sched::spawn("main", move || {
        drivers::probe();
        run(facts, initramfs)
    }) {
        machine::println!("lamina: boot failed: cannot start the main thread: {error:?}");
        machine::stop::halt_machine(machine::stop::ExitCode::BootFailure);
    }
    sched::idle_loop()
}

/// One line per group when there is more than one: its CPUs and memory.
fn report_groups(table: &kernel_objects::groups::GroupTable) {
    let layout = table.layout();
    if layout.groups() < 2 {
        return;
    }
    machine::println!("lamina: {} kernel groups, new processes placed {}", layout.groups(), kernel_objects::groups::policy_name());
    for group in 0..layout.groups() {
        let cpus = layout.cpus_of(group);
        let mebibytes = kernel_objects::physical_memory::free_frames_of(group) * frames::FRAME_SIZE >> 20;
        machine::println!("lamina: group {group}: CPUs {}-{}, {mebibytes} MiB", cpus.start, cpus.end - 1);
    }
}

#[cfg(feature = "ktest")]
fn run(facts: &'static SystemFacts, _initramfs: Option<&'static [u8]>) -> ! {
    kernel_tests::run_all(facts)
}

#[cfg(all(feature = "kbench", not(feature = "ktest")))]
fn run(facts: &'static SystemFacts, _initramfs: Option<&'static [u8]>) -> ! {
    kernel_bench::run_all(&facts.command_line)
}

/// With an initramfs, user space; without one (or with `monitor` on the
/// command line), the kernel monitor.
#[cfg(not(any(feature = "ktest", feature = "kbench")))]
fn run(facts: &'static SystemFacts, initramfs: Option<&'static [u8]>) -> ! {
    let wants_monitor = facts.command_line.split_whitespace().any(|word| word == "monitor");
    match initramfs {
        Some(archive) if !wants_monitor => linux_personality::start(facts, archive),
        _ => crate::monitor::run(facts),
    }
}

/// First code above the machine layer on every other CPU: become this
/// CPU's idle thread and run whatever the scheduler gives it.
pub fn secondary_main(_cpu_index: usize) -> ! {
    // The bootstrap processor builds the tree while the others start.
    let root = loop {
        if let Some(root) = ROOT_CONTAINER.load() {
            break root;
        }
        machine::cpu::relax();
    };
    sched::init_cpu(&kernel_objects::physical_memory::STACK_SOURCE, root);
    sched::idle_loop()
}
