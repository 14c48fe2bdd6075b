//! Tests of the reservations: units and a std-thread stress test on the
//! host, loom models under `--cfg loom`.

#[cfg(not(loom))]
mod support;

#[cfg(not(loom))]
mod threads;
#[cfg(not(loom))]
mod units;
#[cfg(loom)]
mod loom_budget;
