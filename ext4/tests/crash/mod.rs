//! The crash-test tier: workloads run on a disk that records every write
//! and flush; crash states cut from the log are recovered with this crate
//! and checked against what the workload was promised.

#![allow(dead_code)] // each test crate uses a different part

pub mod recording;
pub mod run;
pub mod session;
pub mod workloads;
