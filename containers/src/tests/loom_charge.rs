//! Loom: charges and releases racing on one container, every interleaving.

use loom::sync::Arc;

use super::loom_support::{check, race, LoomContainers, Preemptions};
use crate::QuotaError;

/// Two threads charge `first` and `second` pages to a root of `quota`:
/// usage never passes the quota, it ends at the sum of the charges that
/// succeeded, and a charge fails only if the other's left too little.
fn charges_race(quota: u64, first: u64, second: u64) {
    let containers = Arc::new(LoomContainers::with_capacity(quota, 1).unwrap());
    let root = containers.root();
    let (a, b) = race(
        &containers,
        move |tree| tree.charge(root, first),
        move |tree| tree.charge(root, second),
    );
    let counted: u64 = [(a, first), (b, second)]
        .iter()
        .filter(|(result, _)| result.is_ok())
        .map(|&(_, pages)| pages)
        .sum();
    assert_eq!(
        containers.usage(root),
        Ok(counted),
        "charges {a:?} and {b:?}"
    );
    assert!(counted <= quota, "usage {counted} above the quota {quota}");
    for (result, pages, other) in [(a, first, second), (b, second, first)] {
        if let Err(error) = result {
            assert_eq!(
                error,
                QuotaError::Exhausted {
                    asked: pages,
                    available: quota - other
                }
            );
        }
    }
    assert!(
        a.is_ok() || b.is_ok(),
        "one charge fits in any order: {a:?}, {b:?}"
    );
}

#[test]
fn two_charges_that_cannot_both_fit_never_exceed_the_quota() {
    check("charges 2 + 2 of 3", Preemptions::Unbounded, || {
        charges_race(3, 2, 2)
    });
}

#[test]
fn two_charges_that_fit_both_succeed() {
    check("charges 2 + 2 of 4", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(4, 1).unwrap());
        let root = containers.root();
        let results = race(
            &containers,
            move |tree| tree.charge(root, 2),
            move |tree| tree.charge(root, 2),
        );
        assert_eq!(results, (Ok(()), Ok(())));
        assert_eq!(containers.usage(root), Ok(4));
    });
}

/// A release of the 2 pages charged races a charge of 3 of a quota of 4:
/// the charge fits only after the release, and the count ends right.
#[test]
fn a_release_racing_a_charge_conserves_the_count() {
    check("release 2 vs charge 3 of 4", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(4, 1).unwrap());
        let root = containers.root();
        containers.charge(root, 2).unwrap();
        let (released, charged) = race(
            &containers,
            move |tree| tree.release(root, 2),
            move |tree| tree.charge(root, 3),
        );
        assert_eq!(released, Ok(()));
        let expected = match charged {
            Ok(()) => 3,
            Err(error) => {
                assert_eq!(
                    error,
                    QuotaError::Exhausted {
                        asked: 3,
                        available: 2
                    }
                );
                0
            }
        };
        assert_eq!(
            containers.usage(root),
            Ok(expected),
            "after the release and charge {charged:?}"
        );
        assert_eq!(containers.charged(root), Ok(expected));
    });
}

/// Two releases of the one page charged: exactly one succeeds.
#[test]
fn racing_releases_never_release_a_page_twice() {
    check(
        "release 1 vs release 1 of 1",
        Preemptions::Unbounded,
        || {
            let containers = Arc::new(LoomContainers::with_capacity(4, 1).unwrap());
            let root = containers.root();
            containers.charge(root, 1).unwrap();
            let (a, b) = race(
                &containers,
                move |tree| tree.release(root, 1),
                move |tree| tree.release(root, 1),
            );
            let over = Err(QuotaError::OverRelease {
                asked: 1,
                charged: 0,
            });
            assert!(
                (a == Ok(()) && b == over) || (a == over && b == Ok(())),
                "releases {a:?} and {b:?}"
            );
            assert_eq!(containers.usage(root), Ok(0));
        },
    );
}
