//! The modules a Linux guest loads before its program runs: Debian's
//! kernel builds virtio, virtio-blk and ext4 as modules, so `--disk` on
//! `--linux` carries them (from the kernel package `linux_kernel`
//! unpacked) in its initramfs, each after the modules it depends on, and
//! `/init` loads the ones `/etc/lamina-modules` lists, in order.
//!
//! Must never guess an order: dependencies come from each module's own
//! `.modinfo` (`depends=`), and a missing module is an error.

use crate::failure::{Context, Failure, Outcome};
use crate::guest_files::GuestFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where `/init` looks for the list.
pub const MODULE_LIST: &str = "/etc/lamina-modules";
/// What a disk needs: the PCI transport, the block driver, ext4 and the
/// checksum it asks the crypto layer for at mount.
pub const DISK_MODULES: [&str; 4] = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"];

/// The modules `wanted` need, in load order, as guest files under
/// `/lib/modules/`, and the list naming them (a host file written under
/// `scratch`).
pub fn guest_files(wanted: &[&str], scratch: &Path) -> Outcome<Vec<GuestFile>> {
    let index = module_index()?;
    let mut order = Vec::new();
    for name in wanted {
        visit(name, &index, &mut order, 0)?;
    }
    let mut files: Vec<GuestFile> = order.iter().map(|name| GuestFile { host: index[name].clone(), guest: format!("/lib/modules/{name}.ko") }).collect();
    let list: String = order.iter().map(|name| format!("/lib/modules/{name}.ko\n")).collect();
    let list_path = scratch.join("lamina-modules");
    std::fs::write(&list_path, list).context(|| format!("writing {}", list_path.display()))?;
    files.push(GuestFile { host: list_path, guest: MODULE_LIST.to_string() });
    Ok(files)
}

/// Depth-first: dependencies before the module.
fn visit(name: &str, index: &HashMap<String, PathBuf>, order: &mut Vec<String>, depth: usize) -> Outcome {
    if order.iter().any(|done| done == name) {
        return Ok(());
    }
    if depth > 32 {
        return Err(Failure::failed(format!("module dependencies of {name} loop")));
    }
    let path = index.get(name).ok_or_else(|| Failure::failed(format!("Debian's kernel package has no module {name}")))?;
    for dependency in dependencies(path)? {
        visit(&dependency, index, order, depth + 1)?;
    }
    order.push(name.to_string());
    Ok(())
}

/// Every `.ko` of the unpacked kernel package by module name (`-` read as `_`).
fn module_index() -> Outcome<HashMap<String, PathBuf>> {
    crate::linux_kernel::vmlinux()?;
    let modules = crate::workspace::root().join("target/linux/root/lib/modules");
    let mut index = HashMap::new();
    let mut pending = vec![modules.clone()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).context(|| format!("listing {}", directory.display()))?.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Some(name) = path.file_name().and_then(|name| name.to_str()).and_then(|name| name.strip_suffix(".ko")) {
                index.insert(name.replace('-', "_"), path);
            }
        }
    }
    if index.is_empty() {
        return Err(Failure::failed(format!("no modules under {}", modules.display())));
    }
    Ok(index)
}

/// The `depends=` of a module's `.modinfo`.
fn dependencies(path: &Path) -> Outcome<Vec<String>> {
    let bytes = std::fs::read(path).context(|| format!("reading {}", path.display()))?;
    Ok(modinfo_dependencies(&bytes))
}

fn modinfo_dependencies(bytes: &[u8]) -> Vec<String> {
    let key = b"\0depends=";
    let Some(start) = bytes.windows(key.len()).position(|window| window == key) else { return Vec::new() };
    let value = &bytes[start + key.len()..];
    let end = value.iter().position(|&byte| byte == 0).unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end]).split(',').filter(|name| !name.is_empty()).map(|name| name.replace('-', "_")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_come_from_the_modinfo_string() {
        let bytes = b"\x7fELF...\0license=GPL\0depends=virtio,virtio_ring\0vermagic=6.1\0";
        assert_eq!(modinfo_dependencies(bytes), ["virtio", "virtio_ring"]);
        assert!(modinfo_dependencies(b"\0depends=\0").is_empty());
        assert!(modinfo_dependencies(b"no modinfo").is_empty());
    }
}
