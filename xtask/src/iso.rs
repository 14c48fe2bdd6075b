//! `cargo xtask iso`: a GRUB rescue CD (BIOS and UEFI) that boots the normal
//! kernel through multiboot2 with the console on COM1.

use crate::dependencies::ensure_dependencies;
use crate::failure::{Context, Outcome};
use crate::kernel_build::{build_kernel, ImageKind};
use crate::workspace;
use std::path::{Path, PathBuf};
use std::process::Command;

/// GRUB's configuration: no menu delay, everything on the serial port.
pub const GRUB_CONFIGURATION: &str = "\
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
menuentry \"Lamina\" {
    multiboot2 /boot/lamina
    boot
}
";

/// Where the CD image is written.
pub fn iso_path() -> PathBuf {
    workspace::target_directory().join("lamina.iso")
}

/// Builds the kernel and the CD image; returns the image's path.
pub fn build_iso() -> Outcome<PathBuf> {
    ensure_dependencies()?;
    let kernel = build_kernel(ImageKind::Normal)?;
    let tree = workspace::target_directory().join("iso");
    lay_out_tree(&tree, &kernel)?;
    let iso = iso_path();
    let mut command = Command::new("grub-mkrescue");
    command.arg("-o").arg(&iso).arg(&tree);
    workspace::run_to_completion(&mut command)?;
    Ok(iso)
}

/// `tree/boot/lamina` and `tree/boot/grub/grub.cfg`.
fn lay_out_tree(tree: &Path, kernel: &Path) -> Outcome {
    let grub_directory = tree.join("boot").join("grub");
    std::fs::create_dir_all(&grub_directory)
        .context(|| format!("cannot create {}", grub_directory.display()))?;
    let kernel_copy = tree.join("boot").join("lamina");
    std::fs::copy(kernel, &kernel_copy)
        .context(|| format!("cannot copy the kernel to {}", kernel_copy.display()))?;
    let configuration = grub_directory.join("grub.cfg");
    std::fs::write(&configuration, GRUB_CONFIGURATION)
        .context(|| format!("cannot write {}", configuration.display()))
}

/// `cargo xtask iso`.
pub fn iso_command() -> Outcome {
    let iso = build_iso()?;
    println!("{}", iso.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grub_boots_at_once_on_the_serial_console() {
        let lines: Vec<&str> = GRUB_CONFIGURATION.lines().map(str::trim).collect();
        for expected in [
            "set timeout=0",
            "serial --unit=0 --speed=115200",
            "terminal_input serial console",
            "terminal_output serial console",
            "multiboot2 /boot/lamina",
            "boot",
        ] {
            assert!(lines.contains(&expected), "missing `{expected}`");
        }
    }

    #[test]
    fn the_tree_holds_the_kernel_and_the_configuration() {
        let tree = std::env::temp_dir().join(format!("xtask-iso-test-{}", std::process::id()));
        let kernel = tree.with_extension("kernel");
        std::fs::write(&kernel, b"ELF").unwrap();
        lay_out_tree(&tree, &kernel).unwrap();
        assert_eq!(std::fs::read(tree.join("boot/lamina")).unwrap(), b"ELF");
        assert!(std::fs::read_to_string(tree.join("boot/grub/grub.cfg"))
            .unwrap()
            .contains("multiboot2"));
        std::fs::remove_dir_all(&tree).unwrap();
        std::fs::remove_file(&kernel).unwrap();
    }
}
