//! `MessageBuffer`: a receiver's page, lent to a channel for one receive.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::IpcError;

/// The longest message: one page.
pub const MAX_MESSAGE_LENGTH: usize = 4096;

/// What a receive lends to a channel: a page for the sender to copy into.
pub(crate) type Page = [u8; MAX_MESSAGE_LENGTH];

/// A page-sized buffer that receives one message at a time.
///
/// [`Channel::recv`](crate::Channel::recv) moves the page (a pointer, not
/// its bytes) into the channel, where a sender copies its message straight
/// into it, and moves it back with the message: the one copy of the
/// payload. Allocate buffers once and reuse them.
pub struct MessageBuffer {
    /// Always `Some` outside `recv` (which holds `&mut self` meanwhile, so
    /// nobody can see the gap).
    page: Option<Box<Page>>,
    /// Bytes of the last message received.
    length: usize,
}

impl MessageBuffer {
    /// A zeroed buffer holding an empty message; aborts on heap exhaustion
    /// like any allocation. See [`try_new`](Self::try_new).
    pub fn new() -> Self {
        Self::from_bytes(alloc::vec![0; MAX_MESSAGE_LENGTH])
    }

    /// A zeroed buffer, or [`IpcError::OutOfMemory`] when the heap has no
    /// page left.
    pub fn try_new() -> Result<Self, IpcError> {
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(MAX_MESSAGE_LENGTH)
            .map_err(|_| IpcError::OutOfMemory)?;
        bytes.resize(MAX_MESSAGE_LENGTH, 0);
        Ok(Self::from_bytes(bytes))
    }

    /// The last message received (empty before the first).
    pub fn message(&self) -> &[u8] {
        &self.page()[..self.length]
    }

    /// The length of the last message received.
    pub fn len(&self) -> usize {
        self.length
    }

    /// Whether the last message received was empty.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Lends the page out for a receive.
    pub(crate) fn lend_page(&mut self) -> Box<Page> {
        self.length = 0;
        self.page.take().expect(OUTSIDE_RECV)
    }

    /// Takes the page back, holding a message of `length` bytes.
    pub(crate) fn return_page(&mut self, page: Box<Page>, length: usize) {
        debug_assert!(length <= MAX_MESSAGE_LENGTH);
        self.page = Some(page);
        self.length = length;
    }

    fn from_bytes(bytes: Vec<u8>) -> Self {
        let page: Box<Page> = bytes
            .into_boxed_slice()
            .try_into()
            .expect("a vector of MAX_MESSAGE_LENGTH bytes makes a page");
        Self {
            page: Some(page),
            length: 0,
        }
    }

    fn page(&self) -> &Page {
        self.page.as_ref().expect(OUTSIDE_RECV)
    }
}

const OUTSIDE_RECV: &str = "a MessageBuffer holds its page whenever no recv has it";

impl Default for MessageBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MessageBuffer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("MessageBuffer")
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}
