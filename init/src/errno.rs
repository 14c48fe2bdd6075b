//! Linux errno values: the `linux` crate's, under the name the kernel's
//! modules use.

pub use linux::Errno;
