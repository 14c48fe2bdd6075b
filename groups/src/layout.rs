//! Which CPUs each group owns: N groups over C CPUs, each a contiguous
//! run, the first `C mod N` groups one CPU larger than the rest (so 8 CPUs
//! in 3 groups are 0–2, 3–5, 6–7). A group's CPUs as an affinity-style
//! mask (bit n: CPU n) is what the scheduler confines its threads to.

use core::ops::Range;

/// The most CPUs a layout covers: one 64-bit mask names them all.
pub const MAX_CPUS: usize = 64;

/// N groups over C CPUs (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLayout {
    cpus: usize,
    groups: usize,
}

/// Why a layout cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// No groups asked for, or no CPUs.
    Empty,
    /// More groups than CPUs: every group needs a CPU of its own.
    MoreGroupsThanCpus {
        /// Groups asked for.
        groups: usize,
        /// CPUs online.
        cpus: usize,
    },
    /// More CPUs than [`MAX_CPUS`].
    TooManyCpus(usize),
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LayoutError::Empty => write!(f, "no groups or no CPUs"),
            LayoutError::MoreGroupsThanCpus { groups, cpus } => write!(f, "{groups} groups need at least {groups} CPUs, {cpus} are online"),
            LayoutError::TooManyCpus(cpus) => write!(f, "{cpus} CPUs: groups cover at most {MAX_CPUS}"),
        }
    }
}

impl GroupLayout {
    /// `groups` groups over CPUs `0..cpus`.
    pub fn new(cpus: usize, groups: usize) -> Result<Self, LayoutError> {
        if cpus == 0 || groups == 0 {
            return Err(LayoutError::Empty);
        }
        if cpus > MAX_CPUS {
            return Err(LayoutError::TooManyCpus(cpus));
        }
        if groups > cpus {
            return Err(LayoutError::MoreGroupsThanCpus { groups, cpus });
        }
        Ok(Self { cpus, groups })
    }

    /// One group over every CPU: the kernel without groups.
    pub fn single(cpus: usize) -> Self {
        Self { cpus: cpus.clamp(1, MAX_CPUS), groups: 1 }
    }

    /// How many groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// How many CPUs in all.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Group `group`'s CPUs (empty for a group that does not exist).
    pub fn cpus_of(&self, group: usize) -> Range<usize> {
        if group >= self.groups {
            return 0..0;
        }
        let (base, extra) = (self.cpus / self.groups, self.cpus % self.groups);
        let start = group * base + group.min(extra);
        start..start + base + usize::from(group < extra)
    }

    /// The group CPU `cpu` belongs to (None past the last CPU).
    pub fn group_of(&self, cpu: usize) -> Option<usize> {
        if cpu >= self.cpus {
            return None;
        }
        let (base, extra) = (self.cpus / self.groups, self.cpus % self.groups);
        let large = extra * (base + 1);
        Some(if cpu < large { cpu / (base + 1) } else { extra + (cpu - large) / base })
    }

    /// Group `group`'s CPUs as a mask (bit n: CPU n; 0 for no such group).
    pub fn mask_of(&self, group: usize) -> u64 {
        let cpus = self.cpus_of(group);
        if cpus.is_empty() {
            return 0;
        }
        let width = cpus.len();
        let ones = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        ones << cpus.start
    }

    /// The group an affinity mask keeps a thread in: the one group that
    /// holds every CPU of the mask that exists; None when the mask names no
    /// existing CPU or CPUs of more than one group.
    pub fn confining_group(&self, mask: u64) -> Option<usize> {
        let all = if self.cpus >= 64 { u64::MAX } else { (1u64 << self.cpus) - 1 };
        let mask = mask & all;
        if mask == 0 {
            return None;
        }
        let first = self.group_of(mask.trailing_zeros() as usize)?;
        (mask & !self.mask_of(first) == 0).then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_cpus_in_three_groups_are_three_three_two() {
        let layout = GroupLayout::new(8, 3).unwrap();
        assert_eq!([layout.cpus_of(0), layout.cpus_of(1), layout.cpus_of(2)], [0..3, 3..6, 6..8]);
        assert_eq!((0..8).map(|cpu| layout.group_of(cpu).unwrap()).collect::<alloc::vec::Vec<_>>(), [0, 0, 0, 1, 1, 1, 2, 2]);
        assert_eq!(layout.mask_of(1), 0b0011_1000);
        assert_eq!(layout.cpus_of(3), 0..0);
        assert_eq!(layout.group_of(8), None);
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert_eq!(GroupLayout::new(0, 1), Err(LayoutError::Empty));
        assert_eq!(GroupLayout::new(4, 0), Err(LayoutError::Empty));
        assert_eq!(GroupLayout::new(2, 4), Err(LayoutError::MoreGroupsThanCpus { groups: 4, cpus: 2 }));
        assert_eq!(GroupLayout::new(65, 1), Err(LayoutError::TooManyCpus(65)));
    }

    #[test]
    fn sixty_four_cpus_in_one_group_is_every_bit() {
        let layout = GroupLayout::new(64, 1).unwrap();
        assert_eq!(layout.mask_of(0), u64::MAX);
        assert_eq!(layout.confining_group(u64::MAX), Some(0));
    }

    #[test]
    fn a_mask_inside_one_group_confines_to_it() {
        let layout = GroupLayout::new(4, 2).unwrap();
        assert_eq!(layout.confining_group(0b0100), Some(1));
        assert_eq!(layout.confining_group(0b1100), Some(1));
        assert_eq!(layout.confining_group(0b0110), None);
        // CPUs that do not exist are ignored; none left is None.
        assert_eq!(layout.confining_group(0b1_0000_0001), Some(0));
        assert_eq!(layout.confining_group(0b1_0000), None);
    }
}
