//! The distributed capability protocol (SemperOS §4.3): several kernels,
//! each owning a group of CPUs and the capabilities of its processes,
//! keep one derivation tree across all of them by messages alone.
//!
//! **Provides** [`Kernel`], one kernel's part as a state machine without
//! I/O, locks or threads: system calls ([`Kernel::obtain`],
//! [`Kernel::delegate`], [`Kernel::revoke`], [`Kernel::kill`]) and
//! messages from other kernels ([`Kernel::receive`]) change its state and
//! queue messages for other kernels ([`Kernel::take_outbox`]) and
//! completions for its processes ([`Kernel::take_completions`]). No
//! handler ever waits for a reply: an operation that needs another kernel
//! is recorded and goes on when the reply arrives, so a bounded pool of
//! kernel threads can run any number of them and a cycle of kernels
//! (A→B→C→A) cannot deadlock. The kernel drives it over message channels;
//! the host model-checks it (`tests/distributed_model.rs`).
//!
//! **Relies on** FIFO delivery between each pair of kernels (a stated
//! requirement: the model checker shows that an unordered network breaks
//! the protocol).
//!
//! **Must never** acknowledge a revoke before every descendant on every
//! kernel is gone (an overlapping revoke joins the one in progress and is
//! acknowledged with it); let a delegation commit under a parent that a
//! revoke has marked or removed (two-way handshake); leave, once every
//! message is delivered, a capability marked, half-delegated, or linked to
//! a parent or child that does not link back.

mod audit;
mod channels;
pub mod exercise;
mod kernel;
mod node;
pub mod wire;

pub use audit::{audit, audit_views, KernelView};
pub use channels::{ChannelLinks, Channels, SLOTS};
pub use kernel::{CapView, Completion, Flaws, Kernel, Outcome};
pub use node::{peer_bit, Links, Node, Round};

/// A kernel instance (a group of CPUs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelId(pub u8);

/// A process, named by its kernel and a number there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcessId {
    /// The kernel whose group runs it.
    pub kernel: KernelId,
    /// Its number on that kernel.
    pub number: u32,
}

/// A capability anywhere (SemperOS's DDL key): the kernel that holds it
/// and its number there, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapKey {
    /// The kernel holding the capability.
    pub kernel: KernelId,
    /// Its number on that kernel.
    pub index: u32,
}

/// A system call in progress, named by the caller's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u32);

/// What kernels tell each other (each variant's comment names its fields).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Message {
    /// A process of the sender obtains `parent`; `child` is the key its
    /// copy will have.
    ObtainRequest { op: OpId, parent: CapKey, child: CapKey },
    /// Whether `child` was entered under the parent.
    ObtainReply { op: OpId, parent: CapKey, child: CapKey, granted: bool },
    /// The obtainer died before its copy was made: `parent` forgets `child`.
    ObtainAbandoned { parent: CapKey, child: CapKey },
    /// A process of the sender delegates `parent` to process `to`.
    DelegateRequest { op: OpId, parent: CapKey, to: ProcessId },
    /// The receiver's copy, made but not usable yet (`None`: refused).
    DelegateReply { op: OpId, parent: CapKey, child: Option<CapKey> },
    /// The delegator entered `child` under its parent (`commit`) or did
    /// not (the parent is being revoked or gone): the copy becomes usable
    /// or goes.
    DelegateAck { parent: CapKey, child: CapKey, commit: bool },
    /// The receiver died before the copy became usable: `parent` forgets it.
    DelegateAbandoned { parent: CapKey, child: CapKey },
    /// Revoke `cap` and everything below it, then answer `reply_to` (the
    /// revocation on the sender waiting for it).
    RevokeRequest { cap: CapKey, reply_to: CapKey },
    /// The revocation `root` asked for is complete.
    RevokeReply { root: CapKey },
    /// `child` is gone (revoked on its own): `parent` forgets it.
    Unlink { parent: CapKey, child: CapKey },
}

/// A message with its sender and receiver.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// The sending kernel.
    pub from: KernelId,
    /// The receiving kernel.
    pub to: KernelId,
    /// What it says.
    pub message: Message,
}
