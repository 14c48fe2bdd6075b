//! Host tests: targeted cases (copy-on-write, owner sets, W^X, bad input,
//! fork rollback at every out-of-memory point) and random refinement
//! against `spec::AddressSpaceSpec`.

mod cases;
mod harness;
mod refinement;
