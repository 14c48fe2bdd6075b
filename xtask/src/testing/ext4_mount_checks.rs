//! Part of tier 4: an ext4 disk (`exec --disk` mounts it read-write at
//! /mnt) mounted again read-only, on both kernels. The image is made on
//! the host by `mkfs.ext4 -d` from a tree with files of several sizes
//! (empty to 3 MB, holes included), nested directories, symbolic links, a
//! 200-entry directory, modes, owners and a nanosecond mtime; a BusyBox
//! script unmounts /mnt, mounts it with `-o ro`, lists it, hashes every
//! file, prints every `stat` field and the `statfs` figures, walks `..`
//! out of the mount, tries changes (each must fail with EROFS, or EEXIST
//! where Linux checks that first), unmounts and mounts again read-write.
//! Lamina's output must be Linux's, byte for byte. (Read-only: a
//! read-write mount on Linux updates access times as it reads.)

use super::tally::Tally;
use super::guest_runs::{run_host, same_output};
use crate::exec::{run_program, ExecRequest, GuestKernel, Input, Output, ProgramRun};
use crate::failure::{Context, Outcome};
use crate::machine_options::MachineOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIME_LIMIT: Duration = Duration::from_secs(180);

const SCRIPT: &str = r#"
grep ' /mnt ' /proc/mounts
umount /mnt; echo "umount $?"
mount -t ext4 -o ro /dev/vda /mnt; echo "mount $?"
cd /mnt
grep ' /mnt ' /proc/mounts
ls -lnR . | grep -v '^total'
find . | sort | while read f; do stat -c '%n %i %f %h %u %g %s %b %x %y %z %D' "$f"; done
find . -type f | sort | xargs md5sum
find . -type l | sort | while read f; do echo "$f -> $(readlink "$f")"; done
ls -a many | wc -l
stat -f -c '%t %s %S %b %f %a %c %d %l %i' .
cd dir/sub && pwd && cd ../../.. && pwd && cd /mnt
touch new; echo "touch $?"
mkdir dir; echo "mkdir $?"
mkdir fresh; echo "mkdir $?"
rm small; echo "rm $?"
echo x > small; echo "write $?"
ln -s small newlink; echo "ln $?"
mv small moved; echo "mv $?"
chmod 600 small; echo "chmod $?"
cat dir/sub/../../small
cd /
umount /mnt; echo "umount $?"
ls /mnt | wc -l
mount -t ext4 /dev/vda /mnt; echo "mount $?"
grep ' /mnt ' /proc/mounts
md5sum /mnt/small
"#;

pub fn run_ext4_mount_checks(tally: &mut Tally) {
    let result = compare();
    tally.record("disk: an ext4 image mounted read-only at /mnt (after its read-write mount) reads, lists and refuses changes as on Linux", result);
}

fn compare() -> Result<(), String> {
    let image = make_image().map_err(|failure| failure.to_string())?;
    let lamina = run_on(GuestKernel::Lamina, &image).map_err(|failure| format!("Lamina: {failure}"))?;
    let linux = run_on(GuestKernel::Linux, &image).map_err(|failure| format!("Linux: {failure}"))?;
    // The last line is there only if the script ran to its end on Linux.
    same_output(&lamina, &linux, |output| output.contains("b1946ac92492d2347c6235b4d2611184  /mnt/small"))
}

fn run_on(kernel: GuestKernel, image: &Path) -> Outcome<ProgramRun> {
    // Each kernel gets its own copy: nothing may depend on the other's run.
    let copy = image.with_extension(format!("{kernel:?}.img"));
    std::fs::copy(image, &copy).context(|| format!("copying {}", image.display()))?;
    let request = ExecRequest {
        machine: MachineOptions::default(),
        kernel,
        files: Vec::new(),
        program: crate::guest_files::BUSYBOX.into(),
        // stderr joins stdout: the refusals' messages are compared too.
        program_arguments: vec!["sh".to_string(), "-c".to_string(), format!("exec 2>&1\n{SCRIPT}")],
        disk: Some(copy),
        mount_disk: true,
        disk_log: None,
        network: None,
    };
    run_program(&request, Input::Pipe(Vec::new()), Output::Capture, Some(TIME_LIMIT))
}

/// The tree, then `mkfs.ext4 -d` of it (256-byte inodes: nanosecond times).
fn make_image() -> Outcome<PathBuf> {
    let target = crate::workspace::root().join("target");
    let tree = target.join("ext4-mount-tree");
    let _ = std::fs::remove_dir_all(&tree);
    for directory in ["dir/sub/deeper", "many", "private"] {
        std::fs::create_dir_all(tree.join(directory)).context(|| format!("making {directory}"))?;
    }
    let bytes = |length: usize, seed: usize| -> Vec<u8> { (0..length).map(|at| ((at * 131 + seed) % 251) as u8).collect() };
    let files: [(&str, Vec<u8>); 6] = [
        ("small", b"hello\n".to_vec()),
        ("empty", Vec::new()),
        ("dir/medium", bytes(5000, 1)),
        ("dir/sub/large", bytes(3_000_000, 2)),
        ("dir/sub/deeper/block", bytes(4096, 3)),
        ("private/secret", b"only root\n".to_vec()),
    ];
    for (path, contents) in &files {
        std::fs::write(tree.join(path), contents).context(|| format!("writing {path}"))?;
    }
    for index in 1..=200 {
        std::fs::write(tree.join(format!("many/entry-{index:03}")), format!("{index}\n")).context(|| "writing many/".to_string())?;
    }
    std::os::unix::fs::symlink("dir/sub/large", tree.join("link")).context(|| "link".to_string())?;
    std::os::unix::fs::symlink("../../small", tree.join("dir/sub/up")).context(|| "up".to_string())?;
    let long_target: String = "d/".repeat(40) + "end";
    std::os::unix::fs::symlink(&long_target, tree.join("long-link")).context(|| "long-link".to_string())?;
    let sparse = std::fs::File::create(tree.join("sparse")).context(|| "sparse".to_string())?;
    sparse.set_len(1 << 20).context(|| "sparse length".to_string())?;
    let shell = format!(
        "cd {tree} && chown 1000:100 small dir/medium && chown -h 7:8 link && chown 0:50 private \
         && chmod 0640 small && chmod 0711 dir && chmod 0700 private && chmod 4755 dir/medium \
         && touch -h -d '2021-03-04 05:06:07.123456789' small link && touch -d '1999-12-31 23:59:59.5' dir/sub \
         && find . -newer small -exec touch -h -d '2024-01-02 03:04:05.987654321' {{}} +",
        tree = tree.display()
    );
    run_host("sh", &["-c", &shell])?;
    let image = target.join("ext4-mount-check.img");
    let _ = std::fs::remove_file(&image);
    let image_text = image.display().to_string();
    let tree_text = tree.display().to_string();
    run_host("truncate", &["-s", "64M", &image_text])?;
    run_host("mkfs.ext4", &["-q", "-F", "-I", "256", "-E", "root_owner=0:0", "-d", &tree_text, &image_text])?;
    Ok(image)
}

