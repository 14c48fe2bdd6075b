//! Executable atomic specifications of this layer's objects.
//!
//! Each spec is plain data (queues, lists) whose operations happen in one
//! step, with blocking made explicit: an operation that would block leaves
//! its thread in a queue of the spec, and a later step that unblocks it
//! reports its completion. Threads are named by numbers. The refinement
//! tests drive an implementation and its spec with the same random steps
//! and compare, after each step, which operations completed with which
//! results.

mod bounded_queue;
mod channel;
mod condvar;
mod endpoint;

pub use bounded_queue::{BoundedQueueSpec, QueueCompletion};
pub use channel::{ChannelSpec, Delivery};
pub use condvar::{CondvarSpec, WaitQueueSpec};
pub use endpoint::{EndpointEvent, EndpointSpec};

/// A thread's name in a spec.
pub type ThreadNumber = usize;
