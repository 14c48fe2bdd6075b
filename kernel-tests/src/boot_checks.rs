//! Tests of what boot established: memory, CPUs, time.

use alloc::format;

use machine::{percpu, timer};

use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

pub fn memory_map_is_sane(facts: &SystemFacts) -> Outcome {
    check(facts.usable_bytes >= 16 << 20, || format!("expected >= 16 MiB usable, saw {} bytes", facts.usable_bytes))?;
    check(facts.free_bytes < facts.usable_bytes, || {
        format!("free {} must be below usable {}", facts.free_bytes, facts.usable_bytes)
    })?;
    check(facts.free_bytes + facts.machine_bytes <= facts.usable_bytes, || {
        format!("free {} + machine {} exceed usable {}", facts.free_bytes, facts.machine_bytes, facts.usable_bytes)
    })
}

pub fn cpu_count_matches_firmware(facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count();
    check(online == facts.firmware_processors, || {
        format!("expected all {} firmware CPUs online, saw {}", facts.firmware_processors, online)
    })?;
    for index in 0..online {
        let cpu = percpu::cpu(index).ok_or_else(|| format!("CPU {index} missing from the registry"))?;
        check(cpu.index == index, || format!("registry slot {index} holds CPU {}", cpu.index))?;
    }
    Ok(())
}

pub fn timer_is_calibrated(_facts: &SystemFacts) -> Outcome {
    let tsc_khz = timer::tsc_per_millisecond();
    check((1_000..100_000_000).contains(&tsc_khz), || format!("implausible TSC rate {tsc_khz} kHz"))?;
    let apic_per_ms = timer::apic_ticks_per_millisecond();
    check(apic_per_ms > 1, || format!("implausible APIC timer rate {apic_per_ms} per ms"))?;
    let before = timer::uptime_nanoseconds();
    timer::busy_wait_microseconds(2_000);
    let elapsed = timer::uptime_nanoseconds() - before;
    check((2_000_000..50_000_000).contains(&elapsed), || format!("a 2 ms wait measured {elapsed} ns"))
}

/// What each CPU found when it looked at its protections: bit 0 it looked,
/// bit 1 SMEP on where offered, bit 2 SMAP on where offered, bit 3 NX on,
/// bit 4 CR0.WP on, bit 5 SMEP and SMAP both offered.
static PROTECTIONS_SEEN: [core::sync::atomic::AtomicU8; 64] = [const { core::sync::atomic::AtomicU8::new(0) }; 64];

fn look_at_protections(cpu: usize) {
    let found = machine::cpu::protections();
    let bits = 1
        | u8::from(!found.smep_offered || found.smep_on) << 1
        | u8::from(!found.smap_offered || found.smap_on) << 2
        | u8::from(found.no_execute_on) << 3
        | u8::from(found.write_protect_on) << 4
        | u8::from(found.smep_offered && found.smap_offered) << 5;
    if let Some(slot) = PROTECTIONS_SEEN.get(cpu) {
        slot.store(bits, core::sync::atomic::Ordering::SeqCst);
    }
}

/// Issue 23: SMEP and SMAP are on wherever the CPU offers them (QEMU's
/// `-cpu max` does), and NX and CR0.WP on every CPU.
pub fn protections_are_on_on_every_cpu(_facts: &SystemFacts) -> Outcome {
    for slot in &PROTECTIONS_SEEN {
        slot.store(0, core::sync::atomic::Ordering::SeqCst);
    }
    let online = percpu::online_count().min(PROTECTIONS_SEEN.len());
    sched::run_everywhere(look_at_protections);
    for (cpu, slot) in PROTECTIONS_SEEN.iter().enumerate().take(online) {
        let bits = slot.load(core::sync::atomic::Ordering::SeqCst);
        check(bits & 1 != 0, || format!("CPU {cpu} never looked"))?;
        check(bits & 0b1_1110 == 0b1_1110, || format!("CPU {cpu}: SMEP ok {}, SMAP ok {}, NX {}, WP {}", bits >> 1 & 1, bits >> 2 & 1, bits >> 3 & 1, bits >> 4 & 1))?;
    }
    Ok(())
}

crate::kernel_tests! {
    "boot" => [
        memory_map_is_sane,
        cpu_count_matches_firmware,
        timer_is_calibrated,
        protections_are_on_on_every_cpu,
    ],
}
