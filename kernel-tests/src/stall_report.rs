//! The stall report: what every CPU was doing when a test failed or hung.
//!
//! Two views of each CPU: the threads layer's (running thread, ReadyQ,
//! PendQ, idle flag, timer ticks, wake IPIs) and the machine's (where an
//! NMI found the CPU: instruction, interrupt flag, halted or not, and its
//! call chain, symbolized). Printed on the console; changes nothing.

use machine::cpu_snapshot::{self, CpuSnapshot, CpuState};
use machine::layout;
use machine::symbols::SymbolTable;

/// Prints the report, headed by `why`.
pub fn print(why: &str) {
    machine::println!("ktest: stall report ({why}) at {} ms", machine::timer::uptime_nanoseconds() / 1_000_000);
    for cpu in sched::report() {
        machine::println!("ktest:   {cpu}");
    }
    let symbols = SymbolTable::parse(layout::kernel_symbols());
    match cpu_snapshot::take() {
        None => machine::println!("ktest:   (another CPU is taking a snapshot)"),
        Some(states) => states.iter().for_each(|state| print_state(state, symbols.as_ref())),
    }
}

fn print_state(state: &CpuState, symbols: Option<&SymbolTable<'_>>) {
    let snapshot = match state {
        CpuState::Silent { cpu } => return machine::println!("ktest:   CPU {cpu}: did not answer the NMI"),
        CpuState::Answered(snapshot) => snapshot,
    };
    machine::println!("ktest:   CPU {}: {}", snapshot.cpu, describe(snapshot, symbols));
    for (depth, caller) in snapshot.callers.iter().take_while(|address| **address != 0).enumerate() {
        // The call instruction is just before the return address.
        machine::println!("ktest:       #{:<2} {}", depth + 1, name(caller - 1, symbols));
    }
}

fn describe(snapshot: &CpuSnapshot, symbols: Option<&SymbolTable<'_>>) -> alloc::string::String {
    if snapshot.user_mode {
        return "in user mode".into();
    }
    let halted = if snapshot.halted { "halted" } else { "running" };
    let interrupts = if snapshot.interrupts_enabled { "on" } else { "off" };
    alloc::format!("{halted}, interrupts {interrupts}, at {}", name(snapshot.instruction, symbols))
}

fn name(address: u64, symbols: Option<&SymbolTable<'_>>) -> alloc::string::String {
    match symbols.and_then(|table| table.lookup(address)) {
        Some((symbol, offset)) => alloc::format!("{address:#x} {}+{offset:#x}", symbol.name),
        None => alloc::format!("{address:#x}"),
    }
}
