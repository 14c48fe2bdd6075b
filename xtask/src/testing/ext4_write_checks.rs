//! Part of tier 4: ext4 written read-write (`exec --disk` mounts it at
//! /mnt) on both kernels. Each kernel gets a fresh `mkfs.ext4` image; a
//! BusyBox script makes files of several sizes (over 1 MiB, a sparse
//! one), directories three deep, renames (over a file, a directory to
//! another parent), hard and symbolic links (one slow), unlinks, chmod,
//! chown, `touch -d`, a 300-entry directory, appends, truncates, the
//! refusals Linux gives (EEXIST, ENOTEMPTY, EPERM, EXDEV, ENAMETOOLONG,
//! ENOENT, ENOSPC), remounts read-only (a write refused, `/proc/mounts`
//! saying `ro`) and read-write again, then syncs and lists the tree (`ls -lnR`, `stat`
//! fields, `md5sum` of every file, link targets). Checked:
//! - Lamina's output is Linux's, byte for byte. Left out of it: times the
//!   script did not set (the two runs happen at different moments) and
//!   directory sizes (Linux indexes a large directory as an htree, which
//!   takes more blocks; the `ext4` crate keeps directories linear).
//! - `e2fsck -fn` finds each image clean (exit 0, no journal to replay)
//!   after the guest powered off.
//! - Lamina's image holds the tree Linux's holds (`debugfs rdump` of
//!   both, compared by path, type, permissions, owner, size and bytes).
//! - A second boot of each kernel on its own image lists the same tree
//!   again, and the image is still clean afterwards.
//!
//! The script also runs the user test `c/page_cache` in `/mnt/pc`: the
//! page cache over a disk (reads and writes, truncation, inode reuse), and
//! files stored to through shared mappings and never read, whose bytes the
//! image comparison finds on the disk only if `msync` and `sync` wrote
//! them back.

use super::tally::{CheckResult, Tally};
use super::guest_runs::{fresh_ext4_image, run_host, same_output};
use crate::exec::{run_program, ExecRequest, FileCopy, GuestKernel, Input, Output, ProgramRun};
use crate::failure::{Context, Outcome};
use crate::machine_options::MachineOptions;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(300);

/// The changes, from /mnt.
const CHANGES: &str = r#"
cd /mnt
printf 'hello\n' > small
: > empty
seq 1 300000 > big
head -c 5000 big > medium
head -c 4096 big > block
printf head > sparse
printf tail | dd of=sparse bs=1 seek=3000000 conv=notrunc 2>/dev/null
truncate -s 8000000 sparse
mkdir -p d1/d2/d3 other
echo deep > d1/d2/d3/file
mv medium d1/medium2
mv d1/d2/d3 other/d3moved
echo old > victim; echo new > replacer; mv replacer victim
ln big d1/big-link; ln small small-link2; rm small-link2
ln -s small sl
ln -s $(printf 'long/%.0s' $(seq 1 30))end long-sl
ln -s d1/d2 dir-sl
chmod 4755 d1/medium2; chmod 600 small; chmod 711 d1
chown 1000:100 small; chown -h 7:8 sl; chown 5:6 d1/medium2
mkdir many; i=1; while [ $i -le 300 ]; do echo $i > many/f$i; i=$((i+1)); done
rm many/f1?; rm many/f2??
echo more >> small; seq 1 1000 >> d1/medium2
cp big big-copy; truncate -s 100 big-copy; truncate -s 2000000 d1/medium2
echo gone > later; : > later
mkdir d1; rmdir d1; ln d1 dlink; ln small /tmp/x; touch $(printf '%0300d' 0); rm nothing; rmdir many
mkdir tree; mkdir tree/a tree/b; echo 1 > tree/a/x; rm -r tree
dd if=/dev/zero of=fill bs=1M 2>&1 | grep -o 'No space left on device'; rm fill
touch -d '2021-03-04 05:06:07' small; touch -h -d '2020-01-01 00:00:00' sl; touch -d '1999-12-31 23:59:59' other/d3moved
mkdir pc; /page_cache /mnt/pc
mount -o remount,ro /mnt; (echo x > /mnt/while-ro) 2>&1 | grep -o 'Read-only file system'; grep ' /mnt ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1
mount -o remount,rw /mnt; echo rw-again > /mnt/after-remount; grep ' /mnt ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1
sync
"#;

/// Where the listing starts in the first boot's output.
const LISTING_MARKER: &str = "--- listing\n";

/// The listing, from /mnt: no times but the ones the script set, no
/// directory sizes (see the module documentation).
const LISTING: &str = r#"
echo "--- listing"
ls -lnR | grep -v '^total' | awk '{ if ($1 ~ /^d/) $5 = "-"; $6 = $7 = $8 = ""; print }'
find . | sort | while read f; do if [ -d "$f" ]; then stat -c '%n %f %h %u %g' "$f"; else stat -c '%n %f %h %u %g %s %b' "$f"; fi; done
stat -c '%n %y' small sl other/d3moved
find . -type f | sort | xargs md5sum
find . -type l | sort | while read f; do echo "$f -> $(readlink "$f")"; done
ls many | wc -l
"#;

/// One kernel's image and what its first boot printed.
struct Runs {
    image: PathBuf,
    first: ProgramRun,
}

pub fn run_ext4_write_checks(tally: &mut Tally) {
    let mut runs = Vec::new();
    for kernel in [GuestKernel::Lamina, GuestKernel::Linux] {
        match first_boot(kernel) {
            Ok(run) => runs.push(run),
            Err(failure) => return tally.record(&format!("ext4 write: the script runs on {kernel:?}"), Err(failure.to_string())),
        }
    }
    // The last line (the 300-entry directory less 110) is there only if
    // the script ran to its end on Linux.
    tally.record("ext4 write: a BusyBox script's changes and listing print the same on Lamina and Linux", same_output(&runs[0].first, &runs[1].first, |output| output.ends_with("\n190\n")));
    for (kernel, run) in [GuestKernel::Lamina, GuestKernel::Linux].into_iter().zip(&runs) {
        tally.record(&format!("ext4 write: e2fsck -fn finds {kernel:?}'s image clean after the script"), e2fsck_clean(&run.image));
    }
    tally.record("ext4 write: Lamina's image holds the tree Linux's holds (debugfs rdump)", same_tree(&runs[0].image, &runs[1].image));
    for (kernel, run) in [GuestKernel::Lamina, GuestKernel::Linux].into_iter().zip(&runs) {
        let result = second_boot(kernel, run);
        tally.record(&format!("ext4 write: a second boot of {kernel:?} on its image lists the same tree, left clean"), result);
    }
}

fn first_boot(kernel: GuestKernel) -> Outcome<Runs> {
    let image = fresh_ext4_image(&format!("ext4-write-check-{kernel:?}"), "64M")?;
    let page_cache = crate::guest_programs::compile_c("user/tests/c/page_cache.c", "page_cache")?;
    let files = vec![FileCopy { host: page_cache, guest: Some("/page_cache".to_string()) }];
    let first = boot(kernel, &image, files, &format!("{CHANGES}{LISTING}"))?;
    Ok(Runs { image, first })
}

fn boot(kernel: GuestKernel, image: &Path, files: Vec<FileCopy>, script: &str) -> Outcome<ProgramRun> {
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files,
        program: crate::guest_files::BUSYBOX.into(),
        // stderr joins stdout: the refusals' messages are compared too.
        program_arguments: vec!["sh".to_string(), "-c".to_string(), format!("exec 2>&1\n{script}")],
        disk: Some(image.to_path_buf()),
        mount_disk: true,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}


/// `e2fsck -fn`: exit 0 (nothing to fix), and no journal left to replay.
fn e2fsck_clean(image: &Path) -> CheckResult {
    let output = Command::new("e2fsck").args(["-fn"]).arg(image).output().map_err(|error| format!("running e2fsck: {error}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if output.status.code() != Some(0) || text.contains("journal recovery") {
        return Err(format!("e2fsck -fn {}: {}\n{text}", image.display(), output.status));
    }
    Ok(())
}

fn same_tree(lamina: &Path, linux: &Path) -> CheckResult {
    let lamina_tree = describe_image(lamina).map_err(|failure| format!("Lamina's image: {failure}"))?;
    let linux_tree = describe_image(linux).map_err(|failure| format!("Linux's image: {failure}"))?;
    if lamina_tree == linux_tree {
        return Ok(());
    }
    let differences: Vec<String> = lamina_tree
        .iter()
        .filter(|line| !linux_tree.contains(line))
        .map(|line| format!("  only Lamina's: {line}"))
        .chain(linux_tree.iter().filter(|line| !lamina_tree.contains(line)).map(|line| format!("  only Linux's:  {line}")))
        .take(10)
        .collect();
    Err(format!("the trees differ:\n{}", differences.join("\n")))
}

/// Every entry of the image's tree (`debugfs rdump` of its root), one line
/// each: path, type, permissions, owner, size (not a directory's) and a
/// hash of the bytes or the link target.
fn describe_image(image: &Path) -> Outcome<Vec<String>> {
    let dump = image.with_extension("rdump");
    let _ = std::fs::remove_dir_all(&dump);
    std::fs::create_dir_all(&dump).context(|| format!("making {}", dump.display()))?;
    let request = format!("rdump / {}", dump.display());
    run_host("debugfs", &["-R", &request, &image.display().to_string()])?;
    let mut lines = Vec::new();
    describe_directory(&dump, &dump, &mut lines)?;
    lines.sort();
    let _ = std::fs::remove_dir_all(&dump);
    Ok(lines)
}

fn describe_directory(root: &Path, directory: &Path, lines: &mut Vec<String>) -> Outcome<()> {
    let entries = std::fs::read_dir(directory).context(|| format!("listing {}", directory.display()))?;
    for entry in entries {
        let path = entry.context(|| format!("listing {}", directory.display()))?.path();
        let metadata = std::fs::symlink_metadata(&path).context(|| format!("stat {}", path.display()))?;
        let name = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let owner = format!("{:o} {}:{}", metadata.mode() & 0o7777, metadata.uid(), metadata.gid());
        if metadata.is_dir() {
            lines.push(format!("{name} directory {owner}"));
            describe_directory(root, &path, lines)?;
        } else if metadata.file_type().is_symlink() {
            let target = std::fs::read_link(&path).context(|| format!("readlink {}", path.display()))?;
            lines.push(format!("{name} link {owner} -> {}", target.display()));
        } else {
            let bytes = std::fs::read(&path).context(|| format!("reading {}", path.display()))?;
            let mut hasher = DefaultHasher::new();
            bytes.hash(&mut hasher);
            lines.push(format!("{name} file {owner} {} bytes {:016x}", bytes.len(), hasher.finish()));
        }
    }
    Ok(())
}

/// Boots `kernel` again on its image: the listing must be the first
/// boot's, and the image clean afterwards.
fn second_boot(kernel: GuestKernel, runs: &Runs) -> CheckResult {
    let second = boot(kernel, &runs.image, Vec::new(), &format!("cd /mnt\n{LISTING}")).map_err(|failure| failure.to_string())?;
    let first = String::from_utf8_lossy(&runs.first.output).into_owned();
    let listed = first.find(LISTING_MARKER).map(|at| &first[at..]).ok_or("the first boot printed no listing")?;
    let again = String::from_utf8_lossy(&second.output).into_owned();
    if again != listed {
        return Err(format!("first boot listed:\n{listed}\nsecond boot listed:\n{again}"));
    }
    e2fsck_clean(&runs.image)
}

