//! The vDSO every program gets: the image built from `vdso/vdso.c` (see
//! `build.rs`) and its data page, each one memory object made once at
//! boot and mapped into every new program at the top of its mmap area
//! ([`data_page_address`]) — the data page read-only, the image
//! read-and-execute in the page after it, which `AT_SYSINFO_EHDR` names. Programs then read the clocks without a
//! system call.
//!
//! The data page's fixed words are written before any program runs; the
//! one word that changes, the realtime epoch, is stored whole
//! ([`memory_objects::store_u64`]) by [`publish_epoch`], which `clock.rs`
//! calls under its lock, so the page and the kernel never disagree for
//! long and a reader never sees half a value. Must never map the objects
//! writable or free them: they live as long as the kernel.

use core::sync::atomic::{AtomicU64, Ordering};

use containers::ContainerId;
use kernel_objects::address_spaces::KernelSpace;
use kernel_objects::capabilities::memory_objects;
use linux_abi::vdso::{data_page_address, fixed_words, BOOT_EPOCH_OFFSET, VDSO_MAX_PAGES};
use linux_abi::Errno;
use vmem::{Rights, PAGE_SIZE};

/// The image, as `build.rs` linked it.
static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vdso.so"));

/// The memory objects' handles (0: not installed; a handle is never 0).
static DATA_PAGE: AtomicU64 = AtomicU64::new(0);
static CODE: AtomicU64 = AtomicU64::new(0);

/// Makes the two objects, charged to `container` (the boot's), and fills
/// them. Without them programs simply get no vDSO.
pub fn install(container: ContainerId, boot_epoch: u64) -> Result<(), Errno> {
    let pages = (IMAGE.len() as u64).div_ceil(PAGE_SIZE);
    if pages == 0 || pages > VDSO_MAX_PAGES {
        return Err(Errno::ENOEXEC);
    }
    let code = memory_objects::create(container, pages)?;
    memory_objects::write(code, 0, IMAGE)?;
    let data = memory_objects::create(container, 1)?;
    memory_objects::write(data, 0, &fixed_words(machine::timer::boot_timestamp(), machine::timer::tsc_per_millisecond()))?;
    memory_objects::store_u64(data, BOOT_EPOCH_OFFSET, boot_epoch)?;
    CODE.store(code, Ordering::Release);
    DATA_PAGE.store(data, Ordering::Release);
    Ok(())
}

/// Maps the data page and the image into a program being built whose
/// mmap area's top is `mmap_top`; the address for `AT_SYSINFO_EHDR`, or
/// `None` when there is no vDSO. The region is below `mmap_top` either way
/// ([`data_page_address`]: where the program's own mappings start).
pub fn map_into(space: &mut KernelSpace, mmap_top: u64) -> Result<Option<u64>, Errno> {
    let (data, code) = (DATA_PAGE.load(Ordering::Acquire), CODE.load(Ordering::Acquire));
    if data == 0 || code == 0 {
        return Ok(None);
    }
    let data_address = data_page_address(mmap_top);
    memory_objects::map_into_space(space, data_address, data, Rights::READ)?;
    memory_objects::map_into_space(space, data_address + PAGE_SIZE, code, Rights::READ_EXECUTE)?;
    Ok(Some(data_address + PAGE_SIZE))
}

/// Tells the vDSO the realtime epoch changed (`clock.rs`, under its lock).
pub fn publish_epoch(boot_epoch: u64) {
    let data = DATA_PAGE.load(Ordering::Acquire);
    if data != 0 {
        // A live object and an aligned offset inside it: cannot fail.
        let _ = memory_objects::store_u64(data, BOOT_EPOCH_OFFSET, boot_epoch);
    }
}
