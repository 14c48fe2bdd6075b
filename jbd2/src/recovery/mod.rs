//! Recovery: what mount does with a journal that was not closed cleanly.
//! Three passes over the log (scan, revoke, replay) as the kernel's
//! `fs/jbd2/recovery.c` runs them, then the superblock reset.

pub mod recover;
mod replay;
mod revoke_pass;
mod revoke_table;
mod scan;
mod sequence;
mod walker;
