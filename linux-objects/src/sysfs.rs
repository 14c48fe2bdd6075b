//! `/sys`, as far as programs look at it today: the CPUs, under
//! `/sys/devices/system/cpu` — `online`, `possible` and `present` in
//! Linux's list format (`0-3`), and a `cpuN` directory for each CPU, with
//! an `online` file ("1") for all but `cpu0`, as Linux shows them. glibc's
//! `get_nprocs_conf` counts those directories and stress-ng refuses to
//! start its CPU stressors without them. Written once at boot, when the
//! CPU count is final; read-only. Nothing else of sysfs is here.

use alloc::format;

use vfs::{Errno, InodeId, Namespace};

use super::procfs::{directory, put};

/// Fills `sys` (the `/sys` directory) for `cpus` CPUs.
pub fn populate(tree: &mut Namespace, sys: InodeId, cpus: usize) -> Result<(), Errno> {
    let devices = directory(tree, sys, b"devices")?;
    let system = directory(tree, devices, b"system")?;
    let cpu = directory(tree, system, b"cpu")?;
    let mask = if cpus >= 64 { u64::MAX } else { (1u64 << cpus.max(1)) - 1 };
    let list = format!("{}\n", linux_abi::procfs_text::cpu_list(mask));
    for name in ["online", "possible", "present"] {
        put(tree, cpu, name, list.as_bytes())?;
    }
    for index in 0..cpus.max(1) {
        let this = directory(tree, cpu, format!("cpu{index}").as_bytes())?;
        if index > 0 {
            put(tree, this, "online", b"1\n")?;
        }
    }
    Ok(())
}
