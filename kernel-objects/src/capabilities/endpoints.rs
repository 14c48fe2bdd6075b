//! IPC endpoints behind endpoint capabilities, and the native calls that
//! use them (`send`, `call`, `recv`, `reply`, `reply_recv`): `sync`'s
//! [`Endpoint`] carrying [`UserMessage`]s between user threads.
//!
//! A message is four registers, up to [`MAX_BYTES`] bytes copied from the
//! sender's registered IPC buffer into the receiver's, and at most one
//! capability, granted from the sender's space into the receiver's at
//! the moment the two meet (the sender's endpoint capability must carry
//! the grant right). Whatever side arrives second does the grant, outside
//! every IPC lock.
//!
//! Each thread keeps an [`IpcThread`]: its mailbox (made on the thread's
//! first IPC, so that it wakes that thread), the call it holds unanswered
//! (answered by its next `reply` or `reply_recv`; dropped unanswered when
//! it receives with plain `recv` or exits, failing that caller with
//! `ECONNRESET`), and its IPC buffer. Endpoints close when their last
//! capability goes ([`release`]): everyone waiting fails with `EPIPE`.
//!
//! Must never trust an argument (a bad slot, right, length or buffer is an
//! errno) and never hold a lock while blocking.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use caps::{CapError, ObjectKind, Placement, Rights, Slot, SpaceId};
use spinlock::kernel::KernelTicketLock;
use sync::{Endpoint, EndpointError, GenerationCache, KernelBlocking, Mailbox, Meeting, ReplyTo};

use super::processes::NativeProcess;
use super::{caps, ENDPOINTS_LEVEL};
use linux_abi::Errno;

/// The most bytes one message carries besides its registers.
pub const MAX_BYTES: usize = 4096;

/// Bits of a message's `info` word (argument `r9` going in, `rax` coming
/// back): the byte count, then flags, then a capability slot.
pub mod info {
    /// Bits 0..=12: bytes in the IPC buffer.
    pub const LENGTH_MASK: u64 = 0x1fff;
    /// A capability goes with the message (its slot in bits 32..=63); on
    /// receipt: one came, in the slot given in bits 32..=63.
    pub const CAPABILITY: u64 = 1 << 16;
    /// On receipt: the sender's capability could not be granted (a bad
    /// slot, or no free slot here); the message came without it.
    pub const CAPABILITY_FAILED: u64 = 1 << 17;
    /// On receipt: the receiver's buffer was shorter than the message's
    /// bytes, which were cut to fit.
    pub const TRUNCATED: u64 = 1 << 18;
    /// On receipt: the message came by `call`; answer it with `reply` or
    /// `reply_recv`.
    pub const CALL: u64 = 1 << 19;
    /// Where a capability slot sits.
    pub const SLOT_SHIFT: u32 = 32;
}

/// What a capability in a message has become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transfer {
    None,
    /// Sent from this slot of the sender's space.
    From(Slot),
    /// Granted into this slot of the receiver's space.
    Granted(Slot),
    Failed,
}

/// One message between user threads (a register-only one allocates
/// nothing: its byte vector is empty).
pub struct UserMessage {
    words: [u64; 4],
    bytes: Vec<u8>,
    capability: Transfer,
}

/// The kernel's endpoints.
type KernelEndpoint = Endpoint<UserMessage, KernelBlocking>;

static ENDPOINTS: KernelTicketLock<BTreeMap<u64, Arc<KernelEndpoint>>> = KernelTicketLock::new(ENDPOINTS_LEVEL, BTreeMap::new());
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// A thread's IPC state (see the module comment).
#[derive(Default)]
pub struct IpcThread {
    mailbox: Option<Arc<Mailbox<UserMessage, KernelBlocking>>>,
    holding: Option<ReplyTo<UserMessage, KernelBlocking>>,
    /// The registered IPC buffer: address and length.
    buffer: (u64, usize),
    /// The last endpoint capability used, by slot: kept while no
    /// capability anywhere has been taken out of use since (as
    /// `linux_objects`' descriptor cache keeps descriptors; its module
    /// comment says why that is enough). A `Weak`, so a cached entry
    /// never keeps a closed endpoint's memory.
    last_used: GenerationCache<CachedEndpoint>,
}

/// What [`IpcThread::last_used`] keeps of a look-up.
#[derive(Clone)]
struct CachedEndpoint {
    space: SpaceId,
    endpoint: Weak<KernelEndpoint>,
    rights: Rights,
}

impl IpcThread {
    fn mailbox(&mut self, process: &NativeProcess) -> Arc<Mailbox<UserMessage, KernelBlocking>> {
        self.mailbox.get_or_insert_with(|| Arc::new(Mailbox::new(process.space().to_bits()))).clone()
    }
}

/// Endpoints alive (for tests and reports).
pub fn count() -> usize {
    ENDPOINTS.lock().len()
}

/// Makes an endpoint and puts a capability with `rights` to it in the
/// lowest free slot of `process`.
pub(super) fn create(process: &NativeProcess, rights: Rights) -> Result<u64, Errno> {
    let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    let endpoint = Arc::new(KernelEndpoint::new());
    {
        let mut endpoints = ENDPOINTS.lock();
        endpoints.insert(handle, endpoint);
    }
    let made = caps().with(|database| database.create_object(process.space(), ObjectKind::Endpoint, handle, 0, rights, Placement::LowestFrom(0)));
    made.map(u64::from).map_err(|error| {
        release(handle);
        Errno::from(error)
    })
}

/// Closes the endpoint `handle` (its last capability went): every thread
/// waiting on it fails, and so does every later use.
pub fn release(handle: u64) {
    let removed = ENDPOINTS.lock().remove(&handle);
    if let Some(endpoint) = removed {
        endpoint.close();
    }
}

/// The endpoint in `slot` of `process`, checked to carry `needed`.
#[inline(always)]
fn endpoint(process: &NativeProcess, thread: &mut IpcThread, slot: u64, needed: Rights) -> Result<Arc<KernelEndpoint>, Errno> {
    endpoint_with_rights(process, thread, slot, needed).map(|(endpoint, _)| endpoint)
}

/// [`endpoint`], with all the rights its capability carries: from the
/// thread's cache while it is good, else one database look-up.
#[inline(always)]
fn endpoint_with_rights(process: &NativeProcess, thread: &mut IpcThread, slot: u64, needed: Rights) -> Result<(Arc<KernelEndpoint>, Rights), Errno> {
    let space = process.space();
    let mut fresh = None;
    let kept = thread.last_used.with(
        slot,
        caps().withdrawals(),
        || {
            let (endpoint, rights) = look_up(space, slot)?;
            let cached = CachedEndpoint { space, endpoint: Arc::downgrade(&endpoint), rights };
            fresh = Some(endpoint);
            Ok::<_, Errno>(cached)
        },
        |cached| if cached.space == space { cached.endpoint.upgrade().map(|endpoint| (endpoint, cached.rights)) } else { None },
    )?;
    let (endpoint, rights) = match (fresh, kept) {
        (Some(endpoint), Some((_, rights))) => (endpoint, rights),
        (_, Some(found)) => found,
        // Another space's entry, or an endpoint already closed.
        (_, None) => look_up(space, slot)?,
    };
    let missing = needed.missing_from(rights);
    if missing != Rights::NONE {
        return Err(Errno::from(CapError::MissingRights(missing)));
    }
    Ok((endpoint, rights))
}

/// The endpoint in `slot` of `space` and its capability's rights, from
/// the capability database.
fn look_up(space: SpaceId, slot: u64) -> Result<(Arc<KernelEndpoint>, Rights), Errno> {
    let slot = Slot::try_from(slot).map_err(|_| Errno::EBADF)?;
    let found = caps().with(|database| database.access(space, slot, ObjectKind::Endpoint, Rights::NONE).map(|capability| (capability.object.handle, capability.rights)));
    let (handle, rights) = found.map_err(Errno::from)?;
    let endpoint = ENDPOINTS.lock().get(&handle).cloned().ok_or(Errno::EPIPE)?;
    Ok((endpoint, rights))
}

/// The registers and flags of an IPC native call.
#[derive(Clone, Copy, Debug)]
pub struct IpcRegisters {
    /// `rsi, rdx, r10, r8`.
    pub words: [u64; 4],
    /// `r9` going in, `rax` coming back (see [`info`]).
    pub info: u64,
}

/// What waiting may be cut short by (a signal, the process ending).
pub type Interrupted<'a> = &'a dyn Fn() -> bool;

/// Builds the message `registers` describe from `process`'s IPC buffer.
#[inline(always)]
fn message_from(process: &NativeProcess, thread: &IpcThread, registers: &IpcRegisters, may_grant: bool) -> Result<UserMessage, Errno> {
    let length = (registers.info & info::LENGTH_MASK) as usize;
    let (address, limit) = thread.buffer;
    if length > limit || length > MAX_BYTES {
        return Err(Errno::EINVAL);
    }
    let capability = if registers.info & info::CAPABILITY != 0 {
        if !may_grant {
            return Err(Errno::EPERM);
        }
        Transfer::From(Slot::try_from(registers.info >> info::SLOT_SHIFT).map_err(|_| Errno::EBADF)?)
    } else {
        Transfer::None
    };
    let mut bytes = Vec::new();
    if length > 0 {
        bytes.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
        bytes.resize(length, 0);
        process.user_memory().read(address, &mut bytes)?;
    }
    Ok(UserMessage { words: registers.words, bytes, capability })
}

/// Where the sender and receiver meet: grants the message's capability
/// from the sender's space to the receiver's.
fn grant_on_meeting(message: &mut UserMessage, meeting: Meeting) {
    let Transfer::From(slot) = message.capability else { return };
    let (from, to) = (SpaceId::from_bits(meeting.sender), SpaceId::from_bits(meeting.receiver));
    let granted = caps().with(|database| database.grant(from, slot, to, Rights::ALL, Placement::LowestFrom(0)));
    message.capability = granted.map_or(Transfer::Failed, Transfer::Granted);
}

/// Hands `message` to the receiving thread: bytes into its IPC buffer,
/// registers and flags back.
#[inline(always)]
fn deliver(process: &NativeProcess, thread: &IpcThread, message: UserMessage, call: bool) -> Result<IpcRegisters, Errno> {
    let mut flags = if call { info::CALL } else { 0 };
    let (address, limit) = thread.buffer;
    let copied = message.bytes.len().min(limit);
    if copied > 0 {
        process.user_memory().write(address, &message.bytes[..copied])?;
    }
    flags |= copied as u64;
    if copied < message.bytes.len() {
        flags |= info::TRUNCATED;
    }
    match message.capability {
        Transfer::Granted(slot) => flags |= info::CAPABILITY | (u64::from(slot) << info::SLOT_SHIFT),
        Transfer::Failed | Transfer::From(_) => flags |= info::CAPABILITY_FAILED,
        Transfer::None => {}
    }
    Ok(IpcRegisters { words: message.words, info: flags })
}

fn errno_of(error: EndpointError) -> Errno {
    match error {
        EndpointError::Interrupted => Errno::EINTR,
        EndpointError::Closed => Errno::EPIPE,
        EndpointError::NoReply => Errno::ECONNRESET,
    }
}

/// `send(slot, words, info)`: waits until a receiver has the message.
pub(super) fn send(process: &NativeProcess, thread: &mut IpcThread, slot: u64, registers: &IpcRegisters, interrupted: Interrupted<'_>) -> Result<IpcRegisters, Errno> {
    let (endpoint, may_grant) = sending_endpoint(process, thread, slot)?;
    let message = message_from(process, thread, registers, may_grant)?;
    let me = thread.mailbox(process);
    endpoint.send(&me, message, grant_on_meeting, interrupted).map_err(errno_of)?;
    Ok(IpcRegisters { words: [0; 4], info: 0 })
}

/// `call(slot, words, info)`: sends and waits for the answer.
#[inline(always)]
pub(super) fn call(process: &NativeProcess, thread: &mut IpcThread, slot: u64, registers: &IpcRegisters, interrupted: Interrupted<'_>) -> Result<IpcRegisters, Errno> {
    let (endpoint, may_grant) = sending_endpoint(process, thread, slot)?;
    let message = message_from(process, thread, registers, may_grant)?;
    let me = thread.mailbox(process);
    let answer = endpoint.call(&me, message, grant_on_meeting, interrupted).map_err(errno_of)?;
    deliver(process, thread, answer, false)
}

/// The endpoint a send uses (write right), and whether it may carry a
/// capability (grant right).
#[inline(always)]
fn sending_endpoint(process: &NativeProcess, thread: &mut IpcThread, slot: u64) -> Result<(Arc<KernelEndpoint>, bool), Errno> {
    let (endpoint, rights) = endpoint_with_rights(process, thread, slot, Rights::WRITE)?;
    Ok((endpoint, rights.contains(Rights::GRANT)))
}

/// `recv(slot)`, or with `answer` `reply_recv(slot, answer)`: answers the
/// held call (a plain `recv` lets it go unanswered), then waits for a
/// message.
#[inline(always)]
pub(super) fn receive(
    process: &NativeProcess,
    thread: &mut IpcThread,
    slot: u64,
    answer: Option<&IpcRegisters>,
    interrupted: Interrupted<'_>,
) -> Result<IpcRegisters, Errno> {
    let endpoint = endpoint(process, thread, slot, Rights::READ)?;
    let answer = match answer {
        Some(registers) => {
            let message = answer_message(process, thread, registers)?;
            Some((thread.holding.take().ok_or(Errno::EINVAL)?, message))
        }
        None => {
            drop(thread.holding.take());
            None
        }
    };
    let me = thread.mailbox(process);
    let received = endpoint.recv(&me, answer, grant_on_meeting, interrupted).map_err(errno_of)?;
    let call = received.reply.is_some();
    thread.holding = received.reply;
    deliver(process, thread, received.message, call)
}

/// `reply(words, info)`: answers the held call. `EINVAL` when there is
/// none; returns 1 when the caller got it, 0 when it had given up.
pub(super) fn reply(process: &NativeProcess, thread: &mut IpcThread, registers: &IpcRegisters) -> Result<u64, Errno> {
    let message = answer_message(process, thread, registers)?;
    let holding = thread.holding.take().ok_or(Errno::EINVAL)?;
    Ok(u64::from(holding.reply(message)))
}

/// An answer's message: words and bytes (answers carry no capability).
#[inline(always)]
fn answer_message(process: &NativeProcess, thread: &IpcThread, registers: &IpcRegisters) -> Result<UserMessage, Errno> {
    if thread.holding.is_none() {
        return Err(Errno::EINVAL);
    }
    if registers.info & info::CAPABILITY != 0 {
        return Err(Errno::EINVAL);
    }
    message_from(process, thread, registers, false)
}

/// The fast path of `call` and `reply_recv` (seL4's): a message of its
/// four registers alone (`info` 0: no bytes, no capability), sent on an
/// endpoint, by a thread that has its mailbox. It runs from the run
/// loop, past the system-call dispatch, through the general path's own
/// `call` and `receive` (inlined), so both give the same result. `None`:
/// not of that shape; the general path runs it.
#[inline(always)]
pub fn fast_path(process: &NativeProcess, thread: &mut IpcThread, registers: &IpcRegisters, slot: u64, call: bool, interrupted: Interrupted<'_>) -> Option<Result<IpcRegisters, Errno>> {
    if registers.info != 0 || thread.mailbox.is_none() {
        return None;
    }
    Some(if call { self::call(process, thread, slot, registers, interrupted) } else { receive(process, thread, slot, Some(registers), interrupted) })
}

/// `ipc_buffer(address, length)`: where this thread's message bytes come
/// from and go to (length 0: none).
pub(super) fn set_buffer(thread: &mut IpcThread, address: u64, length: u64) -> Result<u64, Errno> {
    let length = usize::try_from(length).map_err(|_| Errno::EINVAL)?;
    if length > MAX_BYTES || address.checked_add(length as u64).is_none() {
        return Err(Errno::EINVAL);
    }
    thread.buffer = (address, length);
    Ok(0)
}
