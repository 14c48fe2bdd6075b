//! The workloads crash states are cut from: what applications do to a
//! file system and then rely on after a power cut.

use super::session::Session;

/// A named workload.
pub type Workload = (&'static str, fn(&mut Session));

/// Every workload.
pub const WORKLOADS: &[Workload] = &[
    ("small files", small_files),
    ("appends", appends),
    ("large sequential write", large_write),
    ("directory trees", directory_trees),
    ("two processes", two_processes),
];

/// Small files created, written, fsynced, renamed over each other and
/// unlinked.
pub fn small_files(session: &mut Session) {
    session.create_with("/a", 3000);
    session.create_with("/b", 100);
    session.fsync("/a");
    session.write("/b", 50, 2000);
    session.create_with("/c", 5000);
    session.fsync("/c");
    session.rename("/a", "/b");
    session.fsync("/b");
    session.unlink("/c");
    session.create_with("/d", 1500);
    session.sync();
    session.rename("/d", "/e");
    session.append("/e", 3000);
    session.fsync("/e");
    session.unlink("/b");
    session.create("/f");
    session.fsync("/f");
}

/// A log appended to and fsynced after most appends.
pub fn appends(session: &mut Session) {
    session.create("/log");
    for round in 0..8 {
        session.append("/log", 700 + 300 * (round % 3));
        if round % 3 != 2 {
            session.fsync("/log");
        }
    }
    session.fsync("/log");
}

/// One file written sequentially in large pieces, then partly rewritten.
pub fn large_write(session: &mut Session) {
    session.create("/big");
    for _ in 0..12 {
        session.append("/big", 24 * 1024);
    }
    session.fsync("/big");
    session.write("/big", 40_000, 20_000);
    session.fsync("/big");
}

/// Directory trees made mkdir -p style, filled, renamed and taken down.
pub fn directory_trees(session: &mut Session) {
    session.mkdir_all("/top/one/two/three");
    session.create_with("/top/one/two/three/leaf", 2000);
    session.fsync("/top/one/two/three/leaf");
    session.mkdir_all("/top/other/inner");
    session.create_with("/top/other/inner/file", 1200);
    session.sync();
    session.rename("/top/other", "/top/moved");
    session.fsync("/top/moved/inner/file");
    session.unlink("/top/moved/inner/file");
    session.rmdir("/top/moved/inner");
    session.rmdir("/top/moved");
    session.mkdir_all("/top/one/two/sibling");
    session.sync();
    session.unlink("/top/one/two/three/leaf");
    session.rmdir("/top/one/two/three");
    session.fsync("/top/one/two/sibling");
}

/// Two processes interleaved: one appends to its log and fsyncs, the
/// other replaces its current file atomically (write a temporary, fsync
/// it, rename it over) and never fsyncs its directory.
pub fn two_processes(session: &mut Session) {
    session.mkdir("/pa");
    session.mkdir("/pb");
    session.create_with("/pb/current", 900);
    session.create("/pa/log");
    session.sync();
    for round in 0..5 {
        session.append("/pa/log", 500 + 200 * round);
        session.create_with("/pb/next", 1000 + 700 * round);
        session.fsync("/pa/log");
        session.fsync("/pb/next");
        session.rename("/pb/next", "/pb/current");
        if round % 2 == 1 {
            session.append("/pb/current", 300);
        }
    }
    session.fsync("/pa/log");
}

/// Enough small fsynced transactions to fill the 1024-block log and wrap
/// around it (forced checkpoints included).
pub fn many_commits(session: &mut Session) {
    session.mkdir("/many");
    for index in 0..130 {
        session.mkdir(&format!("/many/d{index}"));
        if index % 10 == 0 {
            session.create_with(&format!("/many/d{index}/f"), 1500);
        }
        session.fsync(&format!("/many/d{index}"));
    }
}
