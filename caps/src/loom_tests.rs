//! Model checking of `SharedCaps` with loom (`--cfg loom`): every
//! interleaving of revokes with delegations, obtains, drops and other
//! revokes over small trees. Batches hold two removals under loom, so
//! sweeps are interleaved with the other operations between batches.
//!
//! Checked: after a revoke returns, nothing derived from the revoked
//! capability exists in any space and every removed capability's effects
//! were undone (also for revocations it absorbed or waited for); the
//! database passes its audit at the end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::vec::Vec;

use loom::sync::Mutex;
use sync::LoomBlocking;

use crate::{CapDatabase, CapError, CapId, ObjectKind, Placement, RevokeScope, Rights, SharedCaps, Slot, SpaceId};

const ANY: Placement = Placement::LowestFrom(2);

/// Two spaces with process capabilities to each other at slots 0 and 1.
fn two_spaces() -> (CapDatabase, [SpaceId; 2]) {
    let mut database = CapDatabase::new(0);
    let spaces = [database.create_space(16).unwrap(), database.create_space(16).unwrap()];
    for holder in spaces {
        for (number, named) in spaces.iter().enumerate() {
            database
                .create_object(holder, ObjectKind::Process, named.to_bits(), 0, Rights::ALL, Placement::At(number as Slot))
                .unwrap();
        }
    }
    (database, spaces)
}

/// Runs `body` under loom with a preemption bound: the races here need at
/// most three forced switches (sweep batch / undo / the other thread's
/// step), and the bound keeps each model to seconds instead of minutes.
fn model(body: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(body);
}

fn shared(database: CapDatabase) -> Arc<SharedCaps<LoomBlocking>> {
    let caps = Arc::new(SharedCaps::new(0));
    caps.with(|shared| *shared = database);
    caps
}

/// Every capability in a space at or above slot 2 (not a process capability).
fn user_caps(database: &CapDatabase, space: SpaceId) -> Vec<CapId> {
    database.contents(space).filter(|(slot, _)| *slot >= 2).map(|(_, cap)| cap.cap).collect()
}

#[test]
fn a_revoke_racing_delegations_from_its_subtree_leaves_no_survivor() {
    model(|| {
        let (mut database, [a, b]) = two_spaces();
        let root = database.create_object(a, ObjectKind::Memory, 0, 4096, Rights::ALL, ANY).unwrap();
        let child = database.delegate(a, root, 1, Rights::ALL, ANY).unwrap();
        database.delegate(a, root, 1, Rights::ALL, ANY).unwrap();
        let caps = shared(database);
        let delegator = {
            let caps = caps.clone();
            loom::thread::spawn(move || {
                let result = caps.with(|database| database.delegate(b, child, 0, Rights::ALL, ANY));
                assert!(matches!(result, Ok(_) | Err(CapError::Revoked) | Err(CapError::EmptySlot)), "{result:?}");
            })
        };
        let undone = Mutex::new(0);
        caps.revoke(a, root, RevokeScope::Descendants, |_| *undone.lock().unwrap() += 1).unwrap();
        caps.with(|database| {
            assert!(user_caps(database, b).is_empty(), "a descendant survived in b");
            assert_eq!(user_caps(database, a).len(), 1, "only the root is left in a");
        });
        let undone = *undone.lock().unwrap();
        assert!(undone == 2 || undone == 3, "every removal was undone ({undone})");
        delegator.join().unwrap();
        caps.with(|database| database.audit().unwrap());
    });
}

#[test]
fn overlapping_revokes_each_return_only_when_their_subtree_is_gone_and_undone() {
    model(|| {
        let (mut database, [a, b]) = two_spaces();
        let root = database.create_object(a, ObjectKind::Memory, 0, 4096, Rights::ALL, ANY).unwrap();
        let middle = database.delegate(a, root, 1, Rights::ALL, ANY).unwrap();
        let mut below_middle = Vec::new();
        for _ in 0..3 {
            let slot = database.delegate(b, middle, 0, Rights::ALL, ANY).unwrap();
            below_middle.push(database.capability(a, slot).unwrap().cap);
        }
        let caps = shared(database);
        let undone: Arc<Mutex<BTreeSet<CapId>>> = Arc::new(Mutex::new(BTreeSet::new()));
        let inner = {
            let (caps, undone, below_middle) = (caps.clone(), undone.clone(), below_middle.clone());
            loom::thread::spawn(move || {
                let result = caps.revoke(b, middle, RevokeScope::Descendants, |removed| {
                    undone.lock().unwrap().insert(removed.cap);
                });
                if result == Err(CapError::EmptySlot) {
                    return; // the outer revoke had already removed `middle` itself
                }
                result.unwrap();
                let undone = undone.lock().unwrap();
                assert!(below_middle.iter().all(|cap| undone.contains(cap)), "inner returned early");
                caps.with(|database| assert!(user_caps(database, a).len() <= 1, "a copy below middle survived"));
            })
        };
        caps.revoke(a, root, RevokeScope::WithSelf, |removed| {
            undone.lock().unwrap().insert(removed.cap);
        })
        .unwrap();
        assert!(below_middle.iter().all(|cap| undone.lock().unwrap().contains(cap)), "outer returned early");
        caps.with(|database| {
            assert!(user_caps(database, a).is_empty() && user_caps(database, b).is_empty());
        });
        inner.join().unwrap();
        caps.with(|database| {
            database.audit().unwrap();
            assert_eq!(database.revocations_in_progress(), 0);
        });
    });
}

#[test]
fn a_revoke_racing_an_obtain_and_a_drop_leaves_no_survivor() {
    model(|| {
        let (mut database, [a, b]) = two_spaces();
        let root = database.create_object(a, ObjectKind::Memory, 0, 4096, Rights::ALL, ANY).unwrap();
        let middle = database.derive(a, root, Rights::ALL, crate::Narrowing::Whole, ANY).unwrap();
        database.delegate(a, middle, 1, Rights::ALL, ANY).unwrap();
        database.offer(a, middle, 1).unwrap();
        let caps = shared(database);
        let other = {
            let caps = caps.clone();
            loom::thread::spawn(move || {
                let obtained = caps.with(|database| database.obtain(b, 0, middle, Rights::READ, ANY));
                assert!(matches!(obtained, Ok(_) | Err(CapError::NotOffered) | Err(CapError::Revoked) | Err(CapError::EmptySlot)), "{obtained:?}");
                let dropped = caps.with(|database| database.drop_capability(a, middle));
                assert!(matches!(dropped, Ok(_) | Err(CapError::Revoked) | Err(CapError::EmptySlot)), "{dropped:?}");
            })
        };
        caps.revoke(a, root, RevokeScope::Descendants, |_| {}).unwrap();
        caps.with(|database| assert!(user_caps(database, b).is_empty(), "a descendant survived in b"));
        other.join().unwrap();
        caps.with(|database| database.audit().unwrap());
    });
}
