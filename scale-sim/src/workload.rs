//! A trace turned into what an application PE does in SemperOS's model:
//! computing (its own code, and the system calls that need no OS service,
//! for the time they took on Lamina), and file-service requests — open,
//! the next range of an open file, close, a metadata look — each of which
//! the service answers with capability operations.
//!
//! Must keep the trace's order and its total compute time; may not invent
//! a request the trace does not make.

use std::collections::BTreeMap;

use crate::trace::{Record, Trace};

/// One thing an application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Runs for this many instructions without the OS.
    Compute(u64),
    /// Opens file `handle` (its first range).
    Open(u32),
    /// Needs the next range of file `handle`.
    Extend(u32),
    /// Closes file `handle`.
    Close(u32),
    /// Looks at metadata.
    Meta,
}

impl Step {
    /// Whether the step needs a file service.
    pub fn needs_service(&self) -> bool {
        !matches!(self, Step::Compute(_))
    }
}

/// How a trace maps onto the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Bytes of a file one memory capability covers (m3fs hands out a
    /// capability per range; reading or writing past it asks for more).
    pub range_bytes: u64,
}

impl Default for Mapping {
    /// 1 MiB: SemperOS does not give m3fs's range, but says tar — 4 MiB
    /// read from five files of 128 KiB to 2 MiB and 4 MiB written — needs
    /// "several" memory capabilities: 10 at 1 MiB, where 64 KiB would
    /// make 128.
    fn default() -> Self {
        Self { range_bytes: 1024 * 1024 }
    }
}

const META: &[&str] = &[
    "stat", "lstat", "fstat", "newfstatat", "statx", "access", "faccessat", "faccessat2", "getdents", "getdents64", "readlink",
    "readlinkat", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "chdir", "truncate",
    "ftruncate", "fsync", "fdatasync", "utimensat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat", "lchown",
];
const OPEN: &[&str] = &["open", "openat", "creat"];
const TRANSFER: &[&str] = &["read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev"];
/// Calls that move bytes between two descriptors: the argument positions
/// of both (sendfile(out, in, …), copy_file_range(in, off, out, …)).
const BETWEEN: &[(&str, usize, usize)] = &[("sendfile", 0, 1), ("copy_file_range", 0, 2)];
const DUP: &[&str] = &["dup", "dup2", "dup3"];
/// Calls that wait for the world outside (a client, a child, a timer):
/// their time is not the application's work, and a server under
/// SemperOS's constant load would not wait. Their own kernel work is
/// dropped with the wait.
const WAIT: &[&str] = &[
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "nanosleep", "clock_nanosleep", "wait4", "waitid",
    "pause", "rt_sigsuspend",
];

/// An open file as the mapping follows it.
struct OpenFile {
    handle: u32,
    /// Bytes moved through it, and the bytes its ranges cover.
    moved: u64,
    covered: u64,
}

/// The state of one conversion.
struct Converter {
    mapping: Mapping,
    steps: Vec<Step>,
    /// Descriptor → handle, and per handle its state and how many
    /// descriptors name it.
    descriptors: BTreeMap<(u32, i64), u32>,
    files: BTreeMap<u32, (OpenFile, u32)>,
    next_handle: u32,
}

/// A file under the service (not a device, /proc or a pipe).
fn served(path: Option<&str>) -> bool {
    path.is_some_and(|path| !["/dev/", "/proc/", "/sys/"].iter().any(|prefix| path.starts_with(prefix)))
}

impl Converter {
    fn compute(&mut self, instructions: u64) {
        if instructions == 0 {
            return;
        }
        match self.steps.last_mut() {
            Some(Step::Compute(sum)) => *sum += instructions,
            _ => self.steps.push(Step::Compute(instructions)),
        }
    }

    /// The descriptor a call's first argument names, by process.
    fn key(record: &Record, descriptor: u64) -> (u32, i64) {
        (record.pid, descriptor as i64)
    }

    fn call(&mut self, record: &Record) {
        let name = record.name.as_str();
        let duration = record.end - record.start;
        let descriptor = Self::key(record, record.args[0]);
        if OPEN.contains(&name) {
            if record.ret >= 0 && served(record.path.as_deref()) {
                self.open(record);
            } else if record.ret < 0 {
                self.steps.push(Step::Meta);
            } else {
                self.compute(duration);
            }
        } else if WAIT.contains(&name) {
        } else if META.contains(&name) {
            self.steps.push(Step::Meta);
        } else if TRANSFER.contains(&name) && record.ret > 0 && self.descriptors.contains_key(&descriptor) {
            self.compute(duration);
            self.transfer(descriptor, record.ret as u64);
        } else if let Some((_, first, second)) = BETWEEN.iter().find(|(between, _, _)| *between == name).filter(|_| record.ret > 0) {
            self.compute(duration);
            for position in [*first, *second] {
                self.transfer(Self::key(record, record.args[position]), record.ret as u64);
            }
        } else if name == "close" && self.descriptors.contains_key(&descriptor) {
            self.close(descriptor);
        } else if DUP.contains(&name) && record.ret >= 0 && self.descriptors.contains_key(&descriptor) {
            self.duplicate(descriptor, Self::key(record, record.ret as u64));
        } else {
            self.compute(duration);
        }
    }

    fn open(&mut self, record: &Record) {
        let handle = self.next_handle;
        self.next_handle += 1;
        self.descriptors.insert(Self::key(record, record.ret as u64), handle);
        let file = OpenFile { handle, moved: 0, covered: self.mapping.range_bytes };
        self.files.insert(handle, (file, 1));
        self.steps.push(Step::Open(handle));
    }

    fn transfer(&mut self, descriptor: (u32, i64), bytes: u64) {
        let Some(handle) = self.descriptors.get(&descriptor).copied() else { return };
        let Some((file, _)) = self.files.get_mut(&handle) else { return };
        file.moved += bytes;
        while file.moved > file.covered {
            file.covered += self.mapping.range_bytes;
            self.steps.push(Step::Extend(file.handle));
        }
    }

    fn close(&mut self, descriptor: (u32, i64)) {
        let Some(handle) = self.descriptors.remove(&descriptor) else { return };
        let Some((_, names)) = self.files.get_mut(&handle) else { return };
        *names -= 1;
        if *names == 0 {
            self.files.remove(&handle);
            self.steps.push(Step::Close(handle));
        }
    }

    fn duplicate(&mut self, from: (u32, i64), to: (u32, i64)) {
        let Some(handle) = self.descriptors.get(&from).copied() else { return };
        if let Some(replaced) = self.descriptors.insert(to, handle) {
            // dup2 onto an open descriptor closes that one first.
            self.descriptors.insert(to, replaced);
            self.close(to);
            self.descriptors.insert(to, handle);
        }
        if let Some((_, names)) = self.files.get_mut(&handle) {
            *names += 1;
        }
    }
}

/// The steps of `trace`: the gaps between calls and the calls that need
/// no service become compute; file calls become requests. Files left open
/// at the end are closed (the process's exit closes them).
pub fn from_trace(trace: &Trace, mapping: Mapping) -> Vec<Step> {
    let mut converter = Converter { mapping, steps: Vec::new(), descriptors: BTreeMap::new(), files: BTreeMap::new(), next_handle: 0 };
    let mut records: Vec<&Record> = trace.records.iter().collect();
    records.sort_by_key(|record| record.start);
    let mut last_end = records.first().map_or(0, |record| record.start);
    for record in records {
        converter.compute(record.start.saturating_sub(last_end));
        last_end = last_end.max(record.end);
        converter.call(record);
    }
    let open: Vec<u32> = converter.files.keys().copied().collect();
    converter.steps.extend(open.into_iter().map(Step::Close));
    converter.steps
}

/// What a list of steps amounts to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub compute: u64,
    pub opens: usize,
    pub extends: usize,
    pub closes: usize,
    pub metas: usize,
}

/// Counts `steps`.
pub fn summary(steps: &[Step]) -> Summary {
    let mut summary = Summary::default();
    for step in steps {
        match step {
            Step::Compute(instructions) => summary.compute += instructions,
            Step::Open(_) => summary.opens += 1,
            Step::Extend(_) => summary.extends += 1,
            Step::Close(_) => summary.closes += 1,
            Step::Meta => summary.metas += 1,
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse;

    const TRACE: &str = "\
# a small hand-written trace
0 100 1 1 openat 3 0xffffffffffffff9c 0x1000 0x0 /data/in
150 250 1 1 read 40000 0x3 0x2000 0x9c40
250 350 1 1 read 40000 0x3 0x2000 0x9c40
400 410 1 1 getpid 1 0x0 0x0 0x0
410 420 1 1 dup 4 0x3 0x0 0x0
420 430 1 1 close 0 0x3 0x0 0x0
430 480 1 1 newfstatat 0 0xffffffffffffff9c 0x1000 0x0 /data
480 500 1 1 openat -2 0xffffffffffffff9c 0x1000 0x0 /data/none
500 520 1 1 openat 5 0xffffffffffffff9c 0x1000 0x0 /dev/null
600 610 1 1 close 0 0x4 0x0 0x0
700 800 1 1 openat 6 0xffffff9c 0x1000 0x0 /data/out
800 900 1 1 openat 7 0xffffff9c 0x1000 0x0 /data/in2
900 1000 1 1 sendfile 70000 0x6 0x7 0x0
";

    #[test]
    fn file_calls_become_requests_and_the_rest_compute() {
        let steps = from_trace(&parse(TRACE).unwrap(), Mapping { range_bytes: 64 * 1024 });
        assert_eq!(Mapping::default().range_bytes, 1 << 20);
        assert_eq!(
            steps,
            [
                Step::Open(0),
                // The gap, then the first read's copy.
                Step::Compute(150),
                Step::Compute(100),
                // 80,000 bytes pass 64 KiB: the next range.
                Step::Extend(0),
                // The gap, getpid, the gap before dup; dup and the first close only rename.
                Step::Compute(50 + 10),
                Step::Meta,
                Step::Meta,
                Step::Compute(20 + 80),
                Step::Close(0),
                Step::Compute(90),
                Step::Open(1),
                Step::Open(2),
                // 70,000 bytes out of one and into the other: a range more for each.
                Step::Compute(100),
                Step::Extend(1),
                Step::Extend(2),
                // Left open at the end: closed by the exit.
                Step::Close(1),
                Step::Close(2),
            ]
            .into_iter()
            .fold(Vec::new(), |mut merged: Vec<Step>, step| {
                match (merged.last_mut(), step) {
                    (Some(Step::Compute(sum)), Step::Compute(more)) => *sum += more,
                    _ => merged.push(step),
                }
                merged
            })
        );
        let summary = summary(&steps);
        assert_eq!((summary.opens, summary.extends, summary.closes, summary.metas), (3, 3, 3, 2));
    }
}
