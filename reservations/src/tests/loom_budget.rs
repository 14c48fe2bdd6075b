//! Loom models of the budget: the real CAS loop, every interleaving.

use loom::sync::Arc;
use loom::thread;

use crate::{Bound, Budget, Reservation, Unlimited};

/// Two requests race for the last pages, each keeping what it gets:
/// exactly one gets them.
#[test]
fn the_last_pages_go_to_exactly_one_request() {
    fn take_two(budget: &Budget) -> bool {
        let Ok(mut reservation) = Reservation::reserve(budget, &Unlimited, Bound::fixed(2), 0) else { return false };
        reservation.draw(2).unwrap();
        reservation.finish() == 2
    }
    loom::model(|| {
        let budget = Arc::new(Budget::new(3));
        let other = budget.clone();
        let racer = thread::spawn(move || take_two(&other));
        let mine = take_two(&budget);
        let theirs = racer.join().unwrap();
        assert!(mine != theirs, "both or neither got 2 of 3 pages: {mine} {theirs}");
        assert_eq!(budget.available(), 1);
    });
}

/// A request finishing (returning its unused pages) races another asking
/// for them: the second either waits out nothing and fails, or gets them;
/// the count is conserved.
#[test]
fn returns_and_reservations_conserve_the_budget() {
    loom::model(|| {
        let budget = Arc::new(Budget::new(2));
        let mut first = Reservation::reserve(&budget, &Unlimited, Bound::fixed(2), 0).unwrap();
        first.draw(1).unwrap();
        let other = budget.clone();
        let racer = thread::spawn(move || {
            Reservation::reserve(&other, &Unlimited, Bound::fixed(1), 0).map(|reservation| reservation.reserved()).ok()
        });
        let kept = first.finish();
        let got = racer.join().unwrap();
        assert_eq!(kept, 1);
        // The racer's reservation was dropped: only the kept page is out.
        assert!(got.is_none() || got == Some(1));
        assert_eq!(budget.available(), 1);
    });
}
