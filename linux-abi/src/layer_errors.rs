//! How the capability and memory layers' refusals reach Linux programs:
//! one errno per error, the one conversion every caller uses (the table
//! is in `docs/capabilities.md`).

use caps::CapError;
use vmem::VmError;

use crate::Errno;

impl From<CapError> for Errno {
    fn from(error: CapError) -> Self {
        match error {
            CapError::EmptySlot | CapError::Revoked | CapError::SlotOutOfRange => Errno::EBADF,
            CapError::MissingRights(_) => Errno::EACCES,
            CapError::NotOffered => Errno::EPERM,
            CapError::NoSuchSpace | CapError::TargetGone => Errno::ESRCH,
            CapError::InRevocation | CapError::InUse => Errno::EBUSY,
            CapError::SlotInUse => Errno::EEXIST,
            CapError::SpaceFull => Errno::EMFILE,
            CapError::WrongKind { .. } | CapError::BadRange | CapError::NotInUse => Errno::EINVAL,
            CapError::OutOfMemory => Errno::ENOMEM,
        }
    }
}

impl From<VmError> for Errno {
    fn from(error: VmError) -> Self {
        match error {
            VmError::OutOfMemory => Errno::ENOMEM,
            VmError::AlreadyMapped => Errno::EEXIST,
            VmError::WriteAndExecute
            | VmError::UnsupportedRights
            | VmError::Misaligned
            | VmError::OutOfRange
            | VmError::NotMapped
            | VmError::UnknownFrame => Errno::EINVAL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_errors_are_the_ones_linux_gives() {
        assert_eq!(Errno::from(CapError::EmptySlot), Errno::EBADF);
        assert_eq!(Errno::from(CapError::SlotOutOfRange), Errno::EBADF);
        assert_eq!(Errno::from(CapError::SpaceFull), Errno::EMFILE);
        assert_eq!(Errno::from(CapError::OutOfMemory), Errno::ENOMEM);
        assert_eq!(Errno::from(VmError::OutOfMemory), Errno::ENOMEM);
        assert_eq!(Errno::from(VmError::Misaligned), Errno::EINVAL);
    }
}
