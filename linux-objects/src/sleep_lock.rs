//! The kernel's sleep lock: `sync::SleepLock` (loom-checked there) with
//! the threads layer's parking, for data whose operations wait for a
//! device (the file tree with a disk mounted in it, a file's offset while
//! the disk is read). See `sync/src/sleep_lock.rs` for the protocol and
//! the lock order.

/// Data behind a lock whose holder may sleep.
pub type SleepLock<T> = sync::SleepLock<T, sync::KernelBlocking>;
