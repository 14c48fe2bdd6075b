//! A process's user and group identities and Linux's rules for changing
//! them (`credentials(7)`, `setuid(2)`, `setreuid(2)`, `setresuid(2)`,
//! `setfsuid(2)`): real, effective, saved and file-system ids. A process
//! with effective uid 0 may set any id; another may only move between the
//! ids it already has. Pure: the kernel keeps one [`Credentials`] per
//! process and asks these methods.

use crate::Errno;

/// "Leave this id unchanged" in `setre*id` and `setres*id`.
pub const UNCHANGED: u32 = u32::MAX;

/// Real, effective, saved and file-system ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ids {
    /// Who the process is.
    pub real: u32,
    /// Whom permission checks (but file access) treat it as.
    pub effective: u32,
    /// What it may switch back to.
    pub saved: u32,
    /// Whom file access treats it as (follows the effective id).
    pub file_system: u32,
}

impl Ids {
    fn all(id: u32) -> Ids {
        Ids { real: id, effective: id, saved: id, file_system: id }
    }

    /// Whether `id` is its real, effective or saved id.
    pub fn holds(&self, id: u32) -> bool {
        id == self.real || id == self.effective || id == self.saved
    }

    /// `set*id(id)`: privileged, all three; else the effective id only, to
    /// the real or saved one (EPERM otherwise).
    fn set(&mut self, id: u32, privileged: bool) -> Result<(), Errno> {
        if id == UNCHANGED {
            return Err(Errno::EINVAL);
        }
        if privileged {
            *self = Ids::all(id);
        } else if id == self.real || id == self.saved {
            self.effective = id;
            self.file_system = id;
        } else {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// `setre*id(real, effective)`.
    fn set_real_effective(&mut self, real: u32, effective: u32, privileged: bool) -> Result<(), Errno> {
        let mut new = *self;
        if real != UNCHANGED {
            if !privileged && real != self.real && real != self.effective {
                return Err(Errno::EPERM);
            }
            new.real = real;
        }
        if effective != UNCHANGED {
            if !privileged && !self.holds(effective) {
                return Err(Errno::EPERM);
            }
            new.effective = effective;
        }
        // The saved id follows the effective one when the real id is set or
        // the effective one moves away from the old real id.
        if real != UNCHANGED || (effective != UNCHANGED && effective != self.real) {
            new.saved = new.effective;
        }
        new.file_system = new.effective;
        *self = new;
        Ok(())
    }

    /// `setres*id(real, effective, saved)`.
    fn set_all(&mut self, real: u32, effective: u32, saved: u32, privileged: bool) -> Result<(), Errno> {
        let allowed = |id: u32| id == UNCHANGED || privileged || self.holds(id);
        if !(allowed(real) && allowed(effective) && allowed(saved)) {
            return Err(Errno::EPERM);
        }
        let keep = |new: u32, old: u32| if new == UNCHANGED { old } else { new };
        let effective = keep(effective, self.effective);
        *self = Ids { real: keep(real, self.real), effective, saved: keep(saved, self.saved), file_system: effective };
        Ok(())
    }

    /// `setfs*id(id)`: the old file-system id; changed only when allowed
    /// (privileged, or one of the ids held, or the file-system id itself).
    fn set_file_system(&mut self, id: u32, privileged: bool) -> u32 {
        let old = self.file_system;
        if id != UNCHANGED && (privileged || self.holds(id) || id == self.file_system) {
            self.file_system = id;
        }
        old
    }
}

/// A process's users and groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// User ids.
    pub user: Ids,
    /// Group ids.
    pub group: Ids,
}

impl Credentials {
    /// Root's: every id 0.
    pub fn root() -> Credentials {
        Credentials::default()
    }

    /// Whether it acts with root's privileges (effective uid 0).
    pub fn privileged(&self) -> bool {
        self.user.effective == 0
    }

    /// `setuid(2)`.
    pub fn setuid(&mut self, id: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.user.set(id, privileged)
    }

    /// `setgid(2)`.
    pub fn setgid(&mut self, id: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.group.set(id, privileged)
    }

    /// `setreuid(2)`.
    pub fn setreuid(&mut self, real: u32, effective: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.user.set_real_effective(real, effective, privileged)
    }

    /// `setregid(2)`.
    pub fn setregid(&mut self, real: u32, effective: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.group.set_real_effective(real, effective, privileged)
    }

    /// `setresuid(2)`.
    pub fn setresuid(&mut self, real: u32, effective: u32, saved: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.user.set_all(real, effective, saved, privileged)
    }

    /// `setresgid(2)`.
    pub fn setresgid(&mut self, real: u32, effective: u32, saved: u32) -> Result<(), Errno> {
        let privileged = self.privileged();
        self.group.set_all(real, effective, saved, privileged)
    }

    /// `setfsuid(2)`: the old file-system uid.
    pub fn setfsuid(&mut self, id: u32) -> u32 {
        let privileged = self.privileged();
        self.user.set_file_system(id, privileged)
    }

    /// `setfsgid(2)`: the old file-system gid.
    pub fn setfsgid(&mut self, id: u32) -> u32 {
        let privileged = self.privileged();
        self.group.set_file_system(id, privileged)
    }

    /// Whether a process with these credentials may send a signal to one
    /// with `target`'s (`kill(2)`): privileged, or its real or effective
    /// uid is the target's real or saved uid.
    pub fn may_signal(&self, target: &Credentials) -> bool {
        self.privileged() || [self.user.real, self.user.effective].iter().any(|id| *id == target.user.real || *id == target.user.saved)
    }

    /// Whether a process with these credentials may read or write the
    /// memory of another with `target`'s (`process_vm_readv`, Linux's
    /// `PTRACE_MODE_ATTACH_REALCREDS`): privileged (`CAP_SYS_PTRACE`), or
    /// its *real* uid and gid are each of the target's real, effective and
    /// saved ones and the target is dumpable (a process that changed its
    /// effective ids is not, until it executes a program).
    pub fn may_access_memory_of(&self, target: &Credentials, target_dumpable: bool) -> bool {
        self.may_reach_memory(self.user.real, self.group.real, target, target_dumpable)
    }

    /// [`Self::may_access_memory_of`] with the caller's file-system ids in
    /// place of its real ones (Linux's `PTRACE_MODE_FSCREDS`: opening
    /// `/proc/<pid>/mem`).
    pub fn may_open_memory_of(&self, target: &Credentials, target_dumpable: bool) -> bool {
        self.may_reach_memory(self.user.file_system, self.group.file_system, target, target_dumpable)
    }

    fn may_reach_memory(&self, user: u32, group: u32, target: &Credentials, target_dumpable: bool) -> bool {
        if self.privileged() {
            return true;
        }
        let same = |mine: u32, theirs: &Ids| [theirs.real, theirs.effective, theirs.saved].iter().all(|id| *id == mine);
        same(user, &target.user) && same(group, &target.group) && target_dumpable
    }

    /// Whether going from `self` to `new` makes a process not dumpable
    /// (Linux's `commit_creds`: its effective or file-system uid or gid
    /// changed; `suid_dumpable` is 0).
    pub fn change_ends_dumpable(&self, new: &Credentials) -> bool {
        self.user.effective != new.user.effective
            || self.group.effective != new.group.effective
            || self.user.file_system != new.user.file_system
            || self.group.file_system != new.group.file_system
    }
}

/// Read, write and execute (search) bits, as `access(2)` numbers them.
pub mod want {
    /// `R_OK`.
    pub const READ: u32 = 4;
    /// `W_OK`.
    pub const WRITE: u32 = 2;
    /// `X_OK` (search, for a directory).
    pub const EXECUTE: u32 = 1;
}

/// Whom a file check treats the caller as: a user, a group, its
/// supplementary groups, and whether it has root's override.
#[derive(Clone, Copy, Debug)]
pub struct Accessor<'a> {
    /// The user id checked (file-system id, or the real one for `access`).
    pub uid: u32,
    /// The group id checked.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: &'a [u32],
}

/// Whether `who` may have `wanted` (`want` bits) of a file owned by
/// `owner`/`group` with permission bits `mode` (`is_directory` for the
/// search bit): the owner's bits for the owner, the group's for a member,
/// the others' else; uid 0 may read and write anything and execute what
/// has any execute bit (search any directory).
pub fn may_access(who: &Accessor<'_>, owner: u32, group: u32, mode: u32, is_directory: bool, wanted: u32) -> bool {
    if who.uid == 0 {
        return wanted & want::EXECUTE == 0 || is_directory || mode & 0o111 != 0;
    }
    let granted = if who.uid == owner {
        (mode >> 6) & 7
    } else if who.gid == group || who.groups.contains(&group) {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    wanted & !granted == 0
}

/// What `chown(owner, group)` may do for `who` on a file owned by
/// `current` (`UNCHANGED` for "leave"): root anything; the owner may keep
/// the user and give the file to a group it is in. EPERM otherwise.
pub fn may_chown(who: &Accessor<'_>, current: (u32, u32), new: (u32, u32)) -> Result<(), Errno> {
    if who.uid == 0 {
        return Ok(());
    }
    let (new_owner, new_group) = new;
    let keeps_owner = new_owner == UNCHANGED || new_owner == current.0;
    let group_allowed = new_group == UNCHANGED || new_group == current.1 || new_group == who.gid || who.groups.contains(&new_group);
    if who.uid == current.0 && keeps_owner && group_allowed {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(real: u32, effective: u32, saved: u32) -> Credentials {
        Credentials { user: Ids { real, effective, saved, file_system: effective }, group: Ids::default() }
    }

    #[test]
    fn memory_access_needs_every_id_to_match_the_real_one_or_privilege() {
        let root = Credentials::root();
        let plain = Credentials { user: Ids::all(1000), group: Ids::all(100) };
        assert!(root.may_access_memory_of(&plain, false), "privilege passes even the dumpable flag");
        assert!(plain.may_access_memory_of(&plain, true));
        assert!(!plain.may_access_memory_of(&plain, false), "a process that changed ids is off limits");
        assert!(!plain.may_access_memory_of(&root, true));
        let saved_differs = Credentials { user: Ids { saved: 0, ..Ids::all(1000) }, group: Ids::all(100) };
        assert!(!plain.may_access_memory_of(&saved_differs, true), "a target that kept a saved root uid");
        let other_group = Credentials { user: Ids::all(1000), group: Ids::all(101) };
        assert!(!plain.may_access_memory_of(&other_group, true));
        let effective_only = Credentials { user: Ids { real: 2000, ..Ids::all(1000) }, group: Ids::all(100) };
        assert!(!effective_only.may_access_memory_of(&plain, true), "the caller's real uid counts, not its effective one");
        assert!(effective_only.may_open_memory_of(&plain, true), "opening /proc/<pid>/mem counts its file-system uid");
    }

    #[test]
    fn changing_effective_or_file_system_ids_ends_dumpable() {
        let root = Credentials::root();
        let mut dropped = root;
        dropped.setresuid(UNCHANGED, 1000, UNCHANGED).unwrap();
        assert!(root.change_ends_dumpable(&dropped));
        let mut real_only = root;
        real_only.setresuid(1000, UNCHANGED, UNCHANGED).unwrap();
        assert!(!root.change_ends_dumpable(&real_only), "only the real uid moved");
        let mut group = root;
        group.setresgid(UNCHANGED, 5, UNCHANGED).unwrap();
        assert!(root.change_ends_dumpable(&group));
    }

    #[test]
    fn root_sets_anything_and_others_only_what_they_hold() {
        let mut root = Credentials::root();
        root.setuid(1000).unwrap();
        assert_eq!(root.user, Ids::all(1000), "root's setuid sets all of them");
        assert_eq!(root.setuid(0), Err(Errno::EPERM), "and there is no way back");
        let mut switching = user(1000, 0, 0);
        switching.setresuid(UNCHANGED, 1000, UNCHANGED).unwrap();
        assert_eq!(switching.user.effective, 1000);
        switching.setuid(0).unwrap();
        assert_eq!(switching.user, Ids { real: 1000, effective: 0, saved: 0, file_system: 0 }, "back through the saved id");
        assert_eq!(user(1000, 1000, 1000).setresuid(0, UNCHANGED, UNCHANGED), Err(Errno::EPERM));
        assert_eq!(user(1000, 1000, 1000).setuid(UNCHANGED), Err(Errno::EINVAL));
    }

    #[test]
    fn file_access_follows_owner_group_other_and_roots_override() {
        let alice = Accessor { uid: 1000, gid: 100, groups: &[200] };
        let root = Accessor { uid: 0, gid: 0, groups: &[] };
        assert!(may_access(&alice, 1000, 0, 0o600, false, want::READ | want::WRITE));
        assert!(!may_access(&alice, 1000, 0, 0o400, false, want::WRITE), "the owner's bits, even when others' allow");
        assert!(!may_access(&alice, 1000, 0, 0o077, false, want::READ));
        assert!(may_access(&alice, 5, 200, 0o040, false, want::READ), "a supplementary group");
        assert!(!may_access(&alice, 5, 6, 0o770, false, want::READ));
        assert!(may_access(&alice, 5, 6, 0o004, false, want::READ));
        assert!(may_access(&root, 5, 6, 0o000, false, want::READ | want::WRITE));
        assert!(!may_access(&root, 5, 6, 0o600, false, want::EXECUTE), "root executes only what has an execute bit");
        assert!(may_access(&root, 5, 6, 0o001, false, want::EXECUTE));
        assert!(may_access(&root, 5, 6, 0o000, true, want::EXECUTE), "and searches any directory");
        assert_eq!(may_chown(&alice, (1000, 100), (UNCHANGED, 200)), Ok(()));
        assert_eq!(may_chown(&alice, (1000, 100), (2000, UNCHANGED)), Err(Errno::EPERM));
        assert_eq!(may_chown(&alice, (1000, 100), (UNCHANGED, 300)), Err(Errno::EPERM));
        assert_eq!(may_chown(&alice, (5, 100), (UNCHANGED, 100)), Err(Errno::EPERM));
        assert_eq!(may_chown(&root, (5, 5), (1, 2)), Ok(()));
    }

    #[test]
    fn setreuid_moves_the_saved_id_as_linux_does() {
        let mut swapped = user(1000, 0, 0);
        swapped.setreuid(0, 1000).unwrap();
        assert_eq!(swapped.user, Ids { real: 0, effective: 1000, saved: 1000, file_system: 1000 });
        let mut plain = user(1000, 1000, 1000);
        assert_eq!(plain.setreuid(UNCHANGED, 2000), Err(Errno::EPERM));
        plain.setreuid(UNCHANGED, UNCHANGED).unwrap();
        assert_eq!(plain.user, Ids::all(1000));
    }

    #[test]
    fn file_system_ids_and_signals() {
        let mut creds = user(1000, 1000, 1000);
        assert_eq!(creds.setfsuid(2000), 1000);
        assert_eq!(creds.user.file_system, 1000, "not allowed: unchanged");
        assert_eq!(creds.setfsuid(UNCHANGED), 1000, "the query form");
        assert!(user(1000, 1000, 1000).may_signal(&user(1000, 5, 5)));
        assert!(!user(1000, 1000, 1000).may_signal(&user(2000, 2000, 2000)));
        assert!(Credentials::root().may_signal(&user(2000, 2000, 2000)));
        assert!(user(1000, 1000, 1000).may_signal(&user(5, 5, 1000)), "the target's saved id counts");
    }
}
