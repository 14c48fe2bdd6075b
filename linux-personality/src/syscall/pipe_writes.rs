//! `write`/`writev`/`pwritev2` into a pipe, staged a part at a time: the
//! caller's bytes are copied into a kernel buffer of at most
//! [`PIPE_STAGE`] bytes, that part goes into the pipe (waiting for room),
//! then the next part is copied. A writer blocked on a full pipe so holds
//! 64 KiB of kernel heap, not its whole request: staging up to 1 MiB per
//! call let a handful of blocked fuzz workers empty the 16 MiB heap, and
//! the next infallible allocation anywhere panicked the kernel (CI, stop 55).
//!
//! As Linux's `pipe_write`: a part that faults (EFAULT), finds no reader
//! (EPIPE, with SIGPIPE) or is cut short (signal, `O_NONBLOCK`, ENOMEM)
//! ends the call; bytes already in the pipe are the answer, the error only
//! when there are none. A write of at most `PIPE_BUF` bytes is one part,
//! so it stays atomic. Nothing here touches any other kind of file.

use linux_abi::Errno;

use super::files::signal_broken_pipe;
use super::vector_cursor::VectorCursor;
use super::Call;
use crate::open_files::{flags, OpenFile};
use crate::pipes::Pipe;

/// The most bytes of one pipe write held in the kernel at once.
const PIPE_STAGE: usize = 64 * 1024;

/// The most bytes one write moves (Linux's `MAX_RW_COUNT`: `INT_MAX`
/// rounded down to a page); staging lets a pipe take all of them, where
/// other files stop at `files::CHUNK`.
const MOST_BYTES: u64 = 0x7fff_f000;

/// Writes the user bytes of `segments` (`(address, length)` pairs, in
/// order, at most [`MOST_BYTES`] in all) into `pipe`; the count written.
pub(super) fn write_staged(call: &Call<'_>, file: &OpenFile, pipe: &Pipe, segments: &[(u64, u64)]) -> Result<usize, Errno> {
    let total = segments.iter().fold(0u64, |sum, (_, length)| sum.saturating_add(*length)).min(MOST_BYTES) as usize;
    let nonblocking = file.status() & flags::O_NONBLOCK != 0;
    let interrupted = || call.interrupted();
    let ended = |written: usize, error: Errno| if written > 0 { Ok(written) } else { Err(error) };
    let mut source = VectorCursor::new(segments);
    let mut written = 0;
    while written < total {
        let mut part = match super::buffers::transfer_buffer((total - written).min(PIPE_STAGE)) {
            Ok(part) => part,
            Err(error) => return ended(written, error),
        };
        if let Err(error) = fill(&mut source, call, &mut part) {
            return ended(written, error);
        }
        match signal_broken_pipe(call, pipe.write(&part, nonblocking, &interrupted)) {
            Ok(count) => {
                written += count;
                if count < part.len() {
                    break;
                }
            }
            Err(error) => return ended(written, error),
        }
    }
    Ok(written)
}

/// Fills `part` with the next bytes of `source` (the caller asks for no
/// more than remain).
fn fill(source: &mut VectorCursor<'_>, call: &Call<'_>, part: &mut [u8]) -> Result<(), Errno> {
    let mut filled = 0;
    while filled < part.len() {
        let Some((address, left)) = source.current() else { return Err(Errno::EFAULT) };
        let take = (left as usize).min(part.len() - filled);
        call.read_in(address, &mut part[filled..filled + take])?;
        filled += take;
        source.advance(take as u64);
    }
    Ok(())
}
