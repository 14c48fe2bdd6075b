//! Links the kernel with its linker script (kernel target only).
fn main() {
    let directory = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-none") {
        println!("cargo:rustc-link-arg-bins=-T{directory}/linker.ld");
        println!("cargo:rustc-link-arg-bins=-zmax-page-size=4096");
    }
    println!("cargo:rerun-if-changed={directory}/linker.ld");
}
