//! TLB invalidation on this CPU and shootdown to a set of CPUs.
//!
//! A shootdown is one request at a time for the whole machine: the sender
//! takes the shootdown lock, writes the request, marks each target CPU
//! pending and sends it [`VECTOR_TLB`]; each target invalidates and clears
//! its mark; the sender waits until every mark is clear. A CPU that waits
//! for the shootdown lock, or for acknowledgements, serves its own pending
//! request meanwhile, so two CPUs shooting at each other cannot deadlock.
//!
//! Must be called with no spinlock held: a target spinning on a lock the
//! sender holds, with interrupts off, would never acknowledge. Debug builds
//! check this through the per-CPU lock-level set. The request carries
//! pages, or "everything" (which also drops global entries).

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::percpu::{self, MAX_CPUS};
use super::trap::{self, VECTOR_TLB};
use super::{apic, cpu, paging};
use crate::TrapFrame;

/// Above this many pages a shootdown flushes everything instead.
pub const MAX_PAGES_PER_REQUEST: u64 = 32;

/// What to invalidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// `count` pages from the page-aligned `start`.
    Pages { start: u64, count: u64 },
    /// Every entry, global ones included.
    Everything,
    /// Stop using the user address space whose root table is at this
    /// physical address: a CPU that has it loaded switches to the
    /// kernel's tables (which flushes its entries). Sent before the space's
    /// tables are freed, so no CPU keeps a freed root in CR3.
    LeaveRoot(u64),
}

/// `REQUEST_COUNT` value that means [`Flush::LeaveRoot`] (`REQUEST_START`
/// is the root).
const LEAVE_ROOT: u64 = u64::MAX - 1;

/// A set of CPUs by index (up to [`MAX_CPUS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuSet {
    words: [u64; MAX_CPUS / 64],
}

impl CpuSet {
    pub const fn empty() -> Self {
        Self { words: [0; MAX_CPUS / 64] }
    }

    /// Every online CPU.
    pub fn online() -> Self {
        let mut set = Self::empty();
        for index in 0..percpu::online_count() {
            set.insert(index);
        }
        set
    }

    /// A set from its words (bit `i` of word `w` is CPU `64 * w + i`).
    pub const fn from_words(words: [u64; MAX_CPUS / 64]) -> Self {
        Self { words }
    }

    pub fn insert(&mut self, index: usize) {
        if index < MAX_CPUS {
            self.words[index / 64] |= 1 << (index % 64);
        }
    }

    pub fn contains(&self, index: usize) -> bool {
        index < MAX_CPUS && self.words[index / 64] & (1 << (index % 64)) != 0
    }

    /// The CPUs in the set, lowest first (set bits only: a shootdown to one
    /// CPU does not look at all `MAX_CPUS`).
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(word, bits)| {
            let mut left = *bits;
            core::iter::from_fn(move || {
                (left != 0).then(|| {
                    let bit = left.trailing_zeros() as usize;
                    left &= left - 1;
                    word * 64 + bit
                })
            })
        })
    }
}

/// The one request in flight (valid while `LOCK` is held).
static REQUEST_START: AtomicU64 = AtomicU64::new(0);
/// Pages of the request; `u64::MAX` means everything.
static REQUEST_COUNT: AtomicU64 = AtomicU64::new(0);
static LOCK: AtomicBool = AtomicBool::new(false);
static PENDING: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Shootdown interrupts each CPU served (tests check who was asked).
static SERVED: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// The longest a shootdown sent by each CPU waited, lock and
/// acknowledgements together, in TSC cycles (stall reports).
static LONGEST_WAIT: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Installs the shootdown handler (once, at boot, before other CPUs run).
pub(crate) fn init() {
    trap::set_handler(VECTOR_TLB, |_: &mut TrapFrame| serve_pending());
}

/// Invalidates one page on this CPU.
pub fn invalidate_page(address: u64) {
    // SAFETY: invlpg only drops a cached translation; it cannot break memory safety.
    unsafe { core::arch::asm!("invlpg [{}]", in(reg) address, options(nostack, preserves_flags)) };
}

/// Drops every translation on this CPU, global ones included (toggling
/// CR4.PGE), or only the non-global ones when global pages are off.
pub fn invalidate_everything() {
    cpu::without_interrupts(|| {
        let cr4 = cpu::read_cr4();
        if cr4 & cpu::CR4_PGE != 0 {
            cpu::write_cr4(cr4 & !cpu::CR4_PGE);
            cpu::write_cr4(cr4);
        } else {
            let cr3 = cpu::read_cr3();
            // SAFETY: reloading CR3 with its own value keeps every mapping.
            unsafe { core::arch::asm!("mov cr3, {}", in(reg) cr3, options(nostack, preserves_flags)) };
        }
    });
}

/// Carries out `flush` on this CPU only.
pub fn invalidate_local(flush: Flush) {
    match flush {
        Flush::Pages { start, count } if count <= MAX_PAGES_PER_REQUEST => {
            for page in 0..count {
                invalidate_page(start + page * 4096);
            }
        }
        Flush::LeaveRoot(root) => {
            if paging::active_root() == root {
                paging::switch_to_kernel_tables();
            }
        }
        _ => invalidate_everything(),
    }
}

/// Shootdown interrupts CPU `index` has served since boot.
pub fn served(index: usize) -> u64 {
    SERVED.get(index).map_or(0, |count| count.load(Ordering::Relaxed))
}

/// The longest wait of a shootdown CPU `index` sent, in nanoseconds: on an
/// overcommitted host a target vCPU the host has descheduled keeps the
/// sender spinning (with interrupts off) until it runs again.
pub fn longest_wait_nanoseconds(index: usize) -> u64 {
    LONGEST_WAIT.get(index).map_or(0, |cycles| super::timer::nanoseconds_of_cycles(cycles.load(Ordering::Relaxed)))
}

/// Invalidates `flush` on every CPU in `cpus` (this one included if it is
/// in the set) and returns when all of them did.
///
/// Runs with interrupts off, so the caller stays on one CPU throughout:
/// a thread preempted in the middle and moved to another CPU invalidated
/// that CPU's entries in place of its first one's, which kept stale
/// translations that a thread running there again could use (the root
/// still loaded, so nothing reloaded) after their frames were freed.
/// Found by reading the code while placement was being stressed; no test
/// reproduces it. Waiting with interrupts off is safe: this CPU serves
/// requests sent to it while it waits, and no spinlock is held.
pub fn shootdown(cpus: &CpuSet, flush: Flush) {
    debug_assert_eq!(percpu::held_lock_levels(), 0, "a TLB shootdown with a spinlock held can deadlock");
    let _stay_here = cpu::InterruptsOff::new();
    let me = percpu::current_index();
    let others = cpus.iter().filter(|&index| index != me && percpu::cpu(index).is_some()).count();
    if others > 0 {
        let began = cpu::read_timestamp_counter();
        acquire();
        let (start, count) = match flush {
            Flush::Pages { start, count } => (start, count),
            Flush::Everything => (0, u64::MAX),
            Flush::LeaveRoot(root) => (root, LEAVE_ROOT),
        };
        REQUEST_START.store(start, Ordering::Relaxed);
        REQUEST_COUNT.store(count, Ordering::Relaxed);
        for index in cpus.iter().filter(|&index| index != me) {
            if let Some(target) = percpu::cpu(index) {
                // Release: the target sees the request before its mark.
                PENDING[index].store(true, Ordering::Release);
                apic::send_ipi(target.apic_id, VECTOR_TLB);
            }
        }
        for index in cpus.iter().filter(|&index| index != me) {
            while PENDING[index].load(Ordering::Acquire) {
                serve_pending();
                core::hint::spin_loop();
            }
        }
        LOCK.store(false, Ordering::Release);
        LONGEST_WAIT[me].fetch_max(cpu::read_timestamp_counter().wrapping_sub(began), Ordering::Relaxed);
    }
    if cpus.contains(me) {
        invalidate_local(flush);
    }
}

/// [`shootdown`] of a flush of one user address space, whose root table
/// is `root`, sent only to the CPUs of `cpus` that have that root loaded
/// (or are about to load it): a CPU with another root loaded holds none
/// of the space's translations (user entries are never global, the frame
/// record refuses them, and without PCIDs a CR3 load drops every
/// non-global entry), and one that loads the root after the look walks
/// the changed entries (`crate::loaded_roots`, model-checked). Linux too
/// asks only the CPUs that have the mm loaded.
pub fn shootdown_space(cpus: &CpuSet, flush: Flush, root: u64) {
    if root == 0 {
        return shootdown(cpus, flush);
    }
    let _stay_here = cpu::InterruptsOff::new();
    let mut loaded = CpuSet::empty();
    crate::loaded_roots::cpus_with_root(&super::frame_access::LOADED_ROOTS, cpus.iter(), root, |index| loaded.insert(index));
    // A guest running on the space as its nested tables: the IPI ends it,
    // and its next entry flushes the guest's TLB.
    crate::loaded_roots::cpus_with_root(&super::frame_access::NESTED_ROOTS, cpus.iter(), root, |index| loaded.insert(index));
    shootdown(&loaded, flush);
}

fn acquire() {
    while LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        serve_pending();
        core::hint::spin_loop();
    }
}

/// Serves this CPU's pending request, if any.
fn serve_pending() {
    let me = percpu::current_index();
    if PENDING[me].load(Ordering::Acquire) {
        let start = REQUEST_START.load(Ordering::Relaxed);
        let count = REQUEST_COUNT.load(Ordering::Relaxed);
        let flush = match count {
            u64::MAX => Flush::Everything,
            LEAVE_ROOT => Flush::LeaveRoot(start),
            _ => Flush::Pages { start, count },
        };
        invalidate_local(flush);
        SERVED[me].fetch_add(1, Ordering::Relaxed);
        PENDING[me].store(false, Ordering::Release);
    }
}
