//! Std-thread stress: many requests on many threads against one small
//! budget. Refused requests change nothing; the budget never goes below
//! zero; at the end everything is back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::vec::Vec;

use super::support::TestAccount;
use crate::{Bound, Budget, Reservation, ReservationError};

#[test]
fn a_crowd_of_requests_never_overdraws_the_budget() {
    const BUDGET: u64 = 50;
    let budget = Arc::new(Budget::new(BUDGET));
    let in_flight = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..8u64)
        .map(|thread| {
            let (budget, in_flight, refused) = (budget.clone(), in_flight.clone(), refused.clone());
            std::thread::spawn(move || {
                let account = TestAccount::new(20);
                for request in 0..5_000u64 {
                    let pages = 1 + (thread * 7 + request) % 9;
                    match Reservation::reserve(&budget, &account, Bound::fixed(pages), 0) {
                        Ok(mut reservation) => {
                            let total = in_flight.fetch_add(pages, Ordering::SeqCst) + pages;
                            assert!(total <= BUDGET, "{total} pages reserved of a budget of {BUDGET}");
                            reservation.draw(pages).expect("within the reservation");
                            in_flight.fetch_sub(pages, Ordering::SeqCst);
                            reservation.give_back(pages).expect("drawn");
                        }
                        Err(ReservationError::KernelMemory { .. }) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(other) => panic!("unexpected refusal {other}"),
                    }
                }
                assert_eq!(account.charged(), 0);
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().expect("worker"));
    assert_eq!(budget.available(), BUDGET);
}
