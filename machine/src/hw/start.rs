//! The machine layer's start-up sequence and the hand-off to the kernel.
//!
//! Bootstrap processor: console, boot information, memory check, the
//! kernel's final page tables, a guarded stack, descriptor tables, heap,
//! ACPI, APICs, timer calibration, application processors; then
//! `lamina_bootstrap_main(Handoff)`. Each application processor: final
//! tables, descriptor tables, APIC, timer; then `lamina_secondary_main`.
//! Both functions are defined by the kernel image (the `kernel` crate).

extern crate alloc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::boot_frames::{align_up, BootFrames};
use super::irq_lock::IrqLock;
use super::layout::{self, physical_to_virtual, DirectMapReader, Range, BOOT_DIRECT_MAP_LIMIT, DEVICE_MEMORY_BASE, HEAP_BASE, PAGE_SIZE};
use super::stacks::{self, KernelStack};
use super::stop::{self, ExitCode};
use super::{apic, cpu, entry, heap, ioapic, paging, pci, percpu, serial, smp, timer, tlb, trap, user};
use crate::acpi::{self, AcpiInformation};
use crate::bootinfo::{self, BootInformation, MemoryKind};

/// Less usable memory than this and Lamina refuses to boot.
pub const MINIMUM_MEMORY_MIB: u64 = 16;
const SERIAL_ISA_IRQ: u8 = 4;

/// What the machine layer hands to the kernel after start-up.
pub struct Handoff {
    pub boot: BootInformation,
    pub acpi: AcpiInformation,
    /// Physical memory not used by the machine layer, sorted by address.
    pub free_memory: Vec<Range>,
    /// Usable memory in the memory map, in bytes.
    pub usable_bytes: u64,
    /// Bytes the machine layer used (page tables, heap, stacks).
    pub machine_bytes: u64,
    pub heap_bytes: u64,
    /// The boot modules (the initramfs), in the loader's order: memory the
    /// frame allocator never hands out and nothing writes.
    pub modules: Vec<&'static [u8]>,
}

extern "Rust" {
    fn lamina_bootstrap_main(handoff: Handoff) -> !;
    fn lamina_secondary_main(cpu_index: usize) -> !;
}

/// Boot-time state shared between the steps of start-up.
struct Boot {
    information: BootInformation,
    frames: BootFrames,
    kernel_root: u64,
}

static BOOT: IrqLock<Option<Boot>> = IrqLock::new(None);
static KERNEL_ROOT: AtomicU64 = AtomicU64::new(0);
/// End of the physical memory the final direct map covers.
static DIRECT_MAP_END: AtomicU64 = AtomicU64::new(0);

/// End of the physical memory the direct map covers (0 before the final
/// tables are active).
pub fn direct_map_end() -> u64 {
    DIRECT_MAP_END.load(Ordering::Relaxed)
}

/// Physical address of the kernel's page tables.
pub(crate) fn kernel_root() -> u64 {
    KERNEL_ROOT.load(Ordering::Relaxed)
}

/// Prints a boot failure and ends the run.
fn boot_failed(reason: core::fmt::Arguments<'_>) -> ! {
    crate::println!("\nlamina: boot failed: {reason}");
    stop::halt_machine(ExitCode::BootFailure)
}

/// Called by the entry code on the boot stack, boot page tables active.
pub(crate) extern "C" fn bootstrap_processor_entry(protocol: u32, information_address: u32) -> ! {
    percpu::use_placeholder();
    serial::init();
    let reader = DirectMapReader { limit: BOOT_DIRECT_MAP_LIMIT };
    let parsed = match protocol {
        entry::PROTOCOL_PVH => bootinfo::parse_pvh(&reader, u64::from(information_address)),
        entry::PROTOCOL_MULTIBOOT2 => bootinfo::parse_multiboot2(&reader, u64::from(information_address)),
        other => boot_failed(format_args!("unknown boot protocol {other}")),
    };
    let information = parsed.unwrap_or_else(|error| boot_failed(format_args!("{error}")));
    let usable_mib = information.usable_bytes() >> 20;
    if usable_mib < MINIMUM_MEMORY_MIB {
        boot_failed(format_args!(
            "only {usable_mib} MiB of usable memory; Lamina needs at least {MINIMUM_MEMORY_MIB} MiB (try MEM=256)"
        ));
    }
    if cpu::read_msr(cpu::MSR_EFER) & cpu::EFER_NO_EXECUTE_ENABLE == 0 {
        boot_failed(format_args!("this CPU has no no-execute (NX) page protection"));
    }
    let mut frames = BootFrames::new(&information, layout::kernel_physical());
    let memory_end = memory_end(&information);
    let kernel_root = paging::build_kernel_tables(memory_end, &mut frames)
        .unwrap_or_else(|error| boot_failed(format_args!("building page tables: {error:?}")));
    let stack = stacks::allocate(kernel_root, &mut frames)
        .unwrap_or_else(|error| boot_failed(format_args!("allocating the boot stack: {error:?}")));
    // SAFETY: the new tables map the kernel image at the same addresses and
    // all memory in the direct map; the boot stack (in .bss) stays mapped
    // until `switch_to` leaves it.
    unsafe { paging::activate(kernel_root) };
    KERNEL_ROOT.store(kernel_root, Ordering::Relaxed);
    DIRECT_MAP_END.store(memory_end, Ordering::Relaxed);
    *BOOT.lock() = Some(Boot { information, frames, kernel_root });
    let top = stack.top();
    stacks::switch_to(stack, bootstrap_processor_continue, top)
}

/// Highest physical address the direct map must cover.
fn memory_end(information: &BootInformation) -> u64 {
    let ram_end = information
        .memory_regions()
        .iter()
        .filter(|region| region.kind != MemoryKind::Reserved)
        .map(|region| region.end)
        .max()
        .unwrap_or(0);
    ram_end.max(BOOT_DIRECT_MAP_LIMIT)
}

/// Runs `step` with the boot state; boot fails if it reports an error.
fn with_boot<R>(what: &str, step: impl FnOnce(&mut Boot) -> Result<R, paging::MapError>) -> R {
    let mut guard = BOOT.lock();
    let boot = guard.as_mut().unwrap_or_else(|| boot_failed(format_args!("boot state missing")));
    step(boot).unwrap_or_else(|error| boot_failed(format_args!("{what}: {error:?}")))
}

fn interrupt_stacks() -> percpu::InterruptStacks {
    with_boot("allocating interrupt stacks", |boot| {
        Ok(percpu::InterruptStacks {
            double_fault: stacks::allocate(boot.kernel_root, &mut boot.frames)?,
            nmi: stacks::allocate(boot.kernel_root, &mut boot.frames)?,
            machine_check: stacks::allocate(boot.kernel_root, &mut boot.frames)?,
        })
    })
}

extern "C" fn bootstrap_processor_continue(stack_top: u64) -> ! {
    let heap_bytes = set_up_heap();
    trap::build();
    trap::load();
    tlb::init();
    cpu::enable_supervisor_protections();
    user::init_cpu();
    let boot_stack = KernelStack::new(stack_top - stacks::STACK_SIZE, stack_top);
    let stacks = interrupt_stacks();
    percpu::install(0, 0, boot_stack, stacks);
    with_boot("enabling SVM", |boot| {
        super::svm::init_cpu(0, &mut boot.frames);
        Ok(())
    });
    let information = with_boot("boot information", |boot| Ok(boot.information.clone()));
    let reader = DirectMapReader { limit: memory_end(&information) };
    let acpi = acpi::parse(&reader, information.rsdp)
        .unwrap_or_else(|error| boot_failed(format_args!("reading ACPI tables: {error}")));
    set_up_interrupt_controllers(&acpi);
    discover_pci(&acpi);
    timer::calibrate();
    trap::set_handler(trap::VECTOR_TIMER, count_tick);
    trap::set_handler(trap::IRQ_BASE + SERIAL_ISA_IRQ, |_| serial::handle_interrupt());
    start_application_processors(&acpi);
    timer::start_periodic(trap::VECTOR_TIMER, timer::TICK_HERTZ);
    let handoff = with_boot("hand-off", |boot| {
        let free_memory: Vec<Range> = boot.frames.free_ranges().collect();
        if !super::frame_access::init(memory_end(&information), &free_memory) {
            boot_failed(format_args!("no heap for the record of {} frames", memory_end(&information) / PAGE_SIZE));
        }
        Ok(Handoff {
            boot: information.clone(),
            acpi,
            free_memory,
            usable_bytes: information.usable_bytes(),
            machine_bytes: boot.frames.allocated * PAGE_SIZE,
            heap_bytes,
            modules: information.modules().iter().filter_map(|module| module_bytes(module.start, module.end)).collect(),
        })
    });
    *BOOT.lock() = None;
    // SAFETY: `lamina_bootstrap_main` is defined once, by the kernel image,
    // with exactly this signature.
    unsafe { lamina_bootstrap_main(handoff) }
}

/// The bytes of the boot module at `[start, end)`, through the direct map.
fn module_bytes(start: u64, end: u64) -> Option<&'static [u8]> {
    if end <= start || end > direct_map_end() {
        return None;
    }
    // SAFETY: the range lies inside the direct map (checked above), which
    // stays mapped for the kernel's lifetime; boot modules are removed from
    // the free memory the frame allocator receives (`BootFrames::new`) and
    // nothing in the kernel writes them, so the bytes never change while
    // the shared slice lives.
    Some(unsafe { core::slice::from_raw_parts(physical_to_virtual(start) as *const u8, (end - start) as usize) })
}

/// Maps the heap (1/16 of usable memory, 2..64 MiB) and gives it to the allocator.
fn set_up_heap() -> u64 {
    let bytes = with_boot("mapping the heap", |boot| {
        let bytes = align_up((boot.information.usable_bytes() / 16).clamp(2 << 20, 64 << 20), PAGE_SIZE);
        paging::map_fresh(boot.kernel_root, Range { start: HEAP_BASE, end: HEAP_BASE + bytes }, &mut boot.frames)?;
        Ok(bytes)
    });
    // SAFETY: the range was just mapped read-write and nothing else uses it.
    unsafe { heap::add_region(HEAP_BASE as usize, bytes as usize) };
    bytes
}

fn map_device_page(physical: u64, slot: u64) -> u64 {
    let virtual_address = DEVICE_MEMORY_BASE + slot * PAGE_SIZE;
    with_boot("mapping device memory", |boot| {
        paging::map_device(boot.kernel_root, virtual_address, physical & !(PAGE_SIZE - 1), PAGE_SIZE, &mut boot.frames)
    });
    virtual_address + (physical & (PAGE_SIZE - 1))
}

/// Device-memory slots (pages) before this one hold the APIC and I/O APIC.
const FIRST_PCI_SLOT: u64 = 16;
/// Pages of the device-memory region PCI windows may use.
const PCI_SLOTS: u64 = 4096;

/// Finds the PCI functions, mapping virtio devices' memory BARs into the
/// device-memory region; a PCI line's mode comes from the MADT's override
/// of that ISA number, else PCI's own (level, active low).
fn discover_pci(acpi: &AcpiInformation) {
    let mut next_slot = FIRST_PCI_SLOT;
    let mut map = |physical: u64, length: u64| {
        let pages = length.div_ceil(PAGE_SIZE);
        if next_slot + pages > FIRST_PCI_SLOT + PCI_SLOTS {
            return None;
        }
        let virtual_address = DEVICE_MEMORY_BASE + next_slot * PAGE_SIZE;
        with_boot("mapping PCI memory", |boot| paging::map_device(boot.kernel_root, virtual_address, physical, pages * PAGE_SIZE, &mut boot.frames));
        next_slot += pages;
        Some(virtual_address)
    };
    let interrupt_of = |line: u8| {
        let mode = acpi
            .overrides
            .iter()
            .find(|entry| entry.isa_irq == line)
            .map_or(ioapic::LineMode { active_low: true, level_triggered: true }, |entry| ioapic::LineMode::from_madt_flags(entry.flags));
        (acpi.global_interrupt_for_isa(line), mode)
    };
    pci::discover(&mut map, &interrupt_of);
}

fn disable_legacy_pic() {
    // Remap the 8259 PICs away from the exception vectors, then mask them.
    for (port, value) in [(0x20, 0x11), (0xA0, 0x11), (0x21, 0x20), (0xA1, 0x28), (0x21, 4), (0xA1, 2), (0x21, 1), (0xA1, 1)] {
        cpu::outb(port, value);
    }
    cpu::outb(0x21, 0xFF);
    cpu::outb(0xA1, 0xFF);
}

fn set_up_interrupt_controllers(acpi: &AcpiInformation) {
    disable_legacy_pic();
    apic::set_base(map_device_page(acpi.local_apic_address, 0));
    apic::enable_local();
    stop::set_acpi_power_off(acpi.pm1a_control_port, acpi.s5_sleep_type);
    if let Some(io_apic) = acpi.io_apics.first() {
        ioapic::init(map_device_page(io_apic.address, 1), io_apic.first_interrupt);
        let serial_interrupt = acpi.global_interrupt_for_isa(SERIAL_ISA_IRQ);
        let mode = acpi
            .overrides
            .iter()
            .find(|entry| entry.isa_irq == SERIAL_ISA_IRQ)
            .map_or(ioapic::LineMode { active_low: false, level_triggered: false }, |entry| {
                ioapic::LineMode::from_madt_flags(entry.flags)
            });
        ioapic::route(serial_interrupt, trap::IRQ_BASE + SERIAL_ISA_IRQ, apic::id(), mode);
    }
}

fn count_tick(_frame: &mut super::trap_entry::TrapFrame) {
    if let Some(per_cpu) = percpu::current() {
        per_cpu.ticks.fetch_add(1, Ordering::Relaxed);
    }
}

fn start_application_processors(acpi: &AcpiInformation) {
    let own_id = apic::id();
    let others: Vec<u32> = acpi
        .processors
        .iter()
        .filter(|processor| processor.usable && processor.apic_id != own_id && processor.apic_id < 255)
        .map(|processor| processor.apic_id)
        .take(percpu::MAX_CPUS - 1)
        .collect();
    for slot in 0..others.len() {
        let stack = with_boot("allocating AP stacks", |boot| stacks::allocate(boot.kernel_root, &mut boot.frames));
        smp::set_start_stack(slot, stack.top());
    }
    let online = smp::start_processors(KERNEL_ROOT.load(Ordering::Relaxed), &others, percpu::online_count);
    if online < others.len() + 1 {
        crate::println!("lamina: warning: {} of {} processors started", online, others.len() + 1);
    }
}

/// Called by `ap_entry64` on the AP's own stack, final tables active.
pub(crate) extern "C" fn application_processor_entry(slot: u32) -> ! {
    percpu::use_placeholder();
    trap::load();
    cpu::enable_supervisor_protections();
    user::init_cpu();
    let stacks = interrupt_stacks();
    // Before `percpu::install`, which counts this CPU online: the boot
    // CPU hands the remaining boot memory to the frame allocator once every
    // CPU is online, so a frame taken after that would be handed out twice
    // (it was: CPU 1's host save areas, overwritten by every VMRUN there,
    // were someone else's memory; two guests on two CPUs then crashed).
    with_boot("enabling SVM", |boot| {
        super::svm::init_cpu(slot as usize + 1, &mut boot.frames);
        Ok(())
    });
    let top = smp::start_stack(slot as usize);
    let boot_stack = KernelStack::new(top - stacks::STACK_SIZE, top);
    apic::enable_local();
    let per_cpu = percpu::install(slot as usize + 1, apic::id(), boot_stack, stacks);
    timer::start_periodic(trap::VECTOR_TIMER, timer::TICK_HERTZ);
    // SAFETY: `lamina_secondary_main` is defined once, by the kernel image,
    // with exactly this signature.
    unsafe { lamina_secondary_main(per_cpu.index) }
}
