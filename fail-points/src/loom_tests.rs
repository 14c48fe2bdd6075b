//! Loom models of the fail points: every interleaving of the real code.

use loom::sync::Arc;
use loom::thread;

use super::*;

const PATH: [u64; 2] = [0x10, 0x20];

/// Two CPUs allocate on the armed path at once: exactly one fails.
#[test]
fn racing_allocations_on_the_armed_path_fail_exactly_once() {
    loom::model(|| {
        let points = Arc::new(FailPoints::<2>::new());
        points.arm(path_hash(Site::Frame, &PATH), 0);
        let other = points.clone();
        let racer = thread::spawn(move || other.should_fail(Site::Frame, &PATH));
        let mine = points.should_fail(Site::Frame, &PATH);
        let theirs = racer.join().unwrap();
        assert!(mine != theirs, "both or neither failed: {mine} {theirs}");
        assert_eq!(points.fired(), 1);
    });
}

/// Two CPUs record the same new path at once: one slot, two hits.
#[test]
fn racing_recordings_of_one_path_share_its_slot() {
    loom::model(|| {
        let points = Arc::new(FailPoints::<2>::new());
        points.record();
        let other = points.clone();
        let racer = thread::spawn(move || other.should_fail(Site::Frame, &PATH));
        points.should_fail(Site::Frame, &PATH);
        racer.join().unwrap();
        let paths: std::vec::Vec<Path> = points.paths().collect();
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0].hits, 2);
    });
}
