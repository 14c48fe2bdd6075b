//! Tier 1: `cargo test` of the workspace's default members on the host.

use super::tally::Tally;
use crate::workspace;

pub fn run_host_tests(tally: &mut Tally) {
    let result = workspace::run_to_completion(workspace::cargo().arg("test"));
    tally.record(
        "host: cargo test",
        result.map_err(|failure| failure.to_string()),
    );
}
