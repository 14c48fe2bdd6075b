//! Tests of the heap and the kernel's page tables.

use alloc::format;
use alloc::vec::Vec;

use machine::{heap, layout, paging, stacks};

use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

/// Other CPUs may allocate while this runs (their first ticks set up
/// per-CPU state), so the balance is checked over up to three rounds: a
/// leak shows in every round, a neighbour's allocation in one.
pub fn heap_allocations_are_disjoint_and_returned(_facts: &SystemFacts) -> Outcome {
    let mut balances = Vec::new();
    for _ in 0..3 {
        let (free_before, _) = heap::usage();
        exercise_heap()?;
        let (free_after, _) = heap::usage();
        if free_after == free_before {
            return Ok(());
        }
        balances.push((free_before, free_after));
    }
    Err(format!("heap free bytes (before, after) in three rounds: {balances:?}"))
}

fn exercise_heap() -> Outcome {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for index in 0..2000usize {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let size = 1 + (seed % 3000) as usize;
        blocks.push(alloc::vec![(index % 251) as u8; size]);
        if seed % 3 == 0 {
            let victim = (seed as usize / 3) % blocks.len();
            blocks.swap_remove(victim);
        }
    }
    for block in &blocks {
        let first = block[0];
        check(block.iter().all(|byte| *byte == first), || "a heap block was overwritten by another".into())?;
    }
    Ok(())
}

fn leaf_flags(address: u64) -> Result<u64, alloc::string::String> {
    paging::translate(address).ok_or_else(|| format!("{address:#x} is not mapped"))
}

pub fn kernel_sections_have_their_rights(_facts: &SystemFacts) -> Outcome {
    let text = leaf_flags(layout::kernel_text().start)?;
    check(text & paging::WRITABLE == 0 && text & paging::NO_EXECUTE == 0, || format!("text entry {text:#x}: want read-only, executable"))?;
    let rodata = leaf_flags(layout::kernel_rodata().start)?;
    check(rodata & paging::WRITABLE == 0 && rodata & paging::NO_EXECUTE != 0, || format!("rodata entry {rodata:#x}: want read-only, no-execute"))?;
    let data = leaf_flags(layout::kernel_data().start)?;
    check(data & paging::WRITABLE != 0 && data & paging::NO_EXECUTE != 0, || format!("data entry {data:#x}: want writable, no-execute"))?;
    let direct = leaf_flags(layout::physical_to_virtual(0x100000))?;
    check(direct & paging::NO_EXECUTE != 0, || format!("direct map entry {direct:#x}: want no-execute"))
}

pub fn stack_has_guard_page(_facts: &SystemFacts) -> Outcome {
    let this = machine::percpu::current().ok_or("no per-CPU data")?;
    let stack = &this.boot_stack;
    check(paging::translate(stack.top() - 8).is_some(), || "top of the stack is not mapped".into())?;
    let guard = stack.bottom() - layout::PAGE_SIZE;
    check(paging::translate(guard).is_none(), || format!("guard page {guard:#x} is mapped"))?;
    check(stacks::is_guard(guard), || format!("{guard:#x} is not recognised as a guard page"))
}

crate::kernel_tests! {
    "memory" => [
        heap_allocations_are_disjoint_and_returned,
        kernel_sections_have_their_rights,
        stack_has_guard_page,
    ],
}
