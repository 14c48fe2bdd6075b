//! Lamina's page cache, as logic the host can test: an index of which page
//! of which file is held in which page handle (the kernel's handles are
//! memory objects, each one frame charged to the container that read it),
//! a clock that picks the pages to let go when memory runs short, and a
//! mark on the pages that may hold stores not yet written back (pages a
//! process maps shared and writable).
//!
//! **Provides** [`PageCache`]: pages by file key and page index, kept in
//! runs of [`RUN_PAGES`]; files *held* while a process maps them shared
//! (their entry, and so their pages, stay until the kernel lets the file
//! go); [`PageCache::choose_victims`], a clock (second chance) over every
//! page, which takes only pages that were not used since the hand last
//! passed, carry no mark and that the caller says nobody else uses.
//!
//! **Relies on** the caller for everything about the pages themselves: it
//! fills them, copies through them, maps them, frees what this index lets
//! go (every removal hands the page back to the caller), and keeps the
//! index consistent with the files (a write copies into the cached pages,
//! a truncation removes or zeroes them, a freed inode or an unmounted file
//! system drops its entries).
//!
//! **Must never** panic on any key, index or order of calls, nor lose or
//! duplicate a page: each page given to [`PageCache::add`] comes back to
//! the caller exactly once (refused at once, or later from a removal).
//! Running out of memory for the index refuses the one addition
//! ([`NoRoom`]). It has no locks: the kernel keeps it behind one.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(test)]
extern crate std;

mod cache;
#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;

pub use cache::{Added, NoRoom, PageCache, Statistics, RUN_PAGES};
