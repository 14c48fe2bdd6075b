//! Deliberate faults, asked for on the kernel command line, so that the
//! test suite can check how the kernel reports them:
//!
//! - `fault=stack-overflow`: recurse until the stack runs into its guard page;
//! - `fault=panic`: panic with a known message;
//! - `fault=invalid-opcode`: execute `ud2`.

use core::hint::black_box;

/// Runs the fault named by `fault=` on the command line, if any. Never
/// inlined: the boot tests look for this frame in the reported backtrace.
#[inline(never)]
pub fn inject_if_asked(command_line: &str) {
    let Some(fault) = command_line.split_whitespace().find_map(|word| word.strip_prefix("fault=")) else { return };
    machine::println!("lamina: injecting fault '{fault}' as asked on the command line");
    match fault {
        "stack-overflow" => {
            black_box(overflow_the_stack(black_box(0)));
        }
        "panic" => deliberate_panic(),
        "invalid-opcode" => machine::cpu::invalid_opcode(),
        other => machine::println!("lamina: unknown fault '{other}' ignored"),
    }
}

// Recursing without end is the point: the stack must hit its guard page.
#[allow(unconditional_recursion)]
#[inline(never)]
fn overflow_the_stack(depth: u64) -> u64 {
    let padding = black_box([depth; 64]);
    overflow_the_stack(depth + 1) + padding[0]
}

#[inline(never)]
fn deliberate_panic() -> ! {
    panic!("deliberate panic asked for on the command line")
}
