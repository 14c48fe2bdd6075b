//! Where a new program's regions go: the top of its stack, the top of the
//! area `mmap` hands out downwards (its interpreter loads there and its
//! vDSO is the area's first mapping), the base of a position-independent
//! executable and the start of `brk` — fixed, or randomised as Linux does
//! on x86-64 (`randomize_va_space = 2`):
//!
//! | region | Linux's randomisation | here |
//! |---|---|---|
//! | stack top | 22 bits of pages (`STACK_RND_MASK`), 16 GiB | same |
//! | first stack pointer | up to 8 KiB below the top, 16-aligned (`arch_align_stack`) | same |
//! | mmap area, interpreter, vDSO | 28 bits of pages (`mmap_rnd_bits`), 1 TiB | same |
//! | PIE base | 28 bits of pages above `ELF_ET_DYN_BASE` | same |
//! | `brk` start | up to 32 MiB above the program's end (`arch_randomize_brk`) | same |
//!
//! A process whose personality has [`ADDR_NO_RANDOMIZE`] (`setarch -R`)
//! gets [`AddressLayout::FIXED`], Linux's addresses with randomisation off.
//!
//! Pure arithmetic on the random words it is given; host-tested. Must keep
//! every region inside user space and the regions apart: the stack above
//! the mmap area, the mmap area above the PIE range.

/// `personality(2)` flag: no address-space randomisation (`setarch -R`).
pub const ADDR_NO_RANDOMIZE: u32 = 0x0004_0000;

const PAGE: u64 = 4096;
/// Where the main thread's stack ends without randomisation.
pub const STACK_TOP: u64 = 0x7FFF_FFFF_F000;
/// The top of the mmap area without randomisation: the interpreter loads
/// here, new mappings go below.
pub const MMAP_TOP: u64 = 0x7F00_0000_0000;
/// Where a position-independent executable loads without randomisation
/// (Linux's `ELF_ET_DYN_BASE`, 2/3 of the 47-bit space, page-aligned).
pub const PIE_BASE: u64 = 0x5555_5555_4000;

/// Pages of stack-top randomisation (Linux's `STACK_RND_MASK` + 1).
const STACK_RANDOM_PAGES: u64 = 1 << 22;
/// Bytes the first stack pointer may sit below the top.
const STACK_POINTER_RANDOM_BYTES: u64 = 8192;
/// Pages of mmap-area and PIE randomisation (`mmap_rnd_bits` = 28).
const MMAP_RANDOM_PAGES: u64 = 1 << 28;
/// Bytes of `brk` randomisation.
const BREAK_RANDOM_BYTES: u64 = 32 << 20;

/// One program's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressLayout {
    /// The stack's highest address (exclusive), page-aligned.
    pub stack_top: u64,
    /// Where the initial stack's bytes end: `stack_top` or up to 8 KiB
    /// below it, 16-byte aligned.
    pub stack_start: u64,
    /// The mmap area's top, page-aligned: the interpreter's base.
    pub mmap_top: u64,
    /// The load address of a position-independent executable.
    pub pie_base: u64,
    /// Added to the page-aligned end of the program to give `brk`'s start.
    pub break_offset: u64,
}

impl AddressLayout {
    /// The layout with randomisation off.
    pub const FIXED: Self = Self { stack_top: STACK_TOP, stack_start: STACK_TOP, mmap_top: MMAP_TOP, pie_base: PIE_BASE, break_offset: 0 };

    /// A randomised layout drawn from four random words.
    pub fn randomized(random: [u64; 4]) -> Self {
        let stack_top = STACK_TOP - (random[0] % STACK_RANDOM_PAGES) * PAGE;
        let stack_start = stack_top - ((random[0] >> 32) % STACK_POINTER_RANDOM_BYTES & !15);
        Self {
            stack_top,
            stack_start,
            mmap_top: MMAP_TOP - (random[1] % MMAP_RANDOM_PAGES) * PAGE,
            pie_base: PIE_BASE + (random[2] % MMAP_RANDOM_PAGES) * PAGE,
            break_offset: (random[3] % (BREAK_RANDOM_BYTES / PAGE)) * PAGE,
        }
    }

    /// The layout for a process with personality `personality`, drawing
    /// random words from `random` only when it randomises.
    pub fn for_personality(personality: u32, randomize: bool, random: impl FnOnce() -> [u64; 4]) -> Self {
        if personality & ADDR_NO_RANDOMIZE != 0 || !randomize {
            Self::FIXED
        } else {
            Self::randomized(random())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_layout_is_linuxs_without_randomisation() {
        assert_eq!(AddressLayout::FIXED.pie_base, 0x5555_5555_4000);
        assert_eq!(AddressLayout::FIXED.stack_top, 0x7FFF_FFFF_F000);
        assert_eq!(AddressLayout::for_personality(ADDR_NO_RANDOMIZE, true, || unreachable!()), AddressLayout::FIXED);
        assert_eq!(AddressLayout::for_personality(0, false, || unreachable!()), AddressLayout::FIXED);
    }

    #[test]
    fn randomised_regions_stay_aligned_in_range_and_apart() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state ^ (state >> 29)
        };
        for words in [[0; 4], [u64::MAX; 4]].into_iter().chain((0..10_000).map(|_| [next(), next(), next(), next()])) {
            let layout = AddressLayout::randomized(words);
            assert_eq!(layout.stack_top % PAGE, 0);
            assert_eq!(layout.mmap_top % PAGE, 0);
            assert_eq!(layout.pie_base % PAGE, 0);
            assert_eq!(layout.break_offset % PAGE, 0);
            assert_eq!(layout.stack_start % 16, 0);
            assert!(layout.stack_top <= STACK_TOP && layout.stack_top > STACK_TOP - (16 << 30));
            assert!(layout.stack_start <= layout.stack_top && layout.stack_start > layout.stack_top - 8192);
            assert!(layout.mmap_top <= MMAP_TOP && layout.mmap_top > MMAP_TOP - (1 << 40));
            assert!(layout.pie_base >= PIE_BASE && layout.pie_base < PIE_BASE + (1 << 40));
            assert!(layout.break_offset < 32 << 20);
            // A 1 GiB stack (the most a program gets) stays above the
            // interpreter's gigabyte at the mmap top.
            assert!(layout.stack_top - (1 << 30) > layout.mmap_top + (1 << 30));
            assert!(layout.pie_base + (1 << 40) < layout.mmap_top);
        }
    }

    #[test]
    fn different_words_give_different_layouts() {
        let first = AddressLayout::randomized([1, 2, 3, 4]);
        let second = AddressLayout::randomized([5, 6, 7, 8]);
        assert_ne!(first.stack_top, second.stack_top);
        assert_ne!(first.mmap_top, second.mmap_top);
        assert_ne!(first.pie_base, second.pie_base);
        assert_ne!(first.break_offset, second.break_offset);
    }
}
