//! `mem/map_unmap_4k`: map one 4 KiB page into a user address space and
//! unmap it again, in guest instructions: the charged frame allocation,
//! the owner-table join, the page-table walk (tables already present, as
//! for any page after the first of a region), the unmap's leave, free and
//! release, and carrying out the flush (empty here: the space never ran).

use alloc::vec::Vec;

use vmem::Rights;

use super::records::{now, report, ClockMode};
use kernel_objects::address_spaces::{carry_out, new_space};

const PAIRS_PER_SAMPLE: u64 = 2_000;
const SAMPLES: usize = 5;
const PAGE: u64 = 0x40_0000;

pub fn map_unmap(mode: ClockMode) {
    let container = sched::current().container();
    let Ok(mut space) = new_space(container) else { return };
    let one_pair = |space: &mut kernel_objects::address_spaces::KernelSpace| -> bool {
        let Ok(frame) = kernel_objects::OwnedFrame::allocate(container) else { return false };
        // On an error `map` drops the frame, which frees it.
        if space.map(PAGE, frame, Rights::READ_WRITE).is_err() {
            return false;
        }
        match space.unmap(PAGE, vmem::PAGE_SIZE) {
            Ok(flush) => {
                carry_out(flush);
                true
            }
            Err(_) => false,
        }
    };
    // Warm-up: builds the page tables once.
    let warm = (0..100).all(|_| one_pair(&mut space));
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let start = now();
        let ok = (0..PAIRS_PER_SAMPLE).all(|_| one_pair(&mut space));
        if !ok || !warm {
            break;
        }
        samples.push((now() - start) as f64 / PAIRS_PER_SAMPLE as f64);
    }
    carry_out(space.destroy());
    report("mem", "map_unmap_4k", mode.unit(), &mut samples);
}
