//! Printing benchmark results and reading the clock they are measured in.
//!
//! Under `-icount shift=0,sleep=off` QEMU advances virtual time by exactly
//! one nanosecond per guest instruction, so the calibrated TSC read as
//! nanoseconds *is* an instruction count there; without icount it is wall
//! time of the virtual machine. xtask decides which mode it boots and names
//! the unit accordingly.

use machine::timer;

/// How the benchmark image was booted (from `kbench=` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMode {
    /// `-icount shift=0`: the clock counts guest instructions.
    Instructions,
    /// Multi-threaded TCG: the clock is wall time.
    Wall,
}

impl ClockMode {
    pub fn unit(self) -> &'static str {
        match self {
            ClockMode::Instructions => "instructions",
            ClockMode::Wall => "ns",
        }
    }
}

/// The benchmark clock (instructions or nanoseconds, see the module comment).
pub fn now() -> u64 {
    timer::uptime_nanoseconds()
}

/// Prints one record for xtask; its median (`None` without samples).
pub fn report(group: &str, name: &str, unit: &str, samples: &mut [f64]) -> Option<f64> {
    samples.sort_by(f64::total_cmp);
    let median = samples.get(samples.len() / 2).copied()?;
    let low = samples[0];
    let high = samples[samples.len() - 1];
    let spread = if median > 0.0 { (high - low) / median } else { 0.0 };
    machine::println!(
        "kbench: {{\"group\": \"{group}\", \"name\": \"{name}\", \"unit\": \"{unit}\", \"value\": {median:.2}, \"runs\": {}, \"spread\": {spread:.4}}}",
        samples.len()
    );
    Some(median)
}
