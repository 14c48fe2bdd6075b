//! Named pipes (FIFOs, made by `mknod`/`mkfifo`): the pipe behind each
//! FIFO inode while any of its ends is open. Opening a FIFO joins that
//! pipe as a reader or a writer (`Pipe::open_end`: waiting for the other
//! side unless `O_NONBLOCK`); when the last end closes the pipe and its
//! unread bytes go, as on Linux.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use linux_abi::Errno;
use spinlock::kernel::KernelTicketLock;
use spinlock::Level;
use vfs::InodeId;

use crate::pipes::Pipe;

/// Taken alone.
const FIFOS_LEVEL: Level = Level::new(5);

static FIFOS: KernelTicketLock<Vec<(InodeId, Weak<Pipe>)>> = KernelTicketLock::new(FIFOS_LEVEL, Vec::new());

/// The pipe of FIFO `inode`: the open one, or a new one.
pub fn pipe_of(inode: InodeId) -> Result<Arc<Pipe>, Errno> {
    let mut fifos = FIFOS.lock();
    fifos.retain(|(_, pipe)| pipe.strong_count() > 0);
    if let Some(pipe) = fifos.iter().find(|(id, _)| *id == inode).and_then(|(_, pipe)| pipe.upgrade()) {
        return Ok(pipe);
    }
    fifos.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    let pipe = Arc::new(Pipe::unopened());
    fifos.push((inode, Arc::downgrade(&pipe)));
    Ok(pipe)
}
