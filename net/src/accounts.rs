//! Who pays for socket buffers: every smoltcp socket's buffers are charged
//! to an owner (the kernel's container of the process that made the
//! socket; a listener's pool and the connections it accepts are the
//! listener's owner's) through a [`BufferAccount`] the kernel gives the
//! network. A refused charge is ENOBUFS for the call that wanted the
//! buffers (`connect`, `bind` of a datagram socket) or a smaller listening
//! pool (SYNs refused until there is room), never a failure elsewhere: a
//! SYN flood or a peer that never reads costs its victim's owner a bounded
//! amount, and other owners' connections go on.
//!
//! Charges are given back when the buffers are freed: lanes collect the
//! charges of the sockets they let go ([`crate::lanes::Lane`]), and the
//! network hands them to the account after every poll and close.
//!
//! Must never charge without giving back on every path that frees.

use alloc::boxed::Box;

use smoltcp::socket::{tcp, udp};

use crate::network::Network;
use crate::Errno;

/// Whom buffers are charged to (opaque here: the kernel's container id).
pub type Owner = u64;

/// What the kernel charges socket buffers to.
pub trait BufferAccount: Send {
    /// Charges `bytes` to `owner`; false when its quota cannot take them.
    fn take(&mut self, owner: Owner, bytes: usize) -> bool;
    /// Gives back `bytes` charged to `owner` before.
    fn give_back(&mut self, owner: Owner, bytes: usize);
}

/// Buffers charged to an owner, carried with the smoltcp socket that holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Charge {
    pub owner: Owner,
    pub bytes: usize,
}

impl Network {
    /// From now on socket buffers are charged to `account`.
    pub fn set_account(&mut self, account: Box<dyn BufferAccount>) {
        self.account = Some(account);
    }

    /// Charges `bytes` to `owner` (always granted without an account).
    fn charge(&mut self, owner: Owner, bytes: usize) -> Result<Charge, Errno> {
        let granted = self.account.as_mut().is_none_or(|account| account.take(owner, bytes));
        if granted {
            Ok(Charge { owner, bytes })
        } else {
            Err(Errno::ENOBUFS)
        }
    }

    fn give_back(&mut self, charge: Charge) {
        if let Some(account) = &mut self.account {
            account.give_back(charge.owner, charge.bytes);
        }
    }

    /// A TCP socket with its buffers, charged to `owner` (ENOBUFS when the
    /// owner's quota or the heap has no room).
    pub(crate) fn charged_tcp(&mut self, owner: Owner) -> Result<(tcp::Socket<'static>, Charge), Errno> {
        self.charged(owner, crate::stream::TCP_SOCKET_BYTES, crate::stream::new_tcp)
    }

    /// A UDP socket with its queues, charged to `owner`.
    pub(crate) fn charged_udp(&mut self, owner: Owner) -> Result<(udp::Socket<'static>, Charge), Errno> {
        self.charged(owner, crate::datagram::UDP_SOCKET_BYTES, crate::datagram::new_udp)
    }

    /// What `make` makes, its `bytes` charged to `owner` first (given back
    /// if the heap has no room after all).
    fn charged<S>(&mut self, owner: Owner, bytes: usize, make: fn() -> Result<S, Errno>) -> Result<(S, Charge), Errno> {
        let charge = self.charge(owner, bytes)?;
        match make() {
            Ok(socket) => Ok((socket, charge)),
            Err(errno) => {
                self.give_back(charge);
                Err(errno)
            }
        }
    }

    /// Gives back what the lanes let go of since the last call.
    pub(crate) fn give_back_released(&mut self) {
        for index in 0..self.lanes.len() {
            while let Some(charge) = self.lanes[index].released.pop() {
                self.give_back(charge);
            }
        }
    }
}
