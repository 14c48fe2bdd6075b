//! Where user space ends: the lower half of 48-bit, 4-level paging. The
//! one definition every crate uses (the machine layer checks user entry
//! against it, `vmem` maps below it, `linux-abi` places programs below it).
//! Pure, so host tests see the same number.

/// End of the user half of the address space: user addresses are below it.
pub const USER_END: u64 = 0x0000_8000_0000_0000;
