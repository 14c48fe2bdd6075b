//! `cargo xtask deps`: checks that the host has the programs and firmware the
//! other subcommands use, and installs the missing Debian packages when run as
//! root (otherwise prints the command to run).

use crate::failure::{Context, Failure, Outcome};
use crate::workspace;
use object::Object;
use std::path::Path;
use std::process::Command;

/// How to tell that a requirement is met.
#[derive(Debug, Clone, Copy)]
enum Presence {
    /// A program found on `PATH`.
    Program(&'static str),
    /// A file or folder at a fixed path.
    File(&'static str),
    /// A statically linked executable (it goes into the guest's initramfs).
    StaticExecutable(&'static str),
}

/// One thing the host must have, and the Debian package that provides it.
struct Requirement {
    presence: Presence,
    package: &'static str,
}

const fn needs(presence: Presence, package: &'static str) -> Requirement {
    Requirement { presence, package }
}

const REQUIREMENTS: &[Requirement] = &[
    needs(Presence::Program("qemu-system-x86_64"), "qemu-system-x86"),
    needs(
        Presence::File("/usr/share/qemu/qboot.rom"),
        "qemu-system-data",
    ),
    needs(Presence::File("/usr/share/ovmf/OVMF.fd"), "ovmf"),
    needs(Presence::Program("grub-mkrescue"), "grub-common"),
    needs(Presence::File("/usr/lib/grub/i386-pc"), "grub-pc-bin"),
    needs(
        Presence::File("/usr/lib/grub/x86_64-efi"),
        "grub-efi-amd64-bin",
    ),
    needs(Presence::Program("xorriso"), "xorriso"),
    needs(Presence::Program("mformat"), "mtools"),
    needs(Presence::StaticExecutable("/bin/busybox"), "busybox-static"),
    needs(Presence::Program("musl-gcc"), "musl-tools"),
    // Linux's UAPI headers for guest C programs (`<linux/kvm.h>`).
    needs(Presence::File("/usr/include/linux/kvm.h"), "linux-libc-dev"),
    // The kernel's vDSO (linux-objects/vdso/vdso.c) is C, built by build.rs.
    needs(Presence::Program("cc"), "gcc"),
    // Debian's own dynamic python3 and its standard library, run unchanged
    // in the user tier.
    needs(Presence::File("/usr/bin/python3"), "python3"),
    // The outside test suites are built from Debian source packages.
    needs(Presence::Program("dpkg-source"), "dpkg-dev"),
    // Recipes of the real programs built from Debian sources
    // (outside/programs.rs): SQLite's amalgamation, make-dfsg's autoreconf.
    needs(Presence::Program("tclsh8.6"), "tcl8.6"),
    needs(Presence::Program("autoreconf"), "autoconf"),
    needs(Presence::Program("automake"), "automake"),
    needs(Presence::Program("autopoint"), "autopoint"),
    needs(Presence::Program("msgfmt"), "gettext"),
    needs(Presence::Program("pkg-config"), "pkgconf"),
    // LevelDB's recipe: its CMake build, and our driver linked with g++.
    needs(Presence::Program("cmake"), "cmake"),
    needs(Presence::Program("g++"), "g++"),
    // ext4 images: the ext4 crate's host tests and `exec --disk` make them
    // with mkfs.ext4 and check them with debugfs and e2fsck.
    needs(Presence::File("/usr/sbin/mkfs.ext4"), "e2fsprogs"),
    // Debian's kernel image is an XZ stream inside the bzImage.
    needs(Presence::Program("xz"), "xz-utils"),
    // `make bench BENCH=net` runs Debian's dynamic wrk inside each guest
    // against NGINX.
    needs(Presence::File("/usr/bin/wrk"), "wrk"),
    // `make stress` runs Debian's dynamic stress-ng in both guests
    // (testing/stress.rs).
    needs(Presence::File("/usr/bin/stress-ng"), "stress-ng"),
];

/// Makes sure every requirement is met, installing packages if we may.
pub fn ensure_dependencies() -> Outcome {
    let missing = missing_packages();
    if missing.is_empty() {
        return Ok(());
    }
    println!("xtask: missing host packages: {}", missing.join(" "));
    if !is_root() {
        return Err(Failure::failed(format!(
            "install them with:\n  sudo apt-get update && {}",
            install_command_text(&missing, "sudo ")
        )));
    }
    install(&missing)?;
    let still_missing = missing_packages();
    if !still_missing.is_empty() {
        return Err(Failure::failed(format!(
            "still missing after apt-get: {}",
            still_missing.join(" ")
        )));
    }
    Ok(())
}

/// The packages whose requirement is not met, each once.
fn missing_packages() -> Vec<&'static str> {
    let mut packages = Vec::new();
    for requirement in REQUIREMENTS {
        if !is_present(requirement.presence) && !packages.contains(&requirement.package) {
            packages.push(requirement.package);
        }
    }
    packages
}

fn is_present(presence: Presence) -> bool {
    match presence {
        Presence::Program(name) => is_on_path(name),
        Presence::File(path) => Path::new(path).exists(),
        Presence::StaticExecutable(path) => is_static_executable(Path::new(path)),
    }
}

fn is_on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|directory| directory.join(program).is_file())
}

/// True for an ELF file without a program interpreter (`.interp`).
fn is_static_executable(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    object::File::parse(&*bytes).is_ok_and(|file| file.section_by_name(".interp").is_none())
}

pub fn is_root() -> bool {
    let output = Command::new("id").arg("-u").output();
    output.is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn install_command_text(packages: &[&str], prefix: &str) -> String {
    format!(
        "{prefix}env DEBIAN_FRONTEND=noninteractive apt-get install -y {}",
        packages.join(" ")
    )
}

/// `apt-get update` once, then `apt-get install -y` the packages.
fn install(packages: &[&str]) -> Outcome {
    workspace::run_to_completion(Command::new("apt-get").arg("update"))?;
    let mut command = Command::new("apt-get");
    command
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y"])
        .args(packages);
    workspace::run_to_completion(&mut command).context(|| "installing host packages".to_string())
}

/// `cargo xtask deps`.
pub fn deps_command() -> Outcome {
    ensure_dependencies()?;
    println!("xtask: all host dependencies are present");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_command_is_non_interactive() {
        let text = install_command_text(&["ovmf", "mtools"], "sudo ");
        assert_eq!(
            text,
            "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y ovmf mtools"
        );
    }

    #[test]
    fn a_dynamic_executable_is_not_static() {
        // The test binary itself is dynamically linked on a glibc host.
        let this_test = std::env::current_exe().unwrap();
        assert!(!is_static_executable(&this_test));
        assert!(!is_static_executable(Path::new("/nonexistent/busybox")));
    }
}
