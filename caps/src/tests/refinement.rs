//! Refinement: random operation sequences applied to the database and to
//! `CapsSpec`; every result and, after every step, every space's contents
//! and the set of removed capabilities must agree, and the database must
//! pass its audit.

use super::fixture::revoke_to_the_end;
use std::collections::BTreeSet;
use std::vec::Vec;

use testkit::Rng;

use crate::spec::{CapsSpec, SpecRemoved};
use crate::{
    CapDatabase, LastReference, Narrowing, ObjectKind, Placement, Removed, RemovedBatch,
    RevokeScope, Rights, Slot, SpaceId, TeardownStatus, UseSite,
};

const SLOT_LIMIT: Slot = 12;

struct Pair {
    database: CapDatabase,
    spec: CapsSpec,
    /// Database space of each spec space number.
    spaces: Vec<SpaceId>,
}

impl Pair {
    fn new() -> Self {
        let mut pair = Self { database: CapDatabase::new(3), spec: CapsSpec::new(), spaces: Vec::new() };
        for _ in 0..3 {
            pair.create_space();
        }
        pair
    }

    fn create_space(&mut self) {
        let number = self.spec.create_space(SLOT_LIMIT);
        assert_eq!(number as usize, self.spaces.len());
        self.spaces.push(self.database.create_space(SLOT_LIMIT).unwrap());
    }

    fn number_of(&self, space: SpaceId) -> u32 {
        self.spaces.iter().position(|&known| known == space).expect("a known space") as u32
    }

    fn removed_as_spec(&self, removed: &[Removed]) -> (Vec<(u32, Slot, u64)>, BTreeSet<u64>) {
        let mut places: Vec<_> =
            removed.iter().map(|entry| (self.number_of(entry.owner), entry.slot, entry.object.key.object)).collect();
        places.sort();
        let last = removed
            .iter()
            .filter(|entry| entry.last_reference == LastReference::Yes)
            .map(|entry| entry.object.key.object)
            .collect();
        (places, last)
    }

    fn check_contents(&self, step: usize) {
        self.database.audit().unwrap_or_else(|broken| panic!("step {step}: audit: {broken}"));
        for (number, &space) in self.spaces.iter().enumerate() {
            let seen: Vec<_> = self
                .database
                .contents(space)
                .map(|(slot, cap)| (slot, cap.object.key.object, cap.rights, cap.view, cap.use_site))
                .collect();
            assert_eq!(seen, self.spec.contents(number as u32), "step {step}: space {number}");
        }
    }
}

fn spec_removed(removed: &[SpecRemoved]) -> (Vec<(u32, Slot, u64)>, BTreeSet<u64>) {
    let mut places: Vec<_> = removed.iter().map(|entry| (entry.space, entry.slot, entry.object)).collect();
    places.sort();
    let last = removed.iter().filter(|entry| entry.last_reference).map(|entry| entry.object).collect();
    (places, last)
}

fn destroy_to_the_end(database: &mut CapDatabase, space: SpaceId) -> Result<Vec<Removed>, crate::CapError> {
    let mut removed = Vec::new();
    loop {
        let mut batch = RemovedBatch::new();
        let status = database.destroy_space_step(space, &mut batch)?;
        removed.extend(batch.iter().copied());
        if status == TeardownStatus::Done {
            return Ok(removed);
        }
    }
}

fn random_rights(rng: &mut Rng) -> Rights {
    if rng.below(3) == 0 {
        return Rights::ALL;
    }
    Rights::from_bits(rng.below(32) as u64).unwrap()
}

fn random_placement(rng: &mut Rng) -> Placement {
    match rng.below(3) {
        0 => Placement::At(rng.below(SLOT_LIMIT as usize + 2) as Slot),
        _ => Placement::LowestFrom(rng.below(6) as Slot),
    }
}

fn random_narrowing(rng: &mut Rng) -> Narrowing {
    match rng.below(3) {
        0 => Narrowing::Bytes { offset: rng.below(5000) as u64, length: rng.below(5000) as u64 },
        _ => Narrowing::Whole,
    }
}

fn step(pair: &mut Pair, rng: &mut Rng, step: usize) {
    let number = rng.below(pair.spaces.len()) as u32;
    let space = pair.spaces[number as usize];
    let slot = rng.below(SLOT_LIMIT as usize + 1) as Slot;
    let other_slot = rng.below(SLOT_LIMIT as usize) as Slot;
    let rights = random_rights(rng);
    let placement = random_placement(rng);
    let (database, spec) = (&mut pair.database, &mut pair.spec);
    match rng.below(20) {
        0..=2 => {
            let size = 1 + rng.below(8192) as u64;
            let got = database.create_object(space, ObjectKind::Memory, 0, size, rights, placement);
            assert_eq!(got, spec.create_object(number, ObjectKind::Memory, 0, size, rights, placement), "step {step}");
        }
        3..=4 => {
            let named = rng.below(pair.spaces.len());
            let handle = pair.spaces[named].to_bits();
            let got = database.create_object(space, ObjectKind::Process, handle, 0, rights, placement);
            let expected = spec.create_object(number, ObjectKind::Process, named as u64, 0, rights, placement);
            assert_eq!(got, expected, "step {step}");
        }
        5..=6 => {
            let narrowing = random_narrowing(rng);
            let got = database.derive(space, slot, rights, narrowing, placement);
            assert_eq!(got, spec.derive(number, slot, rights, narrowing, placement), "step {step}");
        }
        7..=8 => {
            let got = database.delegate(space, slot, other_slot, rights, placement);
            assert_eq!(got, spec.delegate(number, slot, other_slot, rights, placement), "step {step}");
        }
        9 => {
            let target = rng.below(pair.spaces.len()) as u32;
            let got = database.grant(space, slot, pair.spaces[target as usize], rights, placement);
            assert_eq!(got, spec.grant(number, slot, target, rights, placement), "step {step}");
        }
        10 => assert_eq!(database.offer(space, slot, other_slot), spec.offer(number, slot, other_slot), "step {step}"),
        11..=12 => {
            let got = database.obtain(space, other_slot, slot, rights, placement);
            assert_eq!(got, spec.obtain(number, other_slot, slot, rights, placement), "step {step}");
        }
        13..=14 => {
            let got = database.drop_capability(space, slot).map(|removed| [removed]);
            let expected = spec.drop_capability(number, slot).map(|removed| [removed]);
            assert_eq!(got.map(|removed| pair.removed_as_spec(&removed)), expected.map(|removed| spec_removed(&removed)), "step {step}");
        }
        15..=17 => {
            let scope = if rng.below(2) == 0 { RevokeScope::WithSelf } else { RevokeScope::Descendants };
            let got = revoke_to_the_end(database, space, slot, scope);
            let expected = spec.revoke(number, slot, scope);
            assert_eq!(got.map(|removed| pair.removed_as_spec(&removed)), expected.map(|removed| spec_removed(&removed)), "step {step}");
        }
        18 => {
            let site = UseSite { place: rng.below(4) as u64, detail: rng.below(4) as u64 };
            assert_eq!(database.set_use_site(space, slot, site), spec.set_use_site(number, slot, site), "step {step}");
        }
        _ => {
            if rng.below(4) == 0 {
                let got = destroy_to_the_end(database, space);
                let expected = spec.destroy_space(number);
                assert_eq!(got.map(|removed| pair.removed_as_spec(&removed)), expected.map(|removed| spec_removed(&removed)), "step {step}");
                pair.create_space();
            }
        }
    }
    pair.check_contents(step);
}

#[test]
fn the_database_refines_the_spec_on_random_sequences() {
    for seed in 0..60 {
        let mut rng = Rng::new(seed);
        let mut pair = Pair::new();
        for index in 0..600 {
            step(&mut pair, &mut rng, index);
        }
    }
}

#[test]
fn rights_never_grow_along_any_derivation_in_the_spec() {
    let mut rng = Rng::new(99);
    let mut pair = Pair::new();
    for index in 0..2000 {
        step(&mut pair, &mut rng, index);
        let caps: std::collections::BTreeMap<u64, crate::spec::SpecCap> =
            pair.spec.caps().map(|(id, cap)| (*id, *cap)).collect();
        for cap in caps.values() {
            if let Some(parent) = cap.parent {
                assert!(caps[&parent].rights.contains(cap.rights), "step {index}");
            }
        }
    }
}
