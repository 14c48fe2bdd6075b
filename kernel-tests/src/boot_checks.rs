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

crate::kernel_tests! {
    "boot" => [
        memory_map_is_sane,
        cpu_count_matches_firmware,
        timer_is_calibrated,
    ],
}
