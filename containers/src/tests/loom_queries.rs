//! Loom: queries racing tree changes, every interleaving. A lock-free
//! query answers for one moment of a container's life: never the held
//! pages of one moment with the usage of another, never another life's
//! quota.

use loom::sync::Arc;

use super::loom_support::{check, race, LoomContainers, Preemptions};
use crate::QuotaError;

/// The parent has 1 page charged while a child of 3 is carved from it:
/// `charged` is 1 throughout (carved pages are held, not charged).
#[test]
fn charged_racing_a_child_creation_stays_what_was_charged() {
    check("charged vs child 3 of 5", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        containers.charge(root, 1).unwrap();
        let (charged, created) = race(
            &containers,
            move |tree| tree.charged(root),
            move |tree| tree.create_child(root, 3),
        );
        assert_eq!(charged, Ok(1));
        assert!(created.is_ok(), "child: {created:?}");
    });
}

/// A child of quota 3 is destroyed and its slot reused by a child of quota
/// 4 while the old id's quota is asked: the answer is 3 or "no such
/// container", never the new container's 4.
#[test]
fn a_quota_racing_the_reuse_of_the_slot_is_never_the_new_lives() {
    check("quota vs destroy and reuse", Preemptions::Unbounded, || {
        let containers = Arc::new(LoomContainers::with_capacity(5, 2).unwrap());
        let root = containers.root();
        let old = containers.create_child(root, 3).unwrap();
        let (quota, new) = race(
            &containers,
            move |tree| tree.quota(old),
            move |tree| {
                tree.destroy(old).unwrap();
                tree.create_child(root, 4).unwrap()
            },
        );
        assert_eq!(new.index(), old.index(), "the slot is reused");
        assert!(
            quota == Ok(3) || quota == Err(QuotaError::NoSuchContainer),
            "quota of the old id: {quota:?}"
        );
    });
}
