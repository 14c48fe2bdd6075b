//! Tier 1 and 2 on the host: `cargo test` of the workspace's default
//! members, then loom model checking of every crate with shared objects.

use super::tally::Tally;
use crate::workspace;

/// Crates whose shared objects have loom models (run under `--cfg loom`).
const LOOM_CRATES: &[&str] = &["caps", "spinlock", "sched", "sync", "frames", "reservations", "containers", "vmem"];

pub fn run_host_tests(tally: &mut Tally) {
    let result = workspace::run_to_completion(workspace::cargo().args(["test", "--no-fail-fast"]));
    tally.record(
        "host: cargo test",
        result.map_err(|failure| failure.to_string()),
    );
}

/// Loom runs in its own target directory so that the `--cfg loom` build
/// does not evict the normal one.
pub fn run_loom_checks(tally: &mut Tally) {
    for crate_name in LOOM_CRATES {
        let mut command = workspace::cargo();
        command
            .args(["test", "--release", "--lib", "--package", crate_name])
            .env("RUSTFLAGS", "--cfg loom")
            .env(
                "CARGO_TARGET_DIR",
                workspace::target_directory().join("loom"),
            );
        let result = workspace::run_to_completion(&mut command);
        tally.record(
            &format!("loom: {crate_name}"),
            result.map_err(|failure| failure.to_string()),
        );
    }
}
