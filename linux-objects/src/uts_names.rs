//! The machine's names as `uname` reports them: the fixed ones (system,
//! release, version, machine) and the two root may change — the host
//! name (`sethostname`, at first "lamina") and the NIS domain name
//! (`setdomainname`, at first "(none)"). One set for the whole system:
//! Lamina has no UTS namespaces.
//!
//! Must never hold a name longer than Linux's 64 bytes (`uname`'s fields
//! are 65 bytes with their terminating zero).

use spinlock::kernel::KernelTicketLock;
use spinlock::Level;

/// The kernel's release, as `uname -r` and `/proc/sys/kernel/osrelease`
/// say it (a Linux release programs' version checks accept).
pub const RELEASE: &[u8] = b"6.1.0-lamina";

/// The longest name (`__NEW_UTS_LEN`).
pub const LONGEST_NAME: usize = 64;

/// A name of at most [`LONGEST_NAME`] bytes.
#[derive(Clone, Copy)]
pub struct Name {
    bytes: [u8; LONGEST_NAME],
    length: usize,
}

impl Name {
    const fn of(text: &[u8]) -> Name {
        let mut bytes = [0; LONGEST_NAME];
        let mut at = 0;
        while at < text.len() {
            bytes[at] = text[at];
            at += 1;
        }
        Name { bytes, length: text.len() }
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.length]
    }
}

/// The two names root may change. A leaf: nothing is taken while it is
/// held.
static NAMES: KernelTicketLock<[Name; 2]> = KernelTicketLock::new(Level::new(8), [Name::of(b"lamina"), Name::of(b"(none)")]);

/// Which name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Host = 0,
    Domain = 1,
}

/// The current name.
pub fn name(which: Which) -> Name {
    NAMES.lock()[which as usize]
}

/// Sets a name; `None` (the caller says EINVAL) when longer than
/// [`LONGEST_NAME`].
pub fn set(which: Which, text: &[u8]) -> Option<()> {
    if text.len() > LONGEST_NAME {
        return None;
    }
    let mut name = Name { bytes: [0; LONGEST_NAME], length: text.len() };
    name.bytes[..text.len()].copy_from_slice(text);
    NAMES.lock()[which as usize] = name;
    Some(())
}
