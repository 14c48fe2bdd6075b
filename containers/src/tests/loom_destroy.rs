//! Loom: destroying a container while its pages are charged and released,
//! every interleaving. A charge lands before the death or is refused; a
//! release lands before it or is forwarded to the parent; no page is lost.

use loom::sync::Arc;

use super::loom_support::{check, race, LoomContainers, Preemptions};
use crate::{Destroyed, QuotaError};

/// A child of quota 3 with 1 page charged gets another charge of 1 while
/// it is destroyed: the destruction counts the page iff the charge got in.
#[test]
fn a_charge_racing_destroy_is_counted_or_refused() {
    check("charge 1 vs destroy", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        let child = containers.create_child(root, 3).unwrap();
        containers.charge(child, 1).unwrap();
        let (charged, destroyed) = race(
            &containers,
            move |tree| tree.charge(child, 1),
            move |tree| tree.destroy(child),
        );
        let expected = match charged {
            Ok(()) => Destroyed {
                returned: 1,
                still_charged: 2,
            },
            Err(refused) => {
                assert_eq!(refused, QuotaError::NoSuchContainer);
                Destroyed {
                    returned: 2,
                    still_charged: 1,
                }
            }
        };
        assert_eq!(destroyed, Ok(expected), "after the charge {charged:?}");
        assert_eq!(containers.usage(root), Ok(expected.still_charged));
    });
}

/// A child's 2 charged pages are released while it is destroyed: the
/// release succeeds either way (after the death, forwarded to the root),
/// the root gets its whole quota back, and the slot is free again.
#[test]
fn a_release_racing_destroy_is_forwarded_and_loses_no_page() {
    check("release 2 vs destroy", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        let child = containers.create_child(root, 3).unwrap();
        containers.charge(child, 2).unwrap();
        let (released, destroyed) = race(
            &containers,
            move |tree| tree.release(child, 2),
            move |tree| tree.destroy(child),
        );
        assert_eq!(released, Ok(()));
        assert!(destroyed.is_ok(), "destroy: {destroyed:?}");
        assert_eq!(
            (containers.usage(root), containers.available(root)),
            (Ok(0), Ok(5))
        );
        assert!(
            containers.create_child(root, 5).is_ok(),
            "the slot and the whole quota are free"
        );
    });
}
