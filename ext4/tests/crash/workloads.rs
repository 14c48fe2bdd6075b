//! The workloads crash states are cut from: what applications do to a
//! file system and then rely on after a power cut.

use crash_check::plan;

use super::session::Session;

/// A named workload.
pub type Workload = (&'static str, fn(&mut Session));

/// Every workload: the plans the kernel crash tier runs too
/// (`crash_check::plan`), here on the crate, one step after another.
pub const WORKLOADS: &[Workload] = &[
    ("small files", |session| session.run_plan(&plan::small_files())),
    ("appends", |session| session.run_plan(&plan::appends())),
    ("large sequential write", |session| session.run_plan(&plan::large_write())),
    ("directory trees", |session| session.run_plan(&plan::directory_trees())),
    ("two processes", |session| session.run_plan(&plan::two_processes())),
];

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
