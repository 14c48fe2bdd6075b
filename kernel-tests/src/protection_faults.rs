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
use alloc::vec::Vec;

use machine::frame_access::{read_user_on_root, SpaceTables};
use machine::protection_probes::{call_user, read_user_shut, Probe};
use machine::{cpu, paging};

use super::frame_record::{claimed_frame, give_back};
use super::runner::{check, Outcome};
use kernel_objects::SystemFacts;

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
const USER: u64 = 1 << 2;
/// Where the two pages go: 4 MiB, then the next page.
const DATA: u64 = 0x40_0000;
const CODE: u64 = DATA + 4096;

/// The tables of the two pages: (table, index, frame it names), from the
/// root down, in the order they were linked.
struct TwoPages {
    tables: SpaceTables,
    root: u64,
    links: Vec<(u64, usize, u64)>,
}

impl TwoPages {
    fn build() -> Result<Self, String> {
        let mut tables = SpaceTables::new();
        let root = tables.install_root(claimed_frame()?).map_err(|_| "the root was refused")?;
        let mut space = TwoPages { tables, root, links: Vec::new() };
        let directory_pointers = space.link(root, 0, PRESENT | WRITABLE | USER)?;
        let directory = space.link(directory_pointers, 0, PRESENT | WRITABLE | USER)?;
        let leaves = space.link(directory, 2, PRESENT | WRITABLE | USER)?;
        space.link(leaves, 0, PRESENT | WRITABLE | USER)?;
        space.link(leaves, 1, PRESENT | WRITABLE | USER)?;
        check(space.tables.write_user(DATA, b"user data"), || "the data page could not be filled".into())?;
        check(space.tables.write_user(CODE, &[0xc3]), || "the code page could not be filled".into())?;
        Ok(space)
    }

    /// A zeroed frame of the space, named by entry `index` of `table`.
    fn link(&mut self, table: u64, index: usize, bits: u64) -> Result<u64, String> {
        let frame = self.tables.adopt(claimed_frame()?);
        check(self.tables.zero(frame), || "a new frame could not be zeroed".into())?;
        check(self.tables.write_entry(table, index, frame | bits), || format!("entry {index} of {table:#x} was refused"))?;
        self.links.push((table, index, frame));
        Ok(frame)
    }

    /// Unlinks and gives back every frame, the leaves first, then the root.
    fn tear_down(self) -> Outcome {
        for &(table, index, frame) in self.links.iter().rev() {
            check(self.tables.write_entry(table, index, 0), || format!("entry {index} of {table:#x} could not be emptied"))?;
            give_back(self.tables.reclaim(frame).ok_or("an unlinked frame was not given back")?)?;
        }
        give_back(self.tables.reclaim(self.root).ok_or("the root was not given back")?)
    }
}

pub fn smap_and_smep_stop_the_kernel_at_user_pages(_facts: &SystemFacts) -> Outcome {
    let space = TwoPages::build()?;
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
