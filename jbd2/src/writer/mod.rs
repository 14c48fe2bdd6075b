//! The writer: transactions into the log, checkpoints out of it.

mod checkpoint_list;
pub mod journal;
mod log_writer;
pub mod transaction;
