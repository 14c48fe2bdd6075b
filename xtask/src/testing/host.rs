//! Tier 1 and 2 on the host: `cargo test` of the workspace's default
//! members and of the VMM (`user/vmm`, a workspace of its own), then loom model checking of every crate with shared objects.

use super::tally::Tally;
use crate::workspace;

/// Crates whose shared objects have loom models (run under `--cfg loom`).
const LOOM_CRATES: &[&str] = &["machine", "caps", "spinlock", "sched", "sync", "frames", "reservations", "fail-points", "containers", "vmem", "linux-abi", "page-cache"];

pub fn run_host_tests(tally: &mut Tally) {
    let result = workspace::run_to_completion(workspace::cargo().args(["test", "--no-fail-fast"]));
    tally.record(
        "host: cargo test",
        result.map_err(|failure| failure.to_string()),
    );
    // The VMM (its own workspace, user/vmm): its device models' unit tests.
    let vmm = workspace::run_to_completion(workspace::cargo().args([
        "test",
        "--manifest-path",
        "user/vmm/Cargo.toml",
        "--target",
        "x86_64-unknown-linux-gnu",
        "--target-dir",
        "target/vmm-host-tests",
    ]));
    tally.record("host: the VMM's device models", vmm.map_err(|failure| failure.to_string()));
    check_doc_links(tally);
}

/// The crates that build only on the host (std): documented for it.
const HOST_ONLY: [&str; 5] = ["xtask", "testkit", "crash-check", "parser-fuzz", "scale-sim"];

/// Every crate's documentation builds with no broken intra-doc link (the
/// kernel crates for the kernel target, whose hardware modules exist only
/// there; the host-only crates for the host).
fn check_doc_links(tally: &mut Tally) {
    let mut kernel_side = vec!["doc", "--no-deps", "--keep-going", "--target", crate::kernel_build::KERNEL_TARGET, "--workspace"];
    let mut host_side = vec!["doc", "--no-deps", "--keep-going"];
    for name in HOST_ONLY {
        kernel_side.extend(["--exclude", name]);
        host_side.extend(["--package", name]);
    }
    let result = [&kernel_side[..], &host_side[..]].iter().try_for_each(|arguments| {
        workspace::run_to_completion(workspace::cargo().args(*arguments).env("RUSTDOCFLAGS", "-D rustdoc::broken_intra_doc_links"))
    });
    tally.record("host: doc links resolve", result.map_err(|failure| failure.to_string()));
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
