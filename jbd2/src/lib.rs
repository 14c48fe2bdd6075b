//! The jbd2 journal (skeleton: being written).
#![no_std]
#![forbid(unsafe_code)]
