//! Unit tests: bounds, refusals that change nothing, draws past the
//! reservation, what finishing keeps and gives back.

use super::support::TestAccount;
use crate::{Bound, Budget, Reservation, ReservationError, Unlimited};

#[test]
fn bounds_are_a_fixed_part_plus_a_part_per_group() {
    let write = Bound { fixed: 1, per_unit: 1, unit_size: 4096 };
    assert_eq!(write.pages(0), Some(1));
    assert_eq!(write.pages(1), Some(2));
    assert_eq!(write.pages(4096), Some(2));
    assert_eq!(write.pages(4097), Some(3));
    assert_eq!(Bound::fixed(3).pages(u64::MAX), Some(3));
    assert_eq!(Bound { fixed: 1, per_unit: u64::MAX, unit_size: 1 }.pages(2), None);
    assert_eq!(Bound { fixed: 0, per_unit: 1, unit_size: 0 }.pages(5), Some(5), "a unit size of 0 counts as 1");
}

#[test]
fn a_refused_reservation_changes_nothing() {
    let budget = Budget::new(10);
    let account = TestAccount::new(5);
    assert_eq!(
        Reservation::reserve(&budget, &account, Bound::fixed(6), 0).err(),
        Some(ReservationError::Quota { asked: 6 })
    );
    assert_eq!((budget.available(), account.charged()), (10, 0));
    let big = TestAccount::new(100);
    assert_eq!(
        Reservation::reserve(&budget, &big, Bound::fixed(11), 0).err(),
        Some(ReservationError::KernelMemory { asked: 11, available: 10 })
    );
    assert_eq!((budget.available(), big.charged()), (10, 0), "the quota charge was undone");
    let overflow = Bound { fixed: 1, per_unit: u64::MAX, unit_size: 1 };
    assert_eq!(Reservation::reserve(&budget, &big, overflow, 2).err(), Some(ReservationError::BadCount));
}

#[test]
fn a_request_cannot_use_more_than_it_reserved() {
    let budget = Budget::new(10);
    let mut reservation = Reservation::reserve(&budget, &Unlimited, Bound::fixed(4), 0).expect("fits");
    assert_eq!(reservation.draw(3), Ok(()));
    assert_eq!(reservation.draw(2), Err(ReservationError::Overdrawn { reserved: 4, wanted: 5 }));
    assert_eq!(reservation.in_use(), 3, "a refused draw draws nothing");
    assert_eq!(reservation.give_back(3), Ok(()));
    assert_eq!(reservation.give_back(1), Err(ReservationError::BadCount));
    assert_eq!(reservation.draw(4), Ok(()));
    assert_eq!(reservation.peak(), 4);
}

#[test]
fn finishing_keeps_what_is_in_use_and_returns_the_rest() {
    let budget = Budget::new(10);
    let account = TestAccount::new(8);
    let mut reservation = Reservation::reserve(&budget, &account, Bound::fixed(6), 0).expect("fits");
    assert_eq!((budget.available(), account.charged()), (4, 6));
    reservation.draw(5).expect("within");
    reservation.give_back(3).expect("drawn");
    assert_eq!(reservation.finish(), 2);
    assert_eq!((budget.available(), account.charged()), (8, 2), "two pages kept by objects that outlive the request");
    budget.release_kept(2);
    crate::Account::release(&account, 2);
    assert_eq!((budget.available(), account.charged()), (10, 0));
}

#[test]
fn a_dropped_reservation_gives_back_what_it_does_not_use() {
    let budget = Budget::new(10);
    let account = TestAccount::new(10);
    {
        let mut reservation = Reservation::reserve(&budget, &account, Bound::fixed(7), 0).expect("fits");
        reservation.draw(7).expect("within");
        reservation.give_back(7).expect("drawn");
    }
    assert_eq!((budget.available(), account.charged()), (10, 0));
}
