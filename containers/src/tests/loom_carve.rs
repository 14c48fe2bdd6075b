//! Loom: creating and destroying children racing charges and releases on
//! the parent, every interleaving. Carving is a charge on the parent's
//! usage word, and releases never pair old held pages with new usage.

use loom::sync::Arc;
use loom::thread;

use super::loom_support::{check, race, LoomContainers, Preemptions};
use crate::{Destroyed, QuotaError};

/// A charge of 3 races a child of quota 3 on a parent of 5: exactly one
/// fits, whichever comes first, and the parent's usage says which.
#[test]
fn a_charge_racing_a_child_creation_never_oversubscribes_the_parent() {
    check("charge 3 vs child 3 of 5", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        let (charged, created) = race(
            &containers,
            move |tree| tree.charge(root, 3),
            move |tree| tree.create_child(root, 3),
        );
        assert_eq!(
            containers.usage(root),
            Ok(3),
            "charge {charged:?}, child {created:?}"
        );
        match (charged, created) {
            (Ok(()), Err(refused)) => {
                assert_eq!(
                    refused,
                    QuotaError::Exhausted {
                        asked: 3,
                        available: 2
                    }
                );
                assert_eq!(containers.charged(root), Ok(3));
            }
            (Err(refused), Ok(child)) => {
                assert_eq!(
                    refused,
                    QuotaError::Exhausted {
                        asked: 3,
                        available: 2
                    }
                );
                assert_eq!(
                    (containers.quota(child), containers.charged(root)),
                    (Ok(3), Ok(0))
                );
            }
            outcome => panic!("exactly one of the two fits, saw {outcome:?}"),
        }
    });
}

/// Three threads: two charge 2 pages each to a parent of 5 while a child of
/// quota 2 is carved from it. Any two fit, never all three: exactly two
/// succeed and the parent's usage is 4. (Three threads need a preemption
/// bound.)
#[test]
fn two_charges_and_a_child_creation_never_oversubscribe_the_parent() {
    check(
        "charge 2, charge 2, child 2 of 5",
        Preemptions::AtMost(2),
        || {
            let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
            let root = containers.root();
            let charges: [_; 2] = core::array::from_fn(|_| {
                let tree = containers.clone();
                thread::spawn(move || tree.charge(root, 2).is_ok())
            });
            let tree = containers.clone();
            let created = thread::spawn(move || tree.create_child(root, 2).is_ok());
            let succeeded = charges
                .into_iter()
                .chain([created])
                .filter_map(|thread| thread.join().unwrap().then_some(()))
                .count();
            assert_eq!(succeeded, 2, "exactly two of three requests of 2 fit in 5");
            assert_eq!(containers.usage(root), Ok(4));
        },
    );
}

/// The 2 pages charged are released while a child of 4 is carved from a
/// parent of 5: the release always succeeds (the carved pages never look
/// releasable, nor the charged ones held), and the child fits only after it.
#[test]
fn a_release_racing_a_child_creation_sees_the_held_pages_whole() {
    check("release 2 vs child 4 of 5", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        containers.charge(root, 2).unwrap();
        let (released, created) = race(
            &containers,
            move |tree| tree.release(root, 2),
            move |tree| tree.create_child(root, 4),
        );
        assert_eq!(released, Ok(()));
        let held = match created {
            Ok(_) => 4,
            Err(refused) => {
                assert_eq!(
                    refused,
                    QuotaError::Exhausted {
                        asked: 4,
                        available: 3
                    }
                );
                0
            }
        };
        assert_eq!(
            (containers.usage(root), containers.charged(root)),
            (Ok(held), Ok(0))
        );
    });
}

/// The parent, with 1 page charged, tries to release 2 while a child of 3
/// is carved from it: refused every time, whatever it sees of the carving
/// (the carved pages count in its usage but are held, not charged).
#[test]
fn a_release_racing_a_child_creation_never_takes_carved_pages() {
    check(
        "over-release 2 vs child 3 of 5",
        Preemptions::Unbounded,
        || {
            let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
            let root = containers.root();
            containers.charge(root, 1).unwrap();
            let (released, created) = race(
                &containers,
                move |tree| tree.release(root, 2),
                move |tree| tree.create_child(root, 3),
            );
            assert_eq!(
                released,
                Err(QuotaError::OverRelease {
                    asked: 2,
                    charged: 1
                })
            );
            assert!(created.is_ok(), "child: {created:?}");
            assert_eq!(
                (containers.usage(root), containers.charged(root)),
                (Ok(4), Ok(1))
            );
        },
    );
}

/// The parent releases its one charged page while its child (quota 3,
/// nothing charged) is destroyed: both succeed and the parent ends empty.
#[test]
fn a_release_racing_a_child_destruction_conserves_the_count() {
    check("release 1 vs destroy child", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        let child = containers.create_child(root, 3).unwrap();
        containers.charge(root, 1).unwrap();
        let (released, destroyed) = race(
            &containers,
            move |tree| tree.release(root, 1),
            move |tree| tree.destroy(child),
        );
        assert_eq!(released, Ok(()));
        assert_eq!(
            destroyed,
            Ok(Destroyed {
                returned: 3,
                still_charged: 0
            })
        );
        assert_eq!(
            (containers.usage(root), containers.available(root)),
            (Ok(0), Ok(5))
        );
    });
}
