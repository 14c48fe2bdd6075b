//! Tests of trap handling and of symbolization.

use alloc::format;

use machine::{layout, trap};

use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

pub fn breakpoint_is_reported_and_resumes(_facts: &SystemFacts) -> Outcome {
    let before = trap::breakpoint_count();
    trap::breakpoint();
    trap::breakpoint();
    let after = trap::breakpoint_count();
    check(after == before + 2, || format!("expected 2 breakpoints handled, saw {}", after - before))
}

pub fn symbols_name_kernel_functions(_facts: &SystemFacts) -> Outcome {
    let table = machine::symbols::SymbolTable::parse(layout::kernel_symbols())
        .ok_or("the .ksyms section holds no symbol table (was the image built by xtask?)")?;
    let here = symbols_name_kernel_functions as *const () as u64;
    let (symbol, offset) = table.lookup(here + 4).ok_or_else(|| format!("no symbol covers {here:#x}"))?;
    check(symbol.name.ends_with("symbols_name_kernel_functions") && offset == 4, || {
        format!("expected symbols_name_kernel_functions+0x4, saw {}+{offset:#x}", symbol.name)
    })
}

crate::kernel_tests! {
    "exceptions" => [
        breakpoint_is_reported_and_resumes,
        symbols_name_kernel_functions,
    ],
}
