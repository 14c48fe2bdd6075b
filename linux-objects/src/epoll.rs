//! `epoll` interest lists: which descriptors an epoll instance watches,
//! for which events, with the caller's 64-bit datum. An entry holds its
//! open file description weakly: when the description's last descriptor
//! closes, the entry goes (as on Linux). Readiness is level-triggered by
//! default; an `EPOLLET` entry reports only when something is new since
//! its last report: a readiness bit it had not reported, or (for files
//! that count their activity: pipes, Internet sockets) anything arriving or
//! leaving — then, as Linux on each wake-up of the file, with every bit
//! that is ready. `EPOLLONESHOT` disables an
//! entry once it reported until `EPOLL_CTL_MOD`.
//!
//! This file keeps the list; what a description's readiness is, is
//! `OpenFile::readiness`'s.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

use crate::open_files::OpenFile;
use linux_abi::Errno;

/// The list lock's level: taken before any description's own locks.
const LIST_LEVEL: Level = Level::new(7);

/// `epoll_event.events` bits.
pub mod events {
    pub const EPOLLIN: u32 = 0x001;
    pub const EPOLLPRI: u32 = 0x002;
    pub const EPOLLOUT: u32 = 0x004;
    pub const EPOLLERR: u32 = 0x008;
    pub const EPOLLHUP: u32 = 0x010;
    pub const EPOLLRDNORM: u32 = 0x040;
    pub const EPOLLRDBAND: u32 = 0x080;
    pub const EPOLLWRNORM: u32 = 0x100;
    pub const EPOLLWRBAND: u32 = 0x200;
    pub const EPOLLMSG: u32 = 0x400;
    pub const EPOLLRDHUP: u32 = 0x2000;
    pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
    pub const EPOLLWAKEUP: u32 = 1 << 29;
    pub const EPOLLONESHOT: u32 = 1 << 30;
    pub const EPOLLET: u32 = 1 << 31;
}
use events::*;

/// One watched descriptor.
struct Entry {
    fd: u32,
    file: Weak<OpenFile>,
    events: u32,
    data: u64,
    /// A one-shot entry that reported: silent until modified.
    disabled: bool,
    /// Edge-triggered: what it last reported, and the file's activity
    /// count then.
    reported: u32,
    activity_seen: u64,
}

/// One epoll instance.
pub struct EpollSet {
    entries: KernelTicketLock<Vec<Entry>>,
}

/// `epoll_ctl`'s operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Control {
    Add,
    Modify,
    Delete,
}

impl EpollSet {
    pub fn new() -> Self {
        Self { entries: KernelTicketLock::new(LIST_LEVEL, Vec::new()) }
    }

    /// Adds, changes or removes the entry of descriptor `fd` (open on
    /// `file`): EEXIST to add one there is, ENOENT to change or remove one
    /// there is not.
    pub fn control(&self, operation: Control, fd: u32, file: &Arc<OpenFile>, events: u32, data: u64) -> Result<(), Errno> {
        let mut entries = self.entries.lock();
        // An entry whose description has gone never matches (its weak
        // reference keeps the description's memory, so no live one is at
        // that address): it is dropped here only when the list would grow,
        // and by every `ready` (a walk of the whole list on each
        // `epoll_ctl` was a third of its cost with 50 descriptors).
        let position = entries.iter().position(|entry| entry.fd == fd && core::ptr::eq(entry.file.as_ptr(), Arc::as_ptr(file)));
        // Error and hang-up are always reported.
        let events = events | EPOLLERR | EPOLLHUP;
        match (operation, position) {
            (Control::Add, Some(_)) => Err(Errno::EEXIST),
            (Control::Add, None) => {
                if entries.len() == entries.capacity() {
                    entries.retain(|entry| entry.file.strong_count() > 0);
                }
                entries.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                entries.push(Entry { fd, file: Arc::downgrade(file), events, data, disabled: false, reported: 0, activity_seen: file.activity() });
                Ok(())
            }
            (Control::Modify, Some(index)) => {
                let entry = &mut entries[index];
                entry.events = events;
                entry.data = data;
                entry.disabled = false;
                // Re-armed: what is ready now is news again.
                entry.reported = 0;
                Ok(())
            }
            (Control::Delete, Some(index)) => {
                entries.remove(index);
                Ok(())
            }
            (Control::Modify | Control::Delete, None) => Err(Errno::ENOENT),
        }
    }

    /// Up to `limit` ready entries as (events, datum), disabling the
    /// one-shot ones that report when `consume` (`epoll_wait`; a poll of
    /// the instance itself only looks). `depth` counts epoll instances
    /// watched through others (past one level, a nested instance counts as
    /// not ready, so a loop of instances ends).
    pub fn ready(&self, limit: usize, depth: u32, consume: bool) -> Result<Vec<(u32, u64)>, Errno> {
        // Each entry is carried with its place in the list, so that the
        // second pass finds it in one step when the list has not changed
        // (a search per entry made 1,000 ready entries cost 2.7 M
        // instructions per `epoll_wait`).
        let watched: Vec<(usize, u32, Arc<OpenFile>, u32)> = {
            let mut entries = self.entries.lock();
            entries.retain(|entry| entry.file.strong_count() > 0);
            let mut watched = Vec::new();
            watched.try_reserve(entries.len()).map_err(|_| Errno::ENOMEM)?;
            for (index, entry) in entries.iter().enumerate().filter(|(_, entry)| !entry.disabled) {
                if let Some(file) = entry.file.upgrade() {
                    watched.push((index, entry.fd, file, entry.events));
                }
            }
            watched
        };
        // Readiness is asked without the list lock: it takes the files' own.
        // Room for every entry at once: growing by one per ready entry
        // reallocated the list again and again (~25 % of a 10-entry wait).
        let mut reported: Vec<(usize, u32, Arc<OpenFile>, u32, u64)> = Vec::new();
        reported.try_reserve_exact(watched.len()).map_err(|_| Errno::ENOMEM)?;
        for (index, fd, file, wanted) in watched {
            let (readable, writable, hung_up) = file.readiness(depth + 1);
            let mut happened = 0;
            if readable {
                happened |= EPOLLIN | EPOLLRDNORM;
            }
            if writable {
                happened |= EPOLLOUT | EPOLLWRNORM;
            }
            if hung_up {
                happened |= EPOLLHUP | EPOLLRDHUP;
            }
            let happened = happened & wanted;
            let edge = wanted & EPOLLET != 0;
            // An edge-triggered entry that is not ready is kept too: what it
            // no longer has must be forgotten (below).
            if happened == 0 && !edge {
                continue;
            }
            let activity = if edge { file.activity() } else { 0 };
            reported.push((index, fd, file, happened, activity));
        }
        let mut entries = self.entries.lock();
        let mut out = Vec::new();
        out.try_reserve(reported.len()).map_err(|_| Errno::ENOMEM)?;
        for (index, fd, file, happened, activity) in &reported {
            let (fd, happened, activity) = (*fd, *happened, *activity);
            let same = |entry: &Entry| entry.fd == fd && core::ptr::eq(entry.file.as_ptr(), Arc::as_ptr(file));
            // The list may have changed meanwhile: report what is still there.
            let place = if entries.get(*index).is_some_and(same) { Some(*index) } else { entries.iter().position(same) };
            let Some(entry) = place.map(|place| &mut entries[place]) else { continue };
            if entry.disabled || out.len() >= limit {
                continue;
            }
            if entry.events & EPOLLET != 0 {
                let new_bits = happened & !entry.reported;
                let moved = activity != entry.activity_seen && happened != 0;
                if consume {
                    // Bits no longer ready may be reported again when they return.
                    entry.reported &= happened;
                }
                if new_bits == 0 && !moved {
                    continue;
                }
                if consume {
                    entry.reported |= happened;
                    entry.activity_seen = activity;
                }
            }
            if happened == 0 {
                continue;
            }
            if consume && entry.events & EPOLLONESHOT != 0 {
                entry.disabled = true;
            }
            out.push((happened, entry.data));
        }
        // The descriptions let go only after the list lock: the last
        // reference's drop may take other locks.
        drop(entries);
        drop(reported);
        Ok(out)
    }

    /// Whether any entry is ready (this instance watched by another, or
    /// polled).
    pub fn any_ready(&self, depth: u32) -> bool {
        depth < 2 && self.ready(usize::MAX, depth, false).is_ok_and(|ready| !ready.is_empty())
    }
}

/// The event bits `epoll_ctl` accepts.
pub const KNOWN_EVENTS: u32 = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP | EPOLLEXCLUSIVE | EPOLLWAKEUP | EPOLLONESHOT | EPOLLET;
