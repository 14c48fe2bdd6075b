//! Where a thread runs: which CPUs it may use ([`CpuMask`]), which CPU a
//! new thread starts on ([`choose_cpu`]) and which busy CPU an idle one
//! takes waiting work from ([`choose_victim`]).
//!
//! Plain decisions over numbers the kernel reads from its queues (a CPU's
//! load: the threads it runs or has queued); nothing here locks, reads a
//! queue or moves a thread (`kernel/scheduler.rs` does). The loads are
//! snapshots: a choice made on them may be stale by the time the thread
//! arrives, which costs balance, never correctness — the queues stay the
//! only truth of where a thread is.

/// The CPUs a thread may run on: bit n for CPU n, for CPUs below 64;
/// [`CpuMask::ALL`] also allows every CPU from 64 on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuMask(u64);

impl CpuMask {
    /// Every CPU.
    pub const ALL: CpuMask = CpuMask(u64::MAX);

    /// The CPUs of a Linux affinity mask's first word (bit n: CPU n).
    /// All ones means every CPU.
    pub const fn from_bits(bits: u64) -> Self {
        CpuMask(bits)
    }

    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether CPU `cpu` is allowed.
    pub const fn allows(self, cpu: usize) -> bool {
        if self.0 == u64::MAX {
            return true;
        }
        cpu < 64 && (self.0 >> cpu) & 1 == 1
    }

    /// The lowest allowed CPU of the first `online`, if any.
    pub fn first(self, online: usize) -> Option<usize> {
        (0..online).find(|&cpu| self.allows(cpu))
    }
}

/// The CPU for a thread that `here` is creating, among the first `online`
/// CPUs that `allowed` allows: the one with the least load, where
/// `load(cpu)` counts the threads it runs and has queued (the creator
/// counts on `here`). A tie goes to `here` (its caches hold the creator's
/// data), then to the first CPU after `here`, round the ring, so a burst
/// of new threads spreads instead of piling on CPU 0. None when `allowed`
/// allows no online CPU.
pub fn choose_cpu(here: usize, online: usize, allowed: CpuMask, mut load: impl FnMut(usize) -> usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for step in 0..online {
        let cpu = (here + step) % online;
        if !allowed.allows(cpu) {
            continue;
        }
        let cpu_load = load(cpu);
        if best.is_none_or(|(_, least)| cpu_load < least) {
            best = Some((cpu, cpu_load));
            if cpu_load == 0 {
                break;
            }
        }
    }
    best.map(|(cpu, _)| cpu)
}

/// What an idle CPU knows of another when it looks for work to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// The CPU runs a thread (it is not in its idle loop).
    pub running: bool,
    /// Threads on its ReadyQ, waiting for it.
    pub waiting: usize,
}

/// The CPU an idle CPU `here` takes a waiting thread from: among the
/// first `online` CPUs, one that is running a thread while others wait on
/// its ReadyQ, with the most waiting (ties: the first after `here`). An
/// idle CPU's queued threads are about to run there: taking them would
/// only move work about. None when no CPU has threads waiting.
pub fn choose_victim(here: usize, online: usize, mut busy: impl FnMut(usize) -> Busy) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for step in 1..online {
        let cpu = (here + step) % online;
        let Busy { running, waiting } = busy(cpu);
        if running && waiting > 0 && best.is_none_or(|(_, most)| waiting > most) {
            best = Some((cpu, waiting));
        }
    }
    best.map(|(cpu, _)| cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_allow_their_bits_and_all_allows_every_cpu() {
        let mask = CpuMask::from_bits(0b1010);
        assert!(!mask.allows(0) && mask.allows(1) && !mask.allows(2) && mask.allows(3) && !mask.allows(64));
        assert!(CpuMask::ALL.allows(0) && CpuMask::ALL.allows(63) && CpuMask::ALL.allows(200));
        assert_eq!(mask.first(4), Some(1));
        assert_eq!(mask.first(1), None);
        assert_eq!(CpuMask::from_bits(1 << 63).first(64), Some(63));
    }

    #[test]
    fn a_new_thread_goes_to_an_idle_cpu_before_its_creators() {
        // CPU 0 runs the creator; 1 and 2 are idle.
        assert_eq!(choose_cpu(0, 3, CpuMask::ALL, |cpu| [1, 0, 0][cpu]), Some(1));
        // From CPU 2 the ring starts at 2: the first idle after it is 0.
        assert_eq!(choose_cpu(2, 3, CpuMask::ALL, |cpu| [0, 0, 1][cpu]), Some(0));
    }

    #[test]
    fn a_tie_keeps_the_thread_with_its_creator() {
        assert_eq!(choose_cpu(1, 3, CpuMask::ALL, |_| 2), Some(1));
        assert_eq!(choose_cpu(0, 1, CpuMask::ALL, |_| 5), Some(0));
    }

    #[test]
    fn the_least_loaded_allowed_cpu_wins() {
        let loads = [3, 1, 2, 0];
        assert_eq!(choose_cpu(0, 4, CpuMask::ALL, |cpu| loads[cpu]), Some(3));
        assert_eq!(choose_cpu(0, 4, CpuMask::from_bits(0b0111), |cpu| loads[cpu]), Some(1));
        assert_eq!(choose_cpu(0, 4, CpuMask::from_bits(0b0100), |cpu| loads[cpu]), Some(2));
        // A CPU that is not online is never chosen.
        assert_eq!(choose_cpu(0, 2, CpuMask::from_bits(0b1000), |cpu| loads[cpu]), None);
    }

    #[test]
    fn a_burst_of_threads_spreads_over_the_cpus() {
        // Each chosen CPU gets the new thread queued before the next choice.
        let mut loads = [1usize, 0, 0, 0];
        let mut chosen = Vec::new();
        for _ in 0..4 {
            let cpu = choose_cpu(0, 4, CpuMask::ALL, |cpu| loads[cpu]).unwrap();
            loads[cpu] += 1;
            chosen.push(cpu);
        }
        assert_eq!(chosen, [1, 2, 3, 0]);
    }

    #[test]
    fn an_idle_cpu_takes_from_the_busiest_running_cpu() {
        let cpus = [Busy { running: true, waiting: 1 }, Busy { running: false, waiting: 0 }, Busy { running: true, waiting: 3 }];
        assert_eq!(choose_victim(1, 3, |cpu| cpus[cpu]), Some(2));
        // An idle CPU's queue is about to run: not a victim.
        let cpus = [Busy { running: false, waiting: 2 }, Busy { running: false, waiting: 0 }];
        assert_eq!(choose_victim(1, 2, |cpu| cpus[cpu]), None);
        // Nothing waits: nothing to take.
        assert_eq!(choose_victim(0, 3, |_| Busy { running: true, waiting: 0 }), None);
        // A CPU never takes from itself.
        assert_eq!(choose_victim(0, 1, |_| Busy { running: true, waiting: 4 }), None);
    }
}
