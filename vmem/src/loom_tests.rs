//! loom models of the owner table, the one object of this layer that every
//! CPU touches at once: under every interleaving exactly one leaver is
//! told to free, and a join by a current owner never loses a count.

use loom::sync::Arc;
use loom::thread;

use crate::{LeaveOutcome, OwnerTable};

const FRAME: u64 = 0x1000;

fn table_with_owners(owners: u32) -> Arc<OwnerTable> {
    let table = OwnerTable::new(FRAME, 1).expect("table");
    for _ in 0..owners {
        table.join(FRAME).expect("join");
    }
    Arc::new(table)
}

#[test]
fn two_last_owners_leaving_at_once_free_exactly_once() {
    loom::model(|| {
        let table = table_with_owners(2);
        let other = table.clone();
        let leaver = thread::spawn(move || other.leave(FRAME));
        let mine = table.leave(FRAME);
        let theirs = leaver.join().expect("leaver");
        let lasts = [mine, theirs].iter().filter(|outcome| **outcome == LeaveOutcome::Last).count();
        assert_eq!(lasts, 1);
        assert_eq!(table.owners(FRAME), 0);
    });
}

#[test]
fn a_join_racing_a_leave_keeps_the_frame_alive() {
    loom::model(|| {
        // Owners A and B; A forks (joins for its child) while B leaves.
        let table = table_with_owners(2);
        let other = table.clone();
        let leaver = thread::spawn(move || other.leave(FRAME));
        table.join(FRAME).expect("join");
        assert_eq!(leaver.join().expect("leaver"), LeaveOutcome::StillShared);
        assert_eq!(table.owners(FRAME), 2);
        assert_eq!(table.leave(FRAME), LeaveOutcome::StillShared);
        assert_eq!(table.leave(FRAME), LeaveOutcome::Last);
    });
}

#[test]
fn three_owners_leaving_free_once_and_never_underflow() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let table = table_with_owners(2);
        let (first, second) = (table.clone(), table.clone());
        let one = thread::spawn(move || first.leave(FRAME));
        let two = thread::spawn(move || second.leave(FRAME));
        let three = table.leave(FRAME);
        let outcomes = [one.join().expect("one"), two.join().expect("two"), three];
        assert_eq!(outcomes.iter().filter(|outcome| **outcome == LeaveOutcome::Last).count(), 1);
        assert_eq!(outcomes.iter().filter(|outcome| **outcome == LeaveOutcome::NotOwned).count(), 1);
        assert_eq!(table.owners(FRAME), 0);
    });
}

/// The owed-flush count: a space that sees every flush paid also sees
/// everything the payer did before paying (the flush carried out), under
/// every interleaving; and two flushes paid at once from two CPUs leave the
/// count at zero, never below.
#[test]
fn a_paid_flush_is_seen_only_after_what_came_before_it() {
    use crate::cpu_set::{FlushesOwed, TlbFlush};
    use crate::sync::{AtomicU64, Ordering};
    loom::model(|| {
        let owed = Arc::new(FlushesOwed::default());
        let carried_out = Arc::new(AtomicU64::new(0));
        let mut first = TlbFlush::default();
        first.pages = 1;
        let mut second = TlbFlush::default();
        second.everything = true;
        let (first, second) = (first.owed_to(&owed), second.owed_to(&owed));
        assert!(!owed.all_paid());
        let (mark_one, mark_two) = (carried_out.clone(), carried_out.clone());
        let one = thread::spawn(move || {
            mark_one.fetch_add(1, Ordering::Relaxed);
            drop(first);
        });
        let two = thread::spawn(move || {
            mark_two.fetch_add(1, Ordering::Relaxed);
            drop(second);
        });
        if owed.all_paid() {
            assert_eq!(carried_out.load(Ordering::Relaxed), 2, "paid before carried out");
        }
        one.join().expect("one");
        two.join().expect("two");
        assert!(owed.all_paid());
    });
}
