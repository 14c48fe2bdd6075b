//! How the capability and memory layers' refusals reach user space: one
//! Linux errno per error (the table is in `docs/capabilities.md`).

use caps::CapError;
use vmem::VmError;

use linux_abi::Errno;

/// The errno a native call returns for `error`.
pub fn cap_errno(error: CapError) -> Errno {
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

/// The errno a native call returns when mapping or unmapping fails.
pub fn vm_errno(error: VmError) -> Errno {
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
