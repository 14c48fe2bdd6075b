//! Builds the vDSO (`vdso/vdso.c`, user-mode code the kernel maps into
//! every program) into `$OUT_DIR/vdso.so` with the host's C compiler, as
//! a shared object of one read-and-execute segment (`vdso/vdso.lds`)
//! exporting the clock calls under `LINUX_2.6` (`vdso/vdso.map`).
//! `src/vdso.rs` includes the bytes. Fails the build, saying why, when the
//! compiler fails or the result has relocations or a second segment.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = PathBuf::from("vdso");
    for file in ["vdso.c", "vdso.lds", "vdso.map"] {
        println!("cargo:rerun-if-changed=vdso/{file}");
    }
    println!("cargo:rerun-if-env-changed=CC");
    let output = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("vdso.so");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&compiler)
        .args([
            "-O2", "-fPIC", "-shared", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
            "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fcf-protection=none", "-Wall", "-Werror",
            "-Wl,--hash-style=both", "-Wl,-soname=linux-vdso.so.1", "-Wl,--no-undefined", "-Wl,-Bsymbolic",
            "-Wl,--build-id=none", "-Wl,-z,noexecstack", "-Wl,-z,max-page-size=4096",
        ])
        .arg(format!("-Wl,-T,{}", source.join("vdso.lds").display()))
        .arg(format!("-Wl,--version-script={}", source.join("vdso.map").display()))
        .arg(source.join("vdso.c"))
        .arg("-o")
        .arg(&output)
        .status()
        .unwrap_or_else(|error| panic!("running the C compiler `{compiler}` for the vDSO (Debian package gcc): {error}"));
    assert!(status.success(), "building the vDSO (linux-objects/vdso/vdso.c) failed");
}
