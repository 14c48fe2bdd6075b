//! `cargo xtask simulate [--figure NAME[,NAME…]|all]`: the 576-core
//! simulation of the multikernel (issue 21). Runs `scale-sim`'s `simulate`
//! program, built in release (the figures run hundreds of simulations),
//! which rewrites the plots in `docs/scale/` and the tables of
//! `docs/scale.md` from the committed cost model and traces.
//!
//! Must not change anything but those; it boots nothing.

use crate::arguments::Arguments;
use crate::failure::Outcome;
use crate::workspace;

/// Runs the simulator with the command line's own arguments (it checks
/// them and says what it takes).
pub fn simulate_command(mut arguments: Arguments) -> Outcome {
    let mut command = workspace::cargo();
    command.args(["run", "--release", "--quiet", "-p", "scale-sim", "--bin", "simulate", "--"]).args(arguments.rest());
    workspace::run_to_completion(&mut command)
}
