//! Allocation-failure injection in the running kernel (issue 23): the
//! kernel's one set of [`FailPoints`], the question each allocation site
//! asks, and the report a driver reads.
//!
//! Only threads marked injectable (a workload under test, and the threads
//! it creates) are ever failed or recorded: the rest of the kernel runs as
//! usual while a driver walks the workload's paths. When the points are
//! off, an allocation pays one relaxed load. Must never allocate or take a
//! lock on the question's path beyond the scheduler's own `current`.

use alloc::string::String;
use core::fmt::Write;

use fail_points::{FailPoints, Path, Site, DEPTH};

pub use fail_points::Site as AllocationSite;

/// Paths one recording can keep.
const PATHS: usize = 1024;

/// The most report text made (the rest is cut).
const REPORT_LIMIT: usize = 256 * 1024;

/// The kernel's fail points.
pub static FAIL_POINTS: FailPoints<PATHS> = FailPoints::new();

/// Whether the allocation at `site` that is being made now must fail.
#[inline]
pub fn should_fail(site: Site) -> bool {
    if FAIL_POINTS.is_off() {
        return false;
    }
    should_fail_slow(site)
}

/// [`should_fail`] for a site whose call chain alone does not tell its
/// paths apart (one check at the system-call dispatch, say): `tag` (the
/// call's number) is part of the path.
#[inline]
pub fn should_fail_tagged(site: Site, tag: u64) -> bool {
    if FAIL_POINTS.is_off() {
        return false;
    }
    should_fail_slow_tagged(site, Some(tag))
}

#[inline(never)]
fn should_fail_slow(site: Site) -> bool {
    should_fail_slow_tagged(site, None)
}

#[inline(never)]
fn should_fail_slow_tagged(site: Site, tag: Option<u64>) -> bool {
    if !sched::current_is_injectable() {
        return false;
    }
    let mut callers = [0u64; DEPTH];
    machine::backtrace::current_return_addresses(&mut callers);
    // The innermost caller is this file's own: the tag takes its place.
    if let Some(tag) = tag {
        callers[0] = tag;
    }
    FAIL_POINTS.should_fail(site, &callers)
}

/// The recorded paths as text, one per line: the hash (what a driver
/// arms), the site, the hits, then each caller as `symbol+offset`,
/// innermost first. A last line counts what the table could not keep.
pub fn report() -> String {
    let symbols = machine::symbols::SymbolTable::parse(machine::layout::kernel_symbols());
    let mut text = String::new();
    for path in FAIL_POINTS.paths() {
        if text.len() > REPORT_LIMIT {
            text.push_str("truncated\n");
            break;
        }
        describe(&mut text, &path, symbols.as_ref());
    }
    let _ = writeln!(text, "overflow {}", FAIL_POINTS.overflow());
    text
}

fn describe(text: &mut String, path: &Path, symbols: Option<&machine::symbols::SymbolTable<'_>>) {
    let _ = write!(text, "{:016x} {} {}", path.hash, path.site.name(), path.hits);
    for caller in path.callers.iter().take_while(|caller| **caller != 0) {
        if *caller < 0x1000 {
            // A tag (a system call's number), not an address.
            let _ = write!(text, " call#{caller}");
            continue;
        }
        match symbols.and_then(|table| table.lookup(caller - 1)) {
            Some((symbol, offset)) => {
                let _ = write!(text, " {}+{offset:#x}", symbol.name);
            }
            None => {
                let _ = write!(text, " {caller:#x}");
            }
        }
    }
    text.push('\n');
}
