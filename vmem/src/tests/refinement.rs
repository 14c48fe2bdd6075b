//! Random operation sequences on up to three address spaces (forked from
//! each other) and on their specifications; after every step the results
//! and every page's contents and rights must agree, and at the end every
//! frame must be free.

use testkit::Rng;

use super::harness::{user_access, Space, World};
use crate::spec::AddressSpaceSpec;
use crate::{Access, Rights, PAGE_SIZE};

const BASE: u64 = 0x40_0000;
const WINDOW: u64 = 24;

fn page(rng: &mut Rng) -> u64 {
    BASE + rng.below(WINDOW as usize) as u64 * PAGE_SIZE
}

fn rights(rng: &mut Rng) -> Rights {
    [Rights::NONE, Rights::READ, Rights::READ_WRITE, Rights::READ_EXECUTE][rng.below(4)]
}

fn access(rng: &mut Rng) -> Access {
    [Access::Read, Access::Write, Access::Execute][rng.below(3)]
}

fn compare(space: &mut Space<'_>, spec: &AddressSpaceSpec, step: usize) {
    assert_eq!(space.size(), spec.size(), "size after step {step}");
    assert_eq!(space.size(), space.size_by_walk(), "kept size against a walk after step {step}");
    if let Err(problem) = space.check_table_list() {
        panic!("table list after step {step}: {problem}");
    }
    for index in 0..WINDOW {
        let address = BASE + index * PAGE_SIZE;
        let real = space.translate(address).map(|translation| translation.rights);
        let expected = spec.rights(address).filter(|rights| rights.read());
        assert_eq!(real, expected, "rights of {address:#x} after step {step}");
        if let Some((word, rights)) = spec.pages.get(&address) {
            if rights.read() {
                let translation = space.translate(address).expect("mapped");
                assert_eq!(space.memory.read_word(translation.frame, 0), *word, "contents of {address:#x} after step {step}");
            }
        }
    }
}

fn run(seed: u64, steps: usize) {
    let world = World::new();
    let mut rng = Rng::new(seed);
    let mut spaces: Vec<(Space<'_>, AddressSpaceSpec)> = vec![(world.space(), AddressSpaceSpec::default())];
    for step in 0..steps {
        let which = rng.below(spaces.len());
        let (space, spec) = &mut spaces[which];
        match rng.below(11) {
            0 => {
                let (address, word, rights) = (page(&mut rng), rng.next_u64(), rights(&mut rng));
                let expected = spec.map(address, word, rights);
                let frame = world.frame_holding(word);
                let real = space.map(address, frame, rights);
                if real.is_err() {
                    use crate::FrameSource;
                    world.frames.free(frame);
                }
                assert_eq!(real, expected, "map at step {step}");
            }
            1 => {
                let (start, pages, rights) = (page(&mut rng), 1 + rng.below(4) as u64, rights(&mut rng));
                assert_eq!(space.add_demand_zero(start, pages * PAGE_SIZE, rights), spec.add_demand_zero(start, pages * PAGE_SIZE, rights), "region at step {step}");
            }
            2 => {
                let (start, pages) = (page(&mut rng), 1 + rng.below(4) as u64);
                assert_eq!(space.unmap(start, pages * PAGE_SIZE).map(|_| ()), spec.unmap(start, pages * PAGE_SIZE), "unmap at step {step}");
            }
            3 => {
                let (start, pages, rights) = (page(&mut rng), 1 + rng.below(4) as u64, rights(&mut rng));
                assert_eq!(space.protect(start, pages * PAGE_SIZE, rights).map(|_| ()), spec.protect(start, pages * PAGE_SIZE, rights), "protect at step {step}");
            }
            4..=6 => {
                let (address, kind) = (page(&mut rng), access(&mut rng));
                let value = (kind == Access::Write).then(|| rng.next_u64());
                assert_eq!(user_access(space, address, kind, value), spec.access(address, kind, value), "{kind:?} of {address:#x} at step {step}");
            }
            9 => {
                let (from, to, pages) = (page(&mut rng), page(&mut rng), 1 + rng.below(4) as u64);
                let real = space.move_range(from, to, pages * PAGE_SIZE).map(|_| ());
                assert_eq!(real, spec.move_range(from, to, pages * PAGE_SIZE), "move {from:#x} to {to:#x} ({pages} pages) at step {step}");
            }
            10 => {
                let (start, pages) = (page(&mut rng), 1 + rng.below(4) as u64);
                assert_eq!(space.discard(start, pages * PAGE_SIZE).map(|_| ()), spec.discard(start, pages * PAGE_SIZE), "discard at step {step}");
            }
            7 if spaces.len() < 3 => {
                let (space, spec) = &mut spaces[which];
                let (child, _) = space.fork(world.frames.clone()).expect("fork");
                let child_spec = spec.clone();
                spaces.push((child, child_spec));
            }
            8 if spaces.len() > 1 => {
                let (space, _) = spaces.swap_remove(which);
                let _ = space.destroy();
            }
            _ => {}
        }
        for (space, spec) in &mut spaces {
            compare(space, spec, step);
        }
    }
    for (space, _) in spaces {
        let _ = space.destroy();
    }
    assert!(world.all_free(), "frames left after every space was destroyed (seed {seed})");
}

#[test]
fn random_operations_refine_the_specification() {
    for seed in 0..40 {
        run(seed, 400);
    }
}
