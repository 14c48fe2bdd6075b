//! Descriptors in flight (`SCM_RIGHTS`): passing a descriptor over a Unix
//! socket is a capability delegation. `sendmsg` grants each descriptor's
//! capability from the sender's space into one kernel-held space of
//! descriptors in flight ([`InFlight`] names their slots); `recvmsg`
//! grants them on into the receiver's space and drops the in-flight
//! copies. Each copy stays a child of the sender's capability in the
//! derivation tree (a drop hands children to the parent), so revoking the
//! sender's descriptor reaches what was passed, and a message never
//! received (its socket closed, or no room for the descriptors) drops its
//! copies, which closes the files once nobody else holds them.
//!
//! Must never make a descriptor out of a number the sender does not hold:
//! every copy is derived from a capability in the sender's space.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use caps::{Placement, Rights, Slot, SpaceId};
use kernel_objects::capabilities::{caps, undo};
use linux_abi::Errno;

/// The most descriptors one message carries (Linux's `SCM_MAX_FD`).
pub const MOST_PER_MESSAGE: usize = 253;
/// Slots of the in-flight space: descriptors in flight at once, system-wide.
const IN_FLIGHT_SLOTS: Slot = 1 << 16;

/// The in-flight space, once made ([`MADE`]).
static SPACE: AtomicU64 = AtomicU64::new(0);
static MADE: AtomicBool = AtomicBool::new(false);

fn in_flight_space() -> Result<SpaceId, Errno> {
    caps().with(|database| {
        // Made under the database's lock, so two first senders make one.
        if MADE.load(Ordering::Acquire) {
            return Ok(SpaceId::from_bits(SPACE.load(Ordering::Acquire)));
        }
        let space = database.create_space(IN_FLIGHT_SLOTS).map_err(Errno::from)?;
        SPACE.store(space.to_bits(), Ordering::Release);
        MADE.store(true, Ordering::Release);
        Ok(space)
    })
}

/// Descriptors on their way, held as capabilities in the in-flight space.
/// Dropping it drops them.
pub struct InFlight {
    space: SpaceId,
    slots: Vec<Slot>,
    /// The CPU group of the sender (issue 20): a receiver in another group
    /// obtains copies of what crossed (`group_descriptors`).
    sender_group: usize,
}

impl InFlight {
    /// Copies descriptors `fds` of the process with capability space
    /// `from`, living in CPU group `sender_group`, into flight, all or none
    /// (EBADF for one it does not hold, ETOOMANYREFS past
    /// [`MOST_PER_MESSAGE`], ENOMEM/ENFILE when full).
    pub fn send(from: SpaceId, sender_group: usize, fds: &[u32]) -> Result<InFlight, Errno> {
        if fds.len() > MOST_PER_MESSAGE {
            return Err(Errno::ETOOMANYREFS);
        }
        let space = in_flight_space()?;
        let mut flight = InFlight { space, slots: Vec::new(), sender_group };
        flight.slots.try_reserve_exact(fds.len()).map_err(|_| Errno::ENOMEM)?;
        for &fd in fds {
            crate::open_files::file(from, u64::from(fd)).map_err(|_| Errno::EBADF)?;
            let slot = caps().with(|database| database.grant(from, fd, space, Rights::ALL, Placement::LowestFrom(0))).map_err(|_| Errno::ENFILE)?;
            flight.slots.push(slot);
        }
        Ok(flight)
    }

    /// The sender's CPU group.
    pub fn sender_group(&self) -> usize {
        self.sender_group
    }

    /// How many descriptors it carries.
    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// Delivers the first `room` descriptors into space `to` at its lowest
    /// free slots and drops the rest (closed, as Linux closes what does
    /// not fit); the new descriptors, in order. A descriptor that cannot
    /// be placed (the space is full) ends the delivery there.
    pub fn deliver(mut self, to: SpaceId, room: usize) -> Vec<u32> {
        let mut delivered = Vec::new();
        let slots = core::mem::take(&mut self.slots);
        for (index, slot) in slots.iter().enumerate() {
            if index < room && delivered.try_reserve(1).is_ok() {
                if let Ok(fd) = caps().with(|database| database.grant(self.space, *slot, to, Rights::ALL, Placement::LowestFrom(0))) {
                    delivered.push(fd);
                }
            }
            self.drop_slot(*slot);
        }
        delivered
    }

    fn drop_slot(&self, slot: Slot) {
        if let Ok(removed) = caps().with(|database| database.drop_capability(self.space, slot)) {
            undo(&removed);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for slot in core::mem::take(&mut self.slots) {
            self.drop_slot(slot);
        }
    }
}
