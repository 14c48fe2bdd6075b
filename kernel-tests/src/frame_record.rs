//! The machine's record of every frame, checked on the real machine: a
//! frame in use cannot be claimed again, a space's tables refuse entries
//! naming frames the space does not own (or in the kernel half, or in
//! another space's tables), and a root goes back only when no CPU has it
//! loaded — after which its token is refused.

use alloc::format;
use alloc::string::String;

use frames::{FrameNumber, PhysicalAddress};
use machine::frame_access::{Frame, SpaceTables};
use machine::{cpu, layout, paging};

use super::runner::{check, Outcome};
use kernel_objects::physical_memory::{allocate_frame, frames};
use kernel_objects::SystemFacts;

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
const USER: u64 = 1 << 2;

/// A frame straight from the allocator, claimed from the machine's record.
pub(crate) fn claimed_frame() -> Result<Frame, String> {
    let number = frames().ok_or("no allocator")?.allocate().map_err(|error| format!("allocating: {error}"))?;
    Frame::claim(number.start_address().0).ok_or_else(|| format!("the allocator's free frame {number:?} could not be claimed"))
}

/// Gives a claimed frame back to the machine's record and the allocator.
pub(crate) fn give_back(frame: Frame) -> Outcome {
    let number = FrameNumber::containing(PhysicalAddress(frame.release()));
    frames().ok_or("no allocator")?.free(number).map_err(|error| format!("freeing {number:?}: {error}"))
}

pub fn a_frame_in_use_cannot_be_claimed_again(_facts: &SystemFacts) -> Outcome {
    let held = allocate_frame().map_err(|error| format!("kernel frame: {error}"))?;
    let address = held.number().start_address().0;
    check(Frame::claim(address).is_none(), || format!("a held frame {address:#x} was claimed a second time"))?;
    let image = layout::kernel_physical().start;
    check(Frame::claim(image).is_none(), || format!("the kernel image's frame {image:#x} was claimed"))?;
    check(Frame::claim(address + 1).is_none(), || "a misaligned address was claimed".into())?;
    drop(held);
    Ok(())
}

pub fn page_tables_refuse_frames_the_space_does_not_own(_facts: &SystemFacts) -> Outcome {
    let mut tables = SpaceTables::new();
    let root = tables.install_root(claimed_frame()?).map_err(|_| "the root was refused")?;
    let foreign = allocate_frame().map_err(|error| format!("kernel frame: {error}"))?;
    let foreign_address = foreign.number().start_address().0;
    let entry = |frame: u64| frame | PRESENT | WRITABLE | USER;
    check(!tables.write_entry(root, 0, entry(foreign_address)), || "a root entry named a frame another handle holds".into())?;
    check(!tables.write_entry(root, 0, entry(layout::kernel_physical().start)), || "a root entry named the kernel image".into())?;
    check(!tables.write_entry(root, 300, 0), || "an entry of the root's kernel half was written".into())?;
    let child = tables.adopt(claimed_frame()?);
    check(tables.zero(child), || "an adopted frame could not be zeroed".into())?;
    check(tables.write_entry(root, 0, entry(child)), || "a root entry naming an adopted frame was refused".into())?;
    check(tables.read_entry(root, 0) == entry(child), || "the entry written is not there".into())?;
    check(!tables.write_entry(root, 1, entry(child)), || "a table got a second parent".into())?;
    check(tables.reclaim(child).is_none(), || "a linked table was given back".into())?;
    let other = SpaceTables::new();
    check(!other.write_entry(root, 2, 0), || "another space wrote this space's root".into())?;
    check(other.read_entry(root, 0) == 0, || "another space read this space's root".into())?;
    let mut byte = [0u8; 1];
    check(!tables.read_user(0x40_0000, &mut byte), || "a copy read a page the space does not map".into())?;
    check(tables.write_entry(root, 0, 0), || "emptying the root entry was refused".into())?;
    let child = tables.reclaim(child).ok_or("the unlinked table was not given back")?;
    give_back(child)?;
    let root = tables.reclaim(root).ok_or("the root was not given back")?;
    give_back(root)?;
    drop(foreign);
    Ok(())
}

pub fn a_loaded_root_stays_and_a_token_outliving_its_root_is_refused(_facts: &SystemFacts) -> Outcome {
    let mut tables = SpaceTables::new();
    let root = tables.install_root(claimed_frame()?).map_err(|_| "the root was refused")?;
    let token = tables.token();
    {
        // One CPU throughout: its record of the root it loaded is the one read.
        let _off = cpu::InterruptsOff::new();
        check(paging::switch_address_space(token), || "the space's own root could not be loaded".into())?;
        let refused = tables.reclaim(root);
        paging::switch_to_kernel_tables();
        if let Some(frame) = refused {
            give_back(frame)?;
            return Err("a root this CPU has loaded was given back".into());
        }
    }
    let frame = tables.reclaim(root).ok_or("the root was not given back once unloaded")?;
    give_back(frame)?;
    let _off = cpu::InterruptsOff::new();
    let loaded = paging::switch_address_space(token);
    paging::switch_to_kernel_tables();
    check(!loaded, || "a token whose root was given back was loaded".into())
}

crate::kernel_tests! {
    "frame_record" => [
        a_frame_in_use_cannot_be_claimed_again,
        page_tables_refuse_frames_the_space_does_not_own,
        a_loaded_root_stays_and_a_token_outliving_its_root_is_refused,
    ],
}
