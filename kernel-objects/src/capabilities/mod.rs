//! Capabilities in the kernel: this kernel's one capability database (the
//! `caps` layer behind its lock), the processes holding capability spaces,
//! the memory objects behind memory capabilities, the IPC endpoints
//! behind endpoint capabilities, undoing a removed
//! capability's effects, and the native system calls.
//!
//! **Lock order** (higher levels are taken first): the database at
//! [`caps::CAPS_LEVEL`] (6); below it, never nested with each other, the
//! process registry, each address space, the memory-object table and
//! the endpoint table (5);
//! then containers (3) and frames (2, 1) for page tables and memory.
//! Shootdowns happen with none of these held.


mod effects;
pub mod endpoints;
pub mod memory_objects;
mod native_calls;
mod processes;
mod user_memory;

use caps::SharedCaps;
use spinlock::Level;
use sync::KernelBlocking;

pub use effects::{on_last_file_reference, undo};
pub use memory_objects::count as memory_object_count;
pub use endpoints::IpcThread;
pub use native_calls::{handle_native_call, numbers, try_fast_ipc};
pub use native_calls::INFO_BYTES;
pub use processes::{EntryCache, NativeProcess, SELF_SLOT};
pub use user_memory::UserMemory;

/// The process registry's lock level.
pub(crate) const PROCESS_TABLE_LEVEL: Level = Level::new(5);
/// Each process's address-space lock level.
pub(crate) const ADDRESS_SPACE_LEVEL: Level = Level::new(5);
/// The endpoint table's lock level.
pub(crate) const ENDPOINTS_LEVEL: Level = Level::new(5);
/// The memory-object table's lock level.
pub(crate) const MEMORY_OBJECTS_LEVEL: Level = Level::new(5);

static CAPS: SharedCaps<KernelBlocking> = SharedCaps::new(0);

/// This kernel's capability database.
pub fn caps() -> &'static SharedCaps<KernelBlocking> {
    &CAPS
}
