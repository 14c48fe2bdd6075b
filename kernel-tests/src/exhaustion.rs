//! Kernel memory exhaustion: requests on every CPU at once keep heap
//! buffers until the kernel's budget is spent. Past that point requests
//! are refused up front (ENOMEM), none fails half-way, the heap itself
//! never runs dry, nothing panics, and once memory is given back requests
//! are served again and the whole budget is back.

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use machine::irq_lock::IrqLock;
use machine::percpu;
use reservations::{Bound, Reservation, ReservationError, Unlimited};
use sched::Pinning;

use super::runner::{check, Outcome};
use super::waiting::wait_until;
use kernel_objects::kernel_memory::{reserved_buffer, KERNEL_BUDGET, PAGE_BYTES};
use kernel_objects::SystemFacts;

/// A request that keeps a buffer of `bytes`: one page for bookkeeping plus
/// one per 4 KiB of buffer.
const KEEP_BUFFER: Bound = Bound { fixed: 1, per_unit: 1, unit_size: PAGE_BYTES as u64 };
/// Refusals in a row after which a thread decides memory is spent.
const REFUSALS_TO_STOP: u32 = 20;

/// What the request threads saw, summed.
#[derive(Default)]
struct Tally {
    served: AtomicU64,
    refused: AtomicU64,
    failed_half_way: AtomicU64,
    kept_pages: AtomicU64,
}

/// One request: reserve, allocate a buffer of `bytes`, keep it.
fn keep_buffer(bytes: usize, kept: &mut Vec<Vec<u8>>, tally: &Tally) -> Result<(), ReservationError> {
    let mut reservation = Reservation::reserve(&KERNEL_BUDGET, &Unlimited, KEEP_BUFFER, bytes as u64)?;
    // The bookkeeping page: this request's slot in `kept`.
    if reservation.draw(1).is_err() || kept.try_reserve(1).is_err() {
        tally.failed_half_way.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    match reserved_buffer(&mut reservation, bytes) {
        Ok(buffer) => kept.push(buffer),
        Err(_) => {
            tally.failed_half_way.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
    }
    tally.kept_pages.fetch_add(reservation.finish(), Ordering::Relaxed);
    Ok(())
}

/// Requests of 4..64 KiB until `REFUSALS_TO_STOP` refusals in a row.
fn request_until_refused(seed: u64, tally: &Tally) -> Vec<Vec<u8>> {
    let mut kept = Vec::new();
    let mut refusals_in_a_row = 0;
    let mut step = seed;
    while refusals_in_a_row < REFUSALS_TO_STOP {
        step = step.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bytes = (1 + (step >> 33) % 16) as usize * PAGE_BYTES - (step >> 20) as usize % 100;
        match keep_buffer(bytes, &mut kept, tally) {
            Ok(()) => {
                refusals_in_a_row = 0;
                tally.served.fetch_add(1, Ordering::Relaxed);
            }
            Err(ReservationError::KernelMemory { .. }) => {
                refusals_in_a_row += 1;
                tally.refused.fetch_add(1, Ordering::Relaxed);
                sched::yield_now();
            }
            Err(_) => {
                tally.failed_half_way.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
    }
    kept
}

pub fn requests_on_every_cpu_exhaust_the_budget_and_fail_cleanly(_facts: &SystemFacts) -> Outcome {
    let budget_before = KERNEL_BUDGET.available();
    check(budget_before > 0, || "no kernel memory was set aside for requests".into())?;
    let tally = Arc::new(Tally::default());
    let held: Arc<IrqLock<Vec<Vec<Vec<u8>>>>> = Arc::new(IrqLock::new(Vec::new()));
    let threads = 2 * percpu::online_count();
    let mut workers = Vec::new();
    for index in 0..threads {
        let (tally, held) = (tally.clone(), held.clone());
        let cpu = index % percpu::online_count();
        let worker = sched::spawn_on(cpu, Pinning::Pinned, "requester", move || {
            let kept = request_until_refused(index as u64 + 1, &tally);
            held.lock().push(kept);
        })
        .map_err(|error| format!("spawn on CPU {cpu} failed: {error:?}"))?;
        workers.push(worker);
    }
    check(wait_until(60_000, || workers.iter().all(|worker| worker.has_exited())), || "requesters did not finish".into())?;
    let (served, refused) = (tally.served.load(Ordering::Relaxed), tally.refused.load(Ordering::Relaxed));
    let failed_half_way = tally.failed_half_way.load(Ordering::Relaxed);
    let kept_pages = tally.kept_pages.load(Ordering::Relaxed);
    let left = KERNEL_BUDGET.available();
    // Give everything back before judging.
    held.lock().clear();
    KERNEL_BUDGET.release_kept(kept_pages);
    check(failed_half_way == 0, || format!("{failed_half_way} requests failed after their reservation succeeded"))?;
    check(refused >= REFUSALS_TO_STOP as u64 * threads as u64, || format!("only {refused} refusals: the budget was never spent"))?;
    check(served > 0 && left < 1 + 16, || format!("{served} requests served, {left} pages left unreserved at the end"))?;
    let after = KERNEL_BUDGET.available();
    check(after == budget_before, || format!("budget {budget_before} pages before, {after} after everything was freed"))?;
    // Still serving: a request goes through again.
    let mut kept = Vec::new();
    keep_buffer(PAGE_BYTES, &mut kept, &tally).map_err(|error| format!("a request after the exhaustion was refused: {error}"))?;
    drop(kept);
    KERNEL_BUDGET.release_kept(2);
    Ok(())
}

crate::kernel_tests! {
    "memory" => [
        requests_on_every_cpu_exhaust_the_budget_and_fail_cleanly,
    ],
}
