//! std::process on the kernel: spawning with pipes, exit statuses,
//! environment and arguments, and the current directory.

use std::io::Write;
use std::process::{Command, Stdio};

fn main() {
    let output = Command::new("/bin/busybox").args(["echo", "spawned", "child"]).output().unwrap();
    println!("stdout {:?} status {:?}", String::from_utf8_lossy(&output.stdout), output.status.code());
    let status = Command::new("/bin/busybox").args(["sh", "-c", "exit 9"]).status().unwrap();
    println!("exit code {:?}", status.code());
    let mut child = Command::new("/bin/busybox").args(["tr", "a-z", "A-Z"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"piped through tr\n").unwrap();
    let output = child.wait_with_output().unwrap();
    println!("tr said {:?}", String::from_utf8_lossy(&output.stdout));
    let error = Command::new("/does/not/exist").status().unwrap_err();
    println!("missing program: {:?}", error.kind());
    let output = Command::new("/bin/busybox").args(["sh", "-c", "echo $GREETING"]).env_clear().env("GREETING", "hi there").output().unwrap();
    println!("env passed {:?}", String::from_utf8_lossy(&output.stdout));
    std::env::set_current_dir("/tmp").unwrap();
    println!("cwd {:?}", std::env::current_dir().unwrap());
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    println!("arguments {arguments:?}");
    println!("pid positive {}", std::process::id() > 0);
    std::process::exit(4);
}
