//! `UserPtr<T>`: a system-call argument that is a user address of a `T`,
//! decoded from its register once; reading one decodes and checks the
//! value (`linux-abi`'s `UserValue`), writing one encodes it. Both go
//! through the process's checked user memory: a bad address is EFAULT.

use core::marker::PhantomData;

use linux_abi::{Errno, UserValue};

use super::Call;

/// The largest value a `UserPtr` moves (a `timespec` pair fits).
const MAX_VALUE_BYTES: usize = 64;

/// A user address of a `T`.
pub struct UserPtr<T> {
    address: u64,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for UserPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for UserPtr<T> {}

impl<T: UserValue> UserPtr<T> {
    /// The pointer in argument `index`; `None` when it is NULL.
    pub fn argument(call: &Call<'_>, index: usize) -> Option<Self> {
        let address = call.argument(index);
        (address != 0).then_some(Self { address, value: PhantomData })
    }

    /// A pointer saved earlier (`restart_syscall`'s); `None` for 0.
    pub fn at(address: u64) -> Option<Self> {
        (address != 0).then_some(Self { address, value: PhantomData })
    }

    /// The user address it points at.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Reads and checks the value.
    pub fn read(&self, call: &Call<'_>) -> Result<T, Errno> {
        let mut bytes = [0u8; MAX_VALUE_BYTES];
        let bytes = bytes.get_mut(..T::SIZE).ok_or(Errno::EINVAL)?;
        call.read_in(self.address, bytes)?;
        T::decode(bytes)
    }

    /// Writes `value`.
    pub fn write(&self, call: &Call<'_>, value: &T) -> Result<(), Errno> {
        let mut bytes = [0u8; MAX_VALUE_BYTES];
        let bytes = bytes.get_mut(..T::SIZE).ok_or(Errno::EINVAL)?;
        value.encode(bytes);
        call.write_out(self.address, bytes)
    }
}
