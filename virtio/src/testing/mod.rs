//! Test doubles shared by the modules' tests. Test-only.

mod vec_memory;

pub(crate) use vec_memory::VecMemory;
