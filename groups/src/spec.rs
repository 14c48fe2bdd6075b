//! Executable specification of the partition, stated as sets, not
//! arithmetic: the groups are disjoint, cover every CPU, are each a
//! non-empty contiguous run in CPU order, and differ in size by at most
//! one with the larger ones first; the memory parts are disjoint, cover
//! every free frame, follow address order, and differ in frame count by
//! at most one with the larger ones first. Refinement tests
//! (`tests` below) check [`GroupLayout`](crate::GroupLayout) and
//! [`partition_ranges`](crate::partition_ranges) against these on random
//! inputs.

use alloc::vec::Vec;

/// The groups as lists of CPUs: the specification's view of a layout.
pub type CpuSets = Vec<Vec<usize>>;

/// Whether `sets` is an allowed partition of CPUs `0..cpus`.
pub fn valid_cpu_partition(cpus: usize, sets: &CpuSets) -> bool {
    let flat: Vec<usize> = sets.iter().flatten().copied().collect();
    let covers_in_order = flat == (0..cpus).collect::<Vec<_>>();
    let nonempty = sets.iter().all(|set| !set.is_empty());
    let sizes: Vec<usize> = sets.iter().map(Vec::len).collect();
    let balanced = sizes.windows(2).all(|pair| pair[0] >= pair[1]) && sizes.first().zip(sizes.last()).is_none_or(|(most, least)| most - least <= 1);
    covers_in_order && nonempty && balanced
}

/// Whether `parts` (frame numbers per group) is an allowed partition of
/// the frames in `free` (a set of frame numbers in address order).
pub fn valid_memory_partition(free: &[u64], parts: &[Vec<u64>]) -> bool {
    let flat: Vec<u64> = parts.iter().flatten().copied().collect();
    let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
    let balanced = sizes.windows(2).all(|pair| pair[0] >= pair[1]) && sizes.first().zip(sizes.last()).is_none_or(|(most, least)| most - least <= 1);
    flat == free && balanced
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{partition_ranges, FrameSpan, GroupLayout};
    use alloc::collections::BTreeSet;

    #[test]
    fn layouts_refine_the_partition_spec() {
        for cpus in 1..=64 {
            for groups in 1..=cpus {
                let layout = GroupLayout::new(cpus, groups).unwrap();
                let sets: CpuSets = (0..groups).map(|group| layout.cpus_of(group).collect()).collect();
                assert!(valid_cpu_partition(cpus, &sets), "{cpus} CPUs in {groups} groups: {sets:?}");
                for (group, set) in sets.iter().enumerate() {
                    let mask: u64 = set.iter().map(|cpu| 1u64 << cpu).sum();
                    assert_eq!(layout.mask_of(group), mask);
                    assert_eq!(layout.confining_group(mask), Some(group));
                    for &cpu in set {
                        assert_eq!(layout.group_of(cpu), Some(group));
                    }
                }
            }
        }
    }

    #[test]
    fn a_mask_is_confined_exactly_when_one_groups_set_holds_it() {
        let mut rng = testkit::Rng::new(20);
        for _ in 0..2_000 {
            let cpus = 1 + rng.below(64);
            let layout = GroupLayout::new(cpus, 1 + rng.below(cpus)).unwrap();
            let mask = rng.next_u64() & rng.next_u64() & rng.next_u64();
            let named: BTreeSet<usize> = (0..cpus).filter(|cpu| mask >> cpu & 1 == 1).collect();
            let holding = (0..layout.groups()).find(|&group| !named.is_empty() && named.iter().all(|cpu| layout.cpus_of(group).contains(cpu)));
            assert_eq!(layout.confining_group(mask), holding, "mask {mask:#x} over {layout:?}");
        }
    }

    #[test]
    fn memory_parts_refine_the_partition_spec() {
        let mut rng = testkit::Rng::new(21);
        for _ in 0..500 {
            let spans: Vec<FrameSpan> = (0..rng.below(6))
                .map(|_| {
                    let start = rng.below(200) as u64;
                    FrameSpan { start, end: start + rng.below(40) as u64 }
                })
                .collect();
            let groups = 1 + rng.below(5);
            let free: Vec<u64> = spans.iter().flat_map(|span| span.start..span.end).collect::<BTreeSet<_>>().into_iter().collect();
            let parts: Vec<Vec<u64>> = partition_ranges(&spans, groups).iter().map(|part| part.iter().flat_map(|span| span.start..span.end).collect()).collect();
            assert_eq!(parts.len(), groups);
            assert!(valid_memory_partition(&free, &parts), "{spans:?} in {groups}: {parts:?}");
        }
    }

    #[test]
    fn the_spec_refuses_bad_partitions() {
        assert!(!valid_cpu_partition(4, &alloc::vec![alloc::vec![0, 2], alloc::vec![1, 3]]));
        assert!(!valid_cpu_partition(4, &alloc::vec![alloc::vec![0], alloc::vec![1, 2, 3]]));
        assert!(!valid_cpu_partition(2, &alloc::vec![alloc::vec![0, 1], alloc::vec![]]));
        assert!(!valid_memory_partition(&[1, 2, 3], &[alloc::vec![1], alloc::vec![2]]));
        assert!(!valid_memory_partition(&[1, 2, 3], &[alloc::vec![1], alloc::vec![2, 3]]));
    }
}
