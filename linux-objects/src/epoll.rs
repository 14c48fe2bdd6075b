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

/// One entry as a wait looks at it: where it was, its file, and what the
/// file has of what the entry wants.
struct Look {
    index: usize,
    fd: u32,
    wanted: u32,
    happened: u32,
    /// The file's activity count, for an edge-triggered entry.
    activity: u64,
    file: Arc<OpenFile>,
}

/// One epoll instance.
pub struct EpollSet {
    entries: KernelTicketLock<Vec<Entry>>,
    /// The last wait's list of looks, emptied, kept for its room: a wait
    /// then allocates nothing (two heap round trips were a tenth of a
    /// 10-entry wait).
    spare: KernelTicketLock<Vec<Look>>,
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
        Self { entries: KernelTicketLock::new(LIST_LEVEL, Vec::new()), spare: KernelTicketLock::new(LIST_LEVEL, Vec::new()) }
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

    /// Reports up to `limit` ready entries to `report` as (events, datum),
    /// disabling the one-shot ones that report when `consume`
    /// (`epoll_wait`; a poll of the instance itself only looks); returns
    /// how many it reported. `depth` counts epoll instances watched
    /// through others (past one level, a nested instance counts as not
    /// ready, so a loop of instances ends).
    pub fn ready(&self, limit: usize, depth: u32, consume: bool, mut report: impl FnMut(u32, u64)) -> Result<usize, Errno> {
        // One list of looks, filled under the list lock, completed with
        // each file's readiness outside it, applied under it again. Each
        // look carries its entry's place, so that the last pass finds it
        // in one step when the list has not changed (a search per entry
        // made 1,000 ready entries cost 2.7 M instructions per wait).
        let mut looks = core::mem::take(&mut *self.spare.lock());
        let mut looks: Vec<Look> = {
            let mut entries = self.entries.lock();
            looks.try_reserve_exact(entries.len()).map_err(|_| Errno::ENOMEM)?;
            let mut gone = false;
            for (index, entry) in entries.iter().enumerate() {
                if entry.disabled {
                    gone |= entry.file.strong_count() == 0;
                    continue;
                }
                match entry.file.upgrade() {
                    Some(file) => looks.push(Look { index, fd: entry.fd, wanted: entry.events, happened: 0, activity: 0, file }),
                    None => gone = true,
                }
            }
            // Entries whose description closed go; the looks' places
            // after them are then found by search (rare: once per close).
            if gone {
                entries.retain(|entry| entry.file.strong_count() > 0);
            }
            looks
        };
        // Readiness is asked without the list lock: some files' locks
        // (a terminal's, a nested instance's list) come before it.
        for look in &mut looks {
            let readiness = look.file.readiness(depth + 1);
            let mut happened = 0;
            if readiness.readable {
                happened |= EPOLLIN | EPOLLRDNORM;
            }
            if readiness.writable {
                happened |= EPOLLOUT | EPOLLWRNORM;
            }
            if readiness.hung_up {
                happened |= EPOLLHUP | EPOLLRDHUP;
            }
            if readiness.error {
                happened |= EPOLLERR;
            }
            look.happened = happened & look.wanted;
            // An edge-triggered entry that is not ready is looked at too:
            // what it no longer has must be forgotten (below).
            if look.wanted & EPOLLET != 0 {
                look.activity = look.file.activity();
            }
        }
        let mut reported = 0;
        let mut entries = self.entries.lock();
        for look in &looks {
            let edge = look.wanted & EPOLLET != 0;
            if (look.happened == 0 && !edge) || reported >= limit {
                continue;
            }
            let same = |entry: &Entry| entry.fd == look.fd && core::ptr::eq(entry.file.as_ptr(), Arc::as_ptr(&look.file));
            // The list may have changed meanwhile: report what is still there.
            let place = if entries.get(look.index).is_some_and(same) { Some(look.index) } else { entries.iter().position(same) };
            let Some(entry) = place.map(|place| &mut entries[place]) else { continue };
            if entry.disabled {
                continue;
            }
            let happened = look.happened;
            if entry.events & EPOLLET != 0 {
                let new_bits = happened & !entry.reported;
                let moved = look.activity != entry.activity_seen && happened != 0;
                if consume {
                    // Bits no longer ready may be reported again when they return.
                    entry.reported &= happened;
                }
                if new_bits == 0 && !moved {
                    continue;
                }
                if consume {
                    entry.reported |= happened;
                    entry.activity_seen = look.activity;
                }
            }
            if happened == 0 {
                continue;
            }
            if consume && entry.events & EPOLLONESHOT != 0 {
                entry.disabled = true;
            }
            report(happened, entry.data);
            reported += 1;
        }
        // The descriptions let go only after the list lock: the last
        // reference's drop may take other locks.
        drop(entries);
        looks.clear();
        *self.spare.lock() = looks;
        Ok(reported)
    }

    /// Entries on the list (some may have closed).
    pub fn entry_count(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether any entry is ready (this instance watched by another, or
    /// polled).
    pub fn any_ready(&self, depth: u32) -> bool {
        depth < 2 && self.ready(1, depth, false, |_, _| ()).is_ok_and(|reported| reported > 0)
    }
}

/// The event bits `epoll_ctl` accepts.
pub const KNOWN_EVENTS: u32 = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP | EPOLLEXCLUSIVE | EPOLLWAKEUP | EPOLLONESHOT | EPOLLET;
