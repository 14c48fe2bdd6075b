//! Races on std threads: revokes against delegations out of the subtree
//! being revoked. After every revoke returns, nothing derived from the
//! revoked capability may exist anywhere.

use std::sync::Arc;

use super::fixture::{World, PROCESS_SLOTS};
use crate::{CapError, Placement, RevokeScope, Rights, SharedCaps};
use sync::StdBlocking;

const ANY: Placement = Placement::LowestFrom(PROCESS_SLOTS);

#[test]
fn revokes_racing_delegations_from_the_subtree_leave_no_survivor() {
    for round in 0..20 {
        let mut world = World::new(4, 4096);
        let root = world.memory(0, 4096, Rights::ALL);
        let first = world.database.delegate(world.spaces[0], root, 1, Rights::ALL, ANY).unwrap();
        let spaces = world.spaces.clone();
        let caps: Arc<SharedCaps<StdBlocking>> = Arc::new(SharedCaps::new(0));
        caps.with(|database| *database = world.database);
        let delegators: std::vec::Vec<_> = (1..4)
            .map(|space| {
                let caps = Arc::clone(&caps);
                let spaces = spaces.clone();
                std::thread::spawn(move || {
                    // Each delegator passes the capability it holds on, again and again.
                    let mut holding = if space == 1 { Some(first) } else { None };
                    for hop in 0..200 {
                        let target = 1 + (space + hop) % 3;
                        if let Some(slot) = holding {
                            match caps.with(|database| database.delegate(spaces[space], slot, target as u32, Rights::ALL, ANY)) {
                                Ok(_) | Err(CapError::Revoked) | Err(CapError::EmptySlot) => {}
                                Err(other) => panic!("unexpected {other:?}"),
                            }
                        }
                        holding = caps.with(|database| {
                            database.contents(spaces[space]).map(|(slot, _)| slot).find(|&slot| slot >= PROCESS_SLOTS)
                        });
                    }
                })
            })
            .collect();
        std::thread::yield_now();
        caps.revoke(spaces[0], root, RevokeScope::Descendants, |_| {}).unwrap();
        caps.with(|database| {
            assert_eq!(database.family(spaces[0], root), Ok((0, false)), "round {round}");
            for &space in &spaces[1..] {
                let survivors = database.contents(space).filter(|(slot, _)| *slot >= PROCESS_SLOTS).count();
                assert_eq!(survivors, 0, "round {round}: a descendant survived the revoke");
            }
        });
        for delegator in delegators {
            delegator.join().unwrap();
        }
        caps.with(|database| database.audit().unwrap());
    }
}
