//! Lamina's synchronization and IPC layer (mC2's "FIFOBBQ, CV and IPC"
//! modules).
//!
//! **Provides** blocking objects that threads share:
//! - [`WaitQueue`]: mC2's sleep queue, a FIFO of parked threads;
//! - [`Condvar`]: a starvation-free FIFO condition variable (Anderson and
//!   Dahlin's condition queue): `signal` wakes exactly the longest waiter;
//! - [`BoundedQueue`]: mC2's FIFO bounded buffer queue, FIFO for items and
//!   for waiting threads, with the fix of the mC2 paper (a remover leaves
//!   the remove queue only once done, then wakes the next);
//! - [`Channel`]: synchronous (rendezvous) IPC of 0 to 4096 bytes, FIFO
//!   among senders and among receivers, copying the payload exactly once;
//! - [`Endpoint`]: seL4-style IPC of any message type between threads'
//!   [`Mailbox`]es — send, call and reply, receive — handing the CPU
//!   straight to a waiting receiver (user-level IPC's fast path);
//! - [`Completions`]: one-shot completion slots a requester waits on and
//!   another thread or an interrupt handler fills (a disk's requests);
//! - [`SleepLock`]: a lock whose holder may sleep (a file tree whose
//!   operations wait for a disk);
//! - [`WordRing`]: a lock-free bounded FIFO of fixed-size messages from
//!   one sender to one receiver (the channel between two kernels of a
//!   multikernel);
//! - [`Generation`] and [`GenerationCache`]: a reader's cache of something
//!   kept under a lock, valid while its generation has not moved (the
//!   user-mode entry's tables).
//!
//! Each refines an executable atomic specification in [`spec`]; host tests
//! compare them step by step, and loom model-checks this very code under
//! `--cfg loom`.
//!
//! **Relies on** the spinlock layer for its internal locks and, through the
//! [`Blocking`] trait, on a way to park and unpark threads: the threads
//! layer in the kernel ([`KernelBlocking`]), std threads on the host
//! (`StdBlocking`, host tests), loom's threads under the model checker
//! (`LoomBlocking`). The same code runs in all three.
//!
//! **Must never** block while holding a spinlock (every wait releases the
//! lock before parking), call a layer above, or panic on anything a caller
//! can pass (an oversized message is [`IpcError::TooLong`]). Its locks sit
//! at [`SYNC_LEVEL`] in the lock order, above the threads layer.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(any(test, loom, feature = "std"))]
extern crate std;

#[macro_use]
mod loom_const;

mod atomics;
mod blocking;
mod bounded_queue;
mod bounded_queue_state;
mod channel;
mod channel_state;
mod completions;
mod condvar;
mod endpoint;
mod generation;
mod ipc_error;
mod message_buffer;
mod sleep_lock;
pub mod spec;
mod wait_queue;
mod wakeups;
mod word_ring;

#[cfg(target_os = "none")]
mod kernel_blocking;
#[cfg(loom)]
mod loom_blocking;
#[cfg(any(test, feature = "std"))]
mod std_blocking;

#[cfg(test)]
mod tests;

pub use blocking::{Blocking, SyncGuard, SyncLock, SYNC_LEVEL};
pub use bounded_queue::BoundedQueue;
pub use channel::Channel;
pub use completions::{AllSlotsTaken, Completions, Ticket};
pub use condvar::Condvar;
pub use endpoint::{Endpoint, EndpointError, Mailbox, Meeting, ReplyTo, Received};
pub use generation::{Generation, GenerationCache};
pub use ipc_error::IpcError;
#[cfg(target_os = "none")]
pub use kernel_blocking::KernelBlocking;
#[cfg(loom)]
pub use loom_blocking::LoomBlocking;
pub use sleep_lock::SleepLock;
pub use word_ring::{RingFull, WordRing};
pub use message_buffer::{MessageBuffer, MAX_MESSAGE_LENGTH};
#[cfg(any(test, feature = "std"))]
pub use std_blocking::StdBlocking;
pub use wait_queue::{Slept, WaitQueue};
