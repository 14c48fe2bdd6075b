//! `flock(2)`: the machine's table of whole-file advisory locks
//! (`linux_abi::flock_table`, host-tested) under one lock, and the
//! condition that refused blocking callers wait on — interruptibly, so a
//! signal ends the wait (restarting the call after an `SA_RESTART`
//! handler). A description's locks go when it is dropped (`open_files`).

use linux_abi::flock_table::{FlockKind, FlockRefused, FlockTable};
use linux_abi::restart::ERESTARTSYS;
use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use sync::{Condvar, KernelBlocking, Slept};

/// The pipes' level: a condition variable's user lock, above the wait
/// queues' (5).
const FLOCK_LEVEL: Level = Level::new(8);

static TABLE: KernelTicketLock<FlockTable> = KernelTicketLock::new(FLOCK_LEVEL, FlockTable::new());
static CHANGED: Condvar<KernelBlocking> = Condvar::new();

/// Locks `file` for `description` (waiting, unless `nonblocking`, until
/// no other description holds a conflicting lock; `interrupted` ends the
/// wait).
pub fn lock(file: u64, description: usize, kind: FlockKind, nonblocking: bool, interrupted: &dyn Fn() -> bool) -> Result<(), Errno> {
    let mut table = TABLE.lock();
    loop {
        match table.lock(file, description, kind) {
            Ok(()) => return Ok(()),
            Err(FlockRefused::OutOfMemory) => return Err(Errno::ENOMEM),
            Err(FlockRefused::Conflict) if nonblocking => return Err(Errno::EAGAIN),
            Err(FlockRefused::Conflict) => {
                if interrupted() {
                    return Err(ERESTARTSYS);
                }
                let (guard, slept) = CHANGED.wait_interruptible(table, &TABLE, interrupted);
                table = guard;
                if slept == Slept::Interrupted {
                    return Err(ERESTARTSYS);
                }
            }
        }
    }
}

/// Drops `description`'s lock on `file`.
pub fn unlock(file: u64, description: usize) {
    TABLE.lock().unlock(file, description);
    CHANGED.broadcast();
}

/// Drops every lock of `description` (its last descriptor is gone).
pub fn release(description: usize) {
    // Only a release that freed a lock can let a waiter in.
    if TABLE.lock().release(description) {
        CHANGED.broadcast();
    }
}
