//! The writer: transactions into the log, checkpoints out of it.

pub mod journal;
pub mod transaction;
