//! SMAP and SMEP at work, not only switched on (issue 23): a space of our
//! own maps a data page and a code page (a single `ret`) at user
//! addresses; with it loaded, the kernel's read of the data page with
//! SMAP's window shut faults, the same read with the window open (the
//! kernel's user copy) returns the bytes, and a kernel call into the code
//! page faults on its fetch (SMEP). The faults are recovered by
//! `machine::protection_probes`; each is a protection fault on a present
//! page, so the mapping is not what stops the access.

use alloc::format;
use alloc::string::String;

use machine::frame_access::read_user_on_root;
use machine::protection_probes::{call_user, read_user_shut, Probe};
use machine::{cpu, paging};

use super::small_space::{SmallSpace, USER_WRITABLE};
use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

/// Where the two pages go: 4 MiB, then the next page.
const DATA: u64 = 0x40_0000;
const CODE: u64 = DATA + 4096;

/// A space mapping the two pages (a data page and a `ret`).
fn two_pages() -> Result<SmallSpace, String> {
    let mut space = SmallSpace::new()?;
    let directory_pointers = space.link(space.root, 0, USER_WRITABLE)?;
    let directory = space.link(directory_pointers, 0, USER_WRITABLE)?;
    let leaves = space.link(directory, 2, USER_WRITABLE)?;
    space.link(leaves, 0, USER_WRITABLE)?;
    space.link(leaves, 1, USER_WRITABLE)?;
    check(space.tables.write_user(DATA, b"user data"), || "the data page could not be filled".into())?;
    check(space.tables.write_user(CODE, &[0xc3]), || "the code page could not be filled".into())?;
    Ok(space)
}

pub fn smap_and_smep_stop_the_kernel_at_user_pages(_facts: &SystemFacts) -> Outcome {
    let space = two_pages()?;
    let (shut, open, called, bytes) = {
        let _off = cpu::InterruptsOff::new();
        if !paging::switch_address_space(space.tables.token()) {
            paging::switch_to_kernel_tables();
            space.tear_down()?;
            return Err("the test's space could not be loaded".into());
        }
        let mut shut_bytes = [0u8; 9];
        let shut = read_user_shut(space.root, DATA, &mut shut_bytes);
        let mut bytes = [0u8; 9];
        let open = read_user_on_root(space.root, DATA, &mut bytes);
        let called = call_user(space.root, CODE);
        paging::switch_to_kernel_tables();
        (shut, open, called, bytes)
    };
    space.tear_down()?;
    check(open && &bytes == b"user data", || format!("the kernel's user copy (window open) failed: {open}, {bytes:?}"))?;
    check(shut == Probe::Blocked, || format!("a read of a present user page with SMAP's window shut: {shut:?}"))?;
    check(called == Probe::Blocked, || format!("a kernel call into a present user code page: {called:?}"))
}

crate::kernel_tests! {
    "protection_faults" => [
        smap_and_smep_stop_the_kernel_at_user_pages,
    ],
}
