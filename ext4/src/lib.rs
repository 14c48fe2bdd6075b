//! The ext4 on-disk format (skeleton: being written).
#![no_std]
#![forbid(unsafe_code)]
