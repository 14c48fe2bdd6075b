//! What a dynamically linked program needs in the guest: its interpreter
//! and shared libraries, found as `ldd` finds them on the host, copied to
//! the same paths. A static program needs nothing (`ldd` says "not a
//! dynamic executable" and fails).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files `program` loads at run time (empty for a static program).
/// With glibc comes its `libgcc_s.so.1`, which glibc opens itself (no
/// `ldd` line names it) to unwind a thread's stack in `pthread_exit` and
/// cancellation.
pub fn needed_by(program: &Path) -> Vec<PathBuf> {
    let Ok(output) = Command::new("ldd").arg(program).output() else { return Vec::new() };
    if !output.status.success() {
        return Vec::new();
    }
    let mut paths = paths_in_ldd_output(&String::from_utf8_lossy(&output.stdout));
    let unwinder = paths.iter().find(|path| path.ends_with("libc.so.6")).and_then(|libc| libc.parent()).map(|directory| directory.join("libgcc_s.so.1"));
    if let Some(unwinder) = unwinder.filter(|unwinder| unwinder.is_file() && !paths.contains(unwinder)) {
        paths.push(unwinder);
    }
    paths
}

/// The absolute paths of `ldd`'s lines: `name => /path (0x…)` and
/// `/path (0x…)` (the interpreter); the vDSO and unresolved names
/// (`=> not found`) give none.
fn paths_in_ldd_output(text: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let candidate = match line.split_once("=> ") {
            Some((_, rest)) => rest,
            None => line,
        };
        let path = candidate.split(" (").next().unwrap_or_default().trim();
        if path.starts_with('/') && !paths.iter().any(|known| known == Path::new(path)) {
            paths.push(PathBuf::from(path));
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_give_the_library_and_interpreter_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \tlibgone.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n";
        assert_eq!(paths_in_ldd_output(text), [PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]);
    }

    #[test]
    fn a_host_dynamic_program_needs_its_interpreter_and_a_static_one_nothing() {
        let needed = needed_by(Path::new("/bin/ls"));
        assert!(needed.iter().any(|path| path.ends_with("ld-linux-x86-64.so.2")), "{needed:?}");
        assert!(needed.iter().any(|path| path.to_string_lossy().contains("libc.so")), "{needed:?}");
        assert!(needed.iter().any(|path| path.ends_with("libgcc_s.so.1")), "glibc's unwinder comes along: {needed:?}");
        assert!(needed_by(Path::new("/bin/busybox")).is_empty());
    }
}
