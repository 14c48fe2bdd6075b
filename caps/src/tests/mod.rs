//! Host tests of the capability layer: units, refinement against the spec,
//! scale (100,000-long chains and trees), and std-thread races.

mod fixture;
mod refinement;
mod scale;
mod threads;
mod units;
