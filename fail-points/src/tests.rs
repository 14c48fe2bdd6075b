//! The fail points' rules on one thread (the races: `loom_tests`).

use std::vec::Vec;

use super::*;

const A: [u64; 3] = [0x1000, 0x2000, 0x3000];
const B: [u64; 3] = [0x1000, 0x2000, 0x3004];

#[test]
fn off_fails_nothing_and_records_nothing() {
    let points = FailPoints::<8>::new();
    assert!(points.is_off());
    assert!(!points.should_fail(Site::Frame, &A));
    assert_eq!(points.paths().count(), 0);
}

#[test]
fn recording_keeps_each_distinct_path_once_with_its_hits() {
    let points = FailPoints::<8>::new();
    points.record();
    for _ in 0..3 {
        assert!(!points.should_fail(Site::Frame, &A));
    }
    assert!(!points.should_fail(Site::Frame, &B));
    assert!(!points.should_fail(Site::Heap, &A));
    let mut paths: Vec<Path> = points.paths().collect();
    paths.sort_by_key(|path| path.hits);
    assert_eq!(paths.len(), 3);
    assert_eq!(paths[2].hits, 3);
    assert_eq!(paths[2].hash, path_hash(Site::Frame, &A));
    assert_eq!(&paths[2].callers[..3], &A);
    assert_eq!(paths[2].callers[3], 0);
    // A new recording starts empty.
    points.record();
    assert_eq!(points.paths().count(), 0);
}

#[test]
fn a_full_table_counts_what_it_could_not_keep() {
    let points = FailPoints::<2>::new();
    points.record();
    for caller in 0..5u64 {
        points.should_fail(Site::Frame, &[caller]);
    }
    assert_eq!(points.paths().count(), 2);
    assert_eq!(points.overflow(), 3);
}

#[test]
fn an_armed_path_fails_exactly_its_skipth_allocation_then_turns_off() {
    let points = FailPoints::<8>::new();
    points.arm(path_hash(Site::Frame, &A), 2);
    let answers: Vec<bool> = (0..5).map(|_| points.should_fail(Site::Frame, &A)).collect();
    assert_eq!(answers, [false, false, true, false, false]);
    assert_eq!(points.fired(), 1);
    assert!(points.is_off());
}

#[test]
fn other_paths_and_sites_never_fail_while_armed() {
    let points = FailPoints::<8>::new();
    points.arm(path_hash(Site::Frame, &A), 0);
    assert!(!points.should_fail(Site::Frame, &B));
    assert!(!points.should_fail(Site::Heap, &A));
    assert_eq!(points.fired(), 0);
    assert!(points.should_fail(Site::Frame, &A));
}

#[test]
fn hashes_tell_sites_and_callers_apart_and_are_never_zero() {
    assert_ne!(path_hash(Site::Frame, &A), path_hash(Site::Frame, &B));
    assert_ne!(path_hash(Site::Frame, &A), path_hash(Site::Heap, &A));
    assert_ne!(path_hash(Site::Frame, &[]), 0);
}
