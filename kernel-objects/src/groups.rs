//! The running kernel's CPU groups (issue 20, docs/multikernel.md
//! "Groups"): the layout the boot chose from `groups=N`, the placement
//! policy, and how many processes each group runs.
//!
//! Set once on the bootstrap CPU before any other CPU schedules; read
//! everywhere after. Until then (and with `groups=1`) there is one group
//! over every CPU, which is the kernel without groups. What a group owns
//! is kept by the layer that owns it: its CPUs' scheduling domain by
//! `sched` (set here at boot), its frames by [`crate::physical_memory`],
//! its processes' group by the Linux process table. This file may not
//! hold any of those.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use groups::{choose_group, GroupLayout, GroupOptions, Policy, MAX_CPUS};
use machine::percpu;
use machine::set_once::SetOnce;
use sched::placement::CpuMask;

/// The layout, the policy and the per-group counts.
pub struct GroupTable {
    layout: GroupLayout,
    policy: Policy,
    /// Processes placed so far (round-robin's turn).
    placed: AtomicU64,
    /// Processes living in each group.
    processes: [AtomicUsize; MAX_CPUS],
}

static TABLE: SetOnce<GroupTable> = SetOnce::new();

/// Chooses the groups from the command line's options for the CPUs
/// online and gives each CPU its group's scheduling domain. A bad option
/// or a layout that cannot be made (more groups than CPUs) is reported
/// and the kernel runs as one group. Called once, on the bootstrap CPU,
/// before the frame allocator is built (it partitions by the layout).
pub fn init(command_line: &str) -> &'static GroupTable {
    let online = percpu::online_count();
    let options = groups::parse_options(command_line).unwrap_or_else(|error| {
        machine::println!("lamina: {error}; running as one group");
        GroupOptions::default()
    });
    let layout = GroupLayout::new(online, options.groups).unwrap_or_else(|error| {
        machine::println!("lamina: groups={}: {error}; running as one group", options.groups);
        GroupLayout::single(online)
    });
    let table: &'static GroupTable = alloc::boxed::Box::leak(alloc::boxed::Box::new(GroupTable {
        layout,
        policy: options.policy,
        placed: AtomicU64::new(0),
        processes: [const { AtomicUsize::new(0) }; MAX_CPUS],
    }));
    if TABLE.set(table).is_err() {
        machine::println!("lamina: warning: the groups were chosen twice; keeping the first");
    }
    let table = TABLE.get().unwrap_or(table);
    if table.layout.groups() > 1 {
        for cpu in 0..online {
            let group = table.layout.group_of(cpu).unwrap_or(0);
            sched::set_domain(cpu, CpuMask::from_bits(table.layout.mask_of(group)));
        }
    }
    table
}

impl GroupTable {
    /// The layout chosen.
    pub fn layout(&self) -> GroupLayout {
        self.layout
    }
}

/// The layout (one group over every online CPU before [`init`]).
pub fn layout() -> GroupLayout {
    TABLE.get().map_or_else(|| GroupLayout::single(percpu::online_count()), |table| table.layout)
}

/// How many groups.
pub fn count() -> usize {
    TABLE.get().map_or(1, |table| table.layout.groups())
}

/// The group of CPU `cpu` (0 past the last CPU).
pub fn group_of_cpu(cpu: usize) -> usize {
    TABLE.get().and_then(|table| table.layout.group_of(cpu)).unwrap_or(0)
}

/// The group of the CPU this code runs on.
pub fn current_group() -> usize {
    group_of_cpu(percpu::current_index())
}

/// Group `group`'s CPUs for the scheduler; every CPU with one group (so
/// a kernel without groups places threads exactly as before).
pub fn cpus_of(group: usize) -> CpuMask {
    match TABLE.get() {
        Some(table) if table.layout.groups() > 1 => CpuMask::from_bits(table.layout.mask_of(group)),
        _ => CpuMask::ALL,
    }
}

/// The group an affinity mask confines a thread to, if one.
pub fn confining_group(mask: u64) -> Option<usize> {
    layout().confining_group(mask)
}

/// The group for a new process whose parent lives in `parent`, by the
/// boot's policy; counted as placed (round-robin's turn).
pub fn place_new_process(parent: usize) -> usize {
    let Some(table) = TABLE.get() else { return 0 };
    // Relaxed: a turn counter and load snapshots; a stale one costs balance only.
    let turn = table.placed.fetch_add(1, Ordering::Relaxed);
    choose_group(table.policy, table.layout.groups(), parent, turn, |group| table.processes[group].load(Ordering::Relaxed))
}

/// A process began to live in `group`.
pub fn process_joined(group: usize) {
    if let Some(count) = TABLE.get().and_then(|table| table.processes.get(group)) {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// A process stopped living in `group` (it ended or moved).
pub fn process_left(group: usize) {
    if let Some(count) = TABLE.get().and_then(|table| table.processes.get(group)) {
        // Never below zero, even if a caller pairs these wrongly.
        let _ = count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| value.checked_sub(1));
    }
}

/// The processes living in `group` now.
pub fn processes_in(group: usize) -> usize {
    TABLE.get().and_then(|table| table.processes.get(group)).map_or(0, |count| count.load(Ordering::Relaxed))
}

/// The policy's name, for reports.
pub fn policy_name() -> &'static str {
    match TABLE.get().map_or(Policy::RoundRobin, |table| table.policy) {
        Policy::RoundRobin => "round-robin",
        Policy::LeastLoaded => "least-loaded",
    }
}
