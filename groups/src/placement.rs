//! Which group a new process goes to: a policy over numbers the kernel
//! reads (each group's load: the processes it runs). Round-robin takes
//! the groups in turn; least-loaded takes the group with the fewest
//! processes, a tie going to the parent's group and then round the ring
//! after it. Nothing here counts or moves a process.

/// How new processes are spread over the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Group `turn mod groups` (`turn` counts the placements so far).
    #[default]
    RoundRobin,
    /// The group with the least load.
    LeastLoaded,
}

/// The group for the `turn`th new process, whose parent runs in group
/// `parent`, among `groups` groups with loads `load(g)`. One group (or
/// none) is always group 0.
pub fn choose_group(policy: Policy, groups: usize, parent: usize, turn: u64, mut load: impl FnMut(usize) -> usize) -> usize {
    if groups <= 1 {
        return 0;
    }
    match policy {
        Policy::RoundRobin => (turn % groups as u64) as usize,
        Policy::LeastLoaded => {
            let parent = parent % groups;
            let mut best = (parent, load(parent));
            for step in 1..groups {
                let group = (parent + step) % groups;
                let group_load = load(group);
                if group_load < best.1 {
                    best = (group, group_load);
                }
            }
            best.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_takes_the_groups_in_turn() {
        let chosen: alloc::vec::Vec<usize> = (0..6).map(|turn| choose_group(Policy::RoundRobin, 3, 2, turn, |_| 0)).collect();
        assert_eq!(chosen, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn least_loaded_prefers_the_parent_on_a_tie() {
        assert_eq!(choose_group(Policy::LeastLoaded, 4, 2, 0, |group| [3, 1, 1, 1][group]), 2);
        assert_eq!(choose_group(Policy::LeastLoaded, 4, 2, 0, |group| [3, 1, 2, 1][group]), 3);
        assert_eq!(choose_group(Policy::LeastLoaded, 4, 1, 0, |group| [0, 1, 1, 1][group]), 0);
    }

    #[test]
    fn one_group_is_always_group_zero() {
        assert_eq!(choose_group(Policy::LeastLoaded, 1, 5, 9, |_| 7), 0);
        assert_eq!(choose_group(Policy::RoundRobin, 0, 0, 3, |_| 0), 0);
    }
}
