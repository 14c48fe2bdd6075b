//! Builds a kernel image (normal or in-kernel-test) and writes its symbol table.

use crate::arguments::{unexpected, Argument, Arguments};
use crate::failure::Outcome;
use crate::symbol_table;
use crate::workspace;
use std::path::PathBuf;

/// Which kernel image to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// The normal kernel with its monitor (release profile).
    Normal,
    /// The in-kernel test runner (`ktest` profile and feature).
    Test,
    /// The in-kernel benchmark runner (`kbench` profile and feature).
    Bench,
    /// The benchmark runner in the big-kernel-lock build (`kbench-bkl`
    /// profile, features `kbench` and `big-kernel-lock`).
    BenchBigLock,
}

/// The kernel's target triple.
pub const KERNEL_TARGET: &str = "x86_64-unknown-none";

impl ImageKind {
    /// Cargo's profile for this image, which is also its output folder.
    fn profile(self) -> &'static str {
        match self {
            ImageKind::Normal => "release",
            ImageKind::Test => "ktest",
            ImageKind::Bench => "kbench",
            ImageKind::BenchBigLock => "kbench-bkl",
        }
    }

    /// Arguments to `cargo` that build this image.
    pub fn cargo_arguments(self) -> Vec<&'static str> {
        let mut arguments = vec!["build", "--package", "kernel", "--bin", "lamina"];
        arguments.extend(["--target", KERNEL_TARGET, "--profile", self.profile()]);
        match self {
            ImageKind::Test => arguments.extend(["--features", "ktest"]),
            ImageKind::Bench => arguments.extend(["--features", "kbench"]),
            ImageKind::BenchBigLock => arguments.extend(["--features", "kbench big-kernel-lock"]),
            ImageKind::Normal => {}
        }
        arguments
    }

    /// Where cargo leaves the ELF image.
    pub fn image_path(self) -> PathBuf {
        workspace::target_directory()
            .join(KERNEL_TARGET)
            .join(self.profile())
            .join("lamina")
    }
}

/// Builds the image, writes its `.ksyms` table and returns its path.
pub fn build_kernel(kind: ImageKind) -> Outcome<PathBuf> {
    workspace::run_to_completion(workspace::cargo().args(kind.cargo_arguments()))?;
    let image = kind.image_path();
    let count = symbol_table::write_symbol_table(&image)?;
    eprintln!(
        "xtask: wrote {count} function symbols into {}",
        image.display()
    );
    Ok(image)
}

/// `cargo xtask build [--test]`: builds an image and prints its path.
pub fn build_command(mut arguments: Arguments) -> Outcome {
    let mut kind = ImageKind::Normal;
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--test" => kind = ImageKind::Test,
            other => return Err(unexpected("build", other)),
        }
    }
    println!("{}", build_kernel(kind)?.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_image_uses_the_ktest_profile_and_feature() {
        let arguments = ImageKind::Test.cargo_arguments().join(" ");
        assert!(
            arguments.contains("--profile ktest --features ktest"),
            "{arguments}"
        );
        assert!(ImageKind::Test
            .image_path()
            .ends_with("x86_64-unknown-none/ktest/lamina"));
    }

    #[test]
    fn the_big_lock_image_has_its_own_profile_and_both_features() {
        let arguments = ImageKind::BenchBigLock.cargo_arguments().join(" ");
        assert!(
            arguments.contains("--profile kbench-bkl --features kbench big-kernel-lock"),
            "{arguments}"
        );
        assert!(ImageKind::BenchBigLock
            .image_path()
            .ends_with("x86_64-unknown-none/kbench-bkl/lamina"));
    }

    #[test]
    fn the_normal_image_is_a_release_build() {
        let arguments = ImageKind::Normal.cargo_arguments().join(" ");
        assert!(arguments.contains("--profile release") && !arguments.contains("ktest"));
        assert!(ImageKind::Normal
            .image_path()
            .ends_with("x86_64-unknown-none/release/lamina"));
    }
}
