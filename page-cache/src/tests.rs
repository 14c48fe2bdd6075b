//! Host tests: the index against a plain map, the clock's choices, and
//! that every page given comes back exactly once.

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::vec::Vec;

type Cache = PageCache<u32, u64>;

fn pages_of(cache: &Cache, key: u32) -> Vec<(u64, u64)> {
    let mut pages = Vec::new();
    cache.visit(key, 0..u64::MAX, |index, page| pages.push((index, page)));
    pages
}

#[test]
fn a_page_added_is_found_and_a_second_page_at_the_same_place_loses() {
    let mut cache = Cache::new();
    assert_eq!(cache.get(7, 3), None);
    assert_eq!(cache.add(7, 3, 100), Ok(Added::Added));
    assert_eq!(cache.add(7, 3, 101), Ok(Added::AlreadyCached(100)));
    assert_eq!(cache.add(7, 200, 102), Ok(Added::Added));
    assert_eq!(cache.get(7, 3), Some(100));
    assert_eq!(cache.peek(7, 200), Some(102));
    assert_eq!(cache.peek(8, 3), None);
    assert_eq!(cache.resident(), 2);
    let statistics = cache.statistics();
    assert_eq!((statistics.hits, statistics.misses, statistics.added), (1, 1, 2));
    assert_eq!(pages_of(&cache, 7), [(3, 100), (200, 102)]);
    let mut missing = Vec::new();
    cache.visit_missing(7, 1..5, |index| missing.push(index));
    assert_eq!(missing, [1, 2, 4]);
}

#[test]
fn cutting_a_file_short_removes_its_pages_from_that_index_on() {
    let mut cache = Cache::new();
    for index in 0..200 {
        cache.add(1, index, 1000 + index).unwrap();
        cache.add(2, index, 5000 + index).unwrap();
    }
    let mut given = Vec::new();
    cache.remove_from(1, 65, |page| given.push(page));
    assert_eq!(given, (1065..1200).collect::<Vec<_>>());
    assert_eq!(pages_of(&cache, 1).len(), 65);
    assert_eq!(cache.resident(), 265);
    given.clear();
    cache.remove_from(1, 0, |page| given.push(page));
    assert_eq!(given.len(), 65);
    assert_eq!(cache.resident(), 200);
    assert_eq!(cache.remove(2, 7), Some(5007));
    assert_eq!(cache.remove(2, 7), None);
}

#[test]
fn a_held_file_keeps_its_entry_and_removal_says_it_was_held() {
    let mut cache = Cache::new();
    assert_eq!(cache.hold(4), Ok(true));
    assert_eq!(cache.hold(4), Ok(false));
    assert!(cache.is_held(4));
    assert_eq!(cache.files_held(), 1);
    cache.add(4, 0, 40).unwrap();
    cache.remove_from(4, 0, drop);
    assert!(cache.is_held(4), "an emptied held file stays held");
    let mut given = Vec::new();
    cache.add(4, 9, 49).unwrap();
    assert!(cache.remove_file(4, |page| given.push(page)));
    assert_eq!(given, [49]);
    assert!(!cache.is_held(4));
    assert!(!cache.remove_file(4, drop));
}

#[test]
fn unmounting_removes_exactly_the_files_it_picks() {
    let mut cache = Cache::new();
    for key in 0..10 {
        cache.add(key, 0, u64::from(key)).unwrap();
    }
    cache.hold(3).unwrap();
    let mut given = BTreeSet::new();
    let held = cache.remove_files(|key| key % 3 == 0, |page| {
        given.insert(page);
    });
    assert_eq!(held, 1);
    assert_eq!(given, BTreeSet::from([0, 3, 6, 9]));
    assert_eq!(cache.resident(), 6);
    assert_eq!(cache.peek(1, 0), Some(1));
}

#[test]
fn the_clock_gives_used_pages_a_second_chance_and_skips_marked_and_busy_ones() {
    let mut cache = Cache::new();
    for index in 0..8 {
        cache.add(1, index, index).unwrap();
    }
    cache.mark(1, 2..3);
    // Pages just added count as used: the first sweep only clears that.
    let mut taken = Vec::new();
    let count = cache.choose_victims(3, |page| page != 5, |key, index, page| taken.push((key, index, page)));
    assert_eq!(count, 3);
    assert_eq!(taken, [(1, 0, 0), (1, 1, 1), (1, 3, 3)]);
    // Page 4 is used again: the next sweep passes it, takes 6 and 7.
    assert_eq!(cache.get(1, 4), Some(4));
    taken.clear();
    cache.choose_victims(2, |page| page != 5, |_, index, _| taken.push((1, index, 0)));
    assert_eq!(taken.iter().map(|entry| entry.1).collect::<Vec<_>>(), [6, 7]);
    // Only 2 (marked), 4 and 5 (busy) are left; 4 goes once unused.
    taken.clear();
    let count = cache.choose_victims(10, |page| page != 5, |_, index, _| taken.push((1, index, 0)));
    assert_eq!((count, taken.iter().map(|entry| entry.1).collect::<Vec<_>>()), (1, std::vec![4]));
    cache.unmark(1, 2);
    let count = cache.choose_victims(10, |page| page != 5, drop3);
    assert_eq!((count, cache.resident()), (1, 1));
    let mut marked = Vec::new();
    cache.visit_marked(1, |index, _| marked.push(index));
    assert!(marked.is_empty());
}

fn drop3(_: u32, _: u64, _: u64) {}

#[test]
fn the_clock_never_takes_a_page_of_a_held_file() {
    let mut cache = Cache::new();
    cache.add(1, 0, 10).unwrap();
    cache.add(2, 0, 20).unwrap();
    cache.hold(1).unwrap();
    let mut taken = Vec::new();
    assert_eq!(cache.choose_victims(5, |_| true, |key, _, _| taken.push(key)), 1);
    assert_eq!(taken, [2]);
    assert_eq!(cache.choose_victims(5, |_| true, drop3), 0, "only the held file's page is left");
    assert_eq!(cache.peek(1, 0), Some(10));
    let mut held = Vec::new();
    cache.add(3, 4, 34).unwrap();
    cache.visit_all_held(|key, index, page| held.push((key, index, page)));
    assert_eq!(held, [(1, 0, 10)]);
}

#[test]
fn marks_name_their_files() {
    let mut cache = Cache::new();
    cache.add(1, 0, 10).unwrap();
    cache.add(2, 5, 20).unwrap();
    cache.add(2, 6, 21).unwrap();
    cache.mark(2, 6..100);
    let mut files = Vec::new();
    cache.visit_files_with_marks(|key| files.push(key));
    assert_eq!(files, [2]);
    let mut marked = Vec::new();
    cache.visit_marked(2, |index, page| marked.push((index, page)));
    assert_eq!(marked, [(6, 21)]);
}

/// A xorshift generator: the same operations every run.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

#[test]
fn twenty_thousand_random_operations_agree_with_a_plain_map_and_lose_no_page() {
    let mut cache = Cache::new();
    let mut model: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    let mut back: BTreeSet<u64> = BTreeSet::new();
    let mut next_page = 0u64;
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let give_back = |back: &mut BTreeSet<u64>, page: u64| assert!(back.insert(page), "page {page} came back twice");
    for _ in 0..20_000 {
        let key = random.below(6) as u32;
        let index = random.below(300);
        match random.below(10) {
            0..=4 => {
                next_page += 1;
                match cache.add(key, index, next_page).unwrap() {
                    Added::Added => assert!(model.insert((key, index), next_page).is_none()),
                    Added::AlreadyCached(page) => {
                        assert_eq!(model.get(&(key, index)), Some(&page));
                        give_back(&mut back, next_page);
                    }
                }
            }
            5 => {
                let removed = cache.remove(key, index);
                assert_eq!(removed, model.remove(&(key, index)));
                if let Some(page) = removed {
                    give_back(&mut back, page);
                }
            }
            6 => {
                cache.remove_from(key, index, |page| give_back(&mut back, page));
                model.retain(|&(file, at), _| file != key || at < index);
            }
            7 => {
                if random.below(8) == 0 {
                    cache.remove_file(key, |page| give_back(&mut back, page));
                    model.retain(|&(file, _), _| file != key);
                } else {
                    assert_eq!(cache.get(key, index), model.get(&(key, index)).copied());
                }
            }
            8 if random.below(10) == 0 => {
                cache.hold(key).unwrap();
            }
            8 => cache.mark(key, index..index + random.below(4)),
            _ => {
                let wanted = random.below(20) as usize;
                let busy = random.below(7);
                let mut taken = Vec::new();
                let count = cache.choose_victims(wanted, |page| page % 7 != busy, |file, at, page| taken.push((file, at, page)));
                assert!(count <= wanted && count == taken.len());
                for (file, at, page) in taken {
                    assert_ne!(page % 7, busy, "a busy page was taken");
                    assert!(!cache.is_held(file), "a held file's page was taken");
                    assert_eq!(model.remove(&(file, at)), Some(page));
                    give_back(&mut back, page);
                }
            }
        }
        assert_eq!(cache.resident(), model.len());
    }
    for (&(key, index), &page) in &model {
        assert_eq!(cache.peek(key, index), Some(page));
    }
    // Every page ever made is cached or came back, exactly once.
    cache.remove_files(|_| true, |page| give_back(&mut back, page));
    assert_eq!(back.len() as u64, next_page);
    assert_eq!(cache.resident(), 0);
}
