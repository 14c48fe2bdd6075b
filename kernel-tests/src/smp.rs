//! Tests that every CPU is really running.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use machine::{apic, percpu};

use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

static ARRIVALS: AtomicU64 = AtomicU64::new(0);
static APIC_IDS: [AtomicU32; percpu::MAX_CPUS] = [const { AtomicU32::new(u32::MAX) }; percpu::MAX_CPUS];

/// Work item: each CPU sets its bit.
pub fn count_arrival(index: usize) {
    ARRIVALS.fetch_or(1 << (index % 64), Ordering::SeqCst);
}

/// Work item: each CPU records the APIC id its own APIC reports.
pub fn record_apic_id(index: usize) {
    APIC_IDS[index].store(apic::id(), Ordering::SeqCst);
}

pub fn every_cpu_runs_work(_facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count().min(64);
    ARRIVALS.store(0, Ordering::SeqCst);
    let started = sched::run_everywhere(count_arrival);
    check(started == percpu::online_count(), || format!("work started on {started} CPUs of {}", percpu::online_count()))?;
    let expected = if online == 64 { u64::MAX } else { (1u64 << online) - 1 };
    let seen = ARRIVALS.load(Ordering::SeqCst);
    check(seen == expected, || format!("expected CPUs {expected:#b} to run the work, saw {seen:#b}"))
}

pub fn apic_ids_are_distinct(_facts: &SystemFacts) -> Outcome {
    sched::run_everywhere(record_apic_id);
    let mut ids: Vec<u32> = (0..percpu::online_count()).map(|index| APIC_IDS[index].load(Ordering::SeqCst)).collect();
    for (index, id) in ids.iter().enumerate() {
        let registered = percpu::cpu(index).map(|cpu| cpu.apic_id);
        check(registered == Some(*id), || format!("CPU {index} reports APIC id {id}, registered {registered:?}"))?;
    }
    ids.sort_unstable();
    ids.dedup();
    check(ids.len() == percpu::online_count(), || format!("APIC ids not distinct: {ids:?}"))
}

pub fn timer_ticks_on_every_cpu(_facts: &SystemFacts) -> Outcome {
    let online = percpu::online_count();
    let before: Vec<u64> = (0..online).map(|index| ticks(index)).collect();
    machine::cpu::enable_interrupts();
    // Every CPU ticks again: within 200 ms once each has had its host
    // time, at most 2 s (a vCPU the host does not run for 50 ms, as with 8
    // vCPUs on 2 busy cores, once failed a fixed 50 ms window). A CPU whose
    // timer stopped still fails.
    let all_ticked = || before.iter().enumerate().all(|(index, old)| ticks(index) > *old);
    crate::waiting::wait_until(200, all_ticked);
    for (index, old) in before.iter().enumerate() {
        let now = ticks(index);
        check(now > *old, || format!("CPU {index}: timer ticks stayed at {old} while every other CPU had its time"))?;
    }
    Ok(())
}

fn ticks(index: usize) -> u64 {
    percpu::cpu(index).map_or(0, |cpu| cpu.ticks.load(Ordering::Relaxed))
}

crate::kernel_tests! {
    "smp" => [
        every_cpu_runs_work,
        apic_ids_are_distinct,
        timer_ticks_on_every_cpu,
    ],
}
