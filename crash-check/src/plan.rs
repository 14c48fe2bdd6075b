//! A workload written down as a plan, for a kernel to run: file
//! operations by path, one per line, that a guest program
//! (`user/tools/crash_workload.c`) performs under `/mnt` while QEMU logs
//! the disk's writes — and from which, with the log, the [`Model`] of
//! what each path may show after a crash is built here.
//!
//! The guest cannot see log positions, so it writes a *marker* to a
//! sector past the file system's end before each operation starts and
//! after it returns (plain writes, no flush: they only timestamp the log,
//! they make nothing durable). Marker `i`'s begin write lies before any
//! write of operation `i`, and its end write after operation `i`
//! returned, so "started before" and "promised from" are read off the
//! log conservatively.
//!
//! Plan lines: `<process> <verb> <arguments>`; process 0 runs in order;
//! a run of consecutive lines for processes 1, 2, … runs as that many
//! processes at once (each in its own order). Paths of concurrent
//! processes must not overlap, and they may not `sync` (whose promise
//! would depend on the other's progress).

use crate::model::{Model, Node};
use crate::Event;

/// Marker sectors start with this.
pub const MARKER_MAGIC: &[u8; 16] = b"LAMINA-CRASH-MK\n";

/// One file operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Mkdir(String),
    Rmdir(String),
    /// Creates a new file holding `bytes_for(seed, length)`.
    Create { path: String, seed: u32, length: usize },
    /// Writes `bytes_for(seed, length)` at `offset`.
    Write { path: String, seed: u32, offset: usize, length: usize },
    /// fsync(2) of a file or directory.
    Fsync(String),
    Sync,
    Rename(String, String),
    Unlink(String),
    /// `sqlite3 DATABASE` runs one statement (one transaction): the
    /// database's directory is left to a verdict of its own ([`sql_spans`]).
    Sql { database: String, statement: Sql },
}

/// The statements of the SQLite workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sql {
    /// `create table t(id integer primary key, v text)`.
    Create,
    /// `insert into t values(ROW, …)`: rows go in as 0, 1, 2, ….
    Insert(u32),
}

/// An operation and the process that performs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub process: u8,
    pub op: Op,
}

/// Distinct bytes for write number `seed` (the guest program computes
/// the same): no two writes share a 1 KiB piece, so a block showing up in
/// the wrong file or at the wrong time is recognised.
pub fn bytes_for(seed: u32, length: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (u64::from(seed) << 32 | 0xA5A5);
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The plan as the guest program reads it.
pub fn text(steps: &[Step]) -> String {
    let mut text = String::new();
    for Step { process, op } in steps {
        let line = match op {
            Op::Mkdir(path) => format!("mkdir {path}"),
            Op::Rmdir(path) => format!("rmdir {path}"),
            Op::Create { path, seed, length } => format!("create {path} {seed} {length}"),
            Op::Write { path, seed, offset, length } => format!("write {path} {seed} {offset} {length}"),
            Op::Fsync(path) => format!("fsync {path}"),
            Op::Sync => "sync".to_string(),
            Op::Rename(from, to) => format!("rename {from} {to}"),
            Op::Unlink(path) => format!("unlink {path}"),
            Op::Sql { database, statement: Sql::Create } => format!("sqlite-create {database}"),
            Op::Sql { database, statement: Sql::Insert(row) } => format!("sqlite-insert {database} {row}"),
        };
        text.push_str(&format!("{process} {line}\n"));
    }
    text
}

/// Where each operation's markers lie in a log: `(begin, end)` event
/// indices, for operations `0..count`.
pub fn marker_positions(events: &[Event], first_marker_sector: u64, count: usize) -> Result<Vec<(usize, usize)>, String> {
    let mut positions: Vec<(Option<usize>, Option<usize>)> = vec![(None, None); count];
    for (index, event) in events.iter().enumerate() {
        let Event::Write { sector, bytes } = event else { continue };
        if *sector < first_marker_sector || bytes.len() < 25 || &bytes[..16] != MARKER_MAGIC {
            continue;
        }
        let operation = u64::from_le_bytes(bytes[16..24].try_into().expect("eight bytes")) as usize;
        let slot = positions.get_mut(operation).ok_or_else(|| format!("a marker for operation {operation} of {count}"))?;
        let kept = if bytes[24] == 0 { &mut slot.0 } else { &mut slot.1 };
        if kept.replace(index).is_some() {
            return Err(format!("operation {operation}'s marker {} twice in the log", bytes[24]));
        }
    }
    positions
        .into_iter()
        .enumerate()
        .map(|(operation, slot)| match slot {
            (Some(begin), Some(end)) if begin < end => Ok((begin, end)),
            other => Err(format!("operation {operation}: markers {other:?} (begin and end expected, in that order)")),
        })
        .collect()
}

/// The model of a plan whose operations ran at `positions` (from
/// [`marker_positions`]); everything is promised at `end` (the guest
/// unmounted before powering off).
pub fn model_of(steps: &[Step], positions: &[(usize, usize)], end: usize) -> Result<Model, String> {
    if positions.len() != steps.len() {
        return Err(format!("{} positions for {} steps", positions.len(), steps.len()));
    }
    let mut model = Model::default();
    for (Step { op, .. }, &(started, returned)) in steps.iter().zip(positions) {
        match op {
            Op::Mkdir(path) => model.set(path, Some(Node::Directory), started),
            Op::Rmdir(path) | Op::Unlink(path) => model.set(path, None, started),
            Op::Create { path, seed, length } => {
                model.create_file(path, started);
                model.write_file(path, 0, &bytes_for(*seed, *length), started).ok_or_else(|| format!("{path}: not a file"))?;
            }
            Op::Write { path, seed, offset, length } => {
                model.write_file(path, *offset, &bytes_for(*seed, *length), started).ok_or_else(|| format!("{path}: not a file"))?;
            }
            Op::Fsync(path) => model.promise(path, returned),
            Op::Sync => model.promise_all(returned),
            Op::Rename(from, to) => model.rename(from, to, started),
            Op::Sql { database, .. } => {
                let directory = database.rsplit_once('/').map_or("", |(directory, _)| directory).to_string();
                if !model.opaque.contains(&directory) {
                    model.opaque.push(directory);
                }
            }
        }
    }
    model.promise_all(end);
    Ok(model)
}

/// The `(begin, end)` log positions of the SQL statements on `database`,
/// in plan order (the create first, then the inserts).
pub fn sql_spans(steps: &[Step], positions: &[(usize, usize)], database: &str) -> Vec<(Sql, usize, usize)> {
    steps
        .iter()
        .zip(positions)
        .filter_map(|(step, &(begin, end))| match &step.op {
            Op::Sql { database: named, statement } if named == database => Some((*statement, begin, end)),
            _ => None,
        })
        .collect()
}

/// What a crash at log position `bound` may leave of the SQLite
/// workload: `(fewest, most)` rows, rows being 0, 1, … in order, and
/// whether the table must exist.
pub fn sql_rows_allowed(spans: &[(Sql, usize, usize)], bound: usize) -> (u32, u32, bool) {
    let inserts = || spans.iter().filter(|(statement, _, _)| matches!(statement, Sql::Insert(_)));
    let fewest = inserts().filter(|(_, _, end)| *end <= bound).count() as u32;
    let most = inserts().filter(|(_, begin, _)| *begin < bound).count() as u32;
    let table = spans.iter().any(|(statement, _, end)| *statement == Sql::Create && *end <= bound);
    (fewest, most, table)
}

/// Where the kernel workload keeps its database.
pub const SQL_DATABASE: &str = "/sql/db";
/// Rows the kernel workload inserts, one transaction (one `sqlite3`
/// process) each.
pub const SQL_ROWS: u32 = 12;

/// The kernel crash tier's workload: the five workloads of both crash
/// tiers in one plan (small files; appends; a large sequential write;
/// directory trees; two processes, on the kernel really at once).
pub fn kernel_workload() -> Vec<Step> {
    [small_files(), appends(), large_write(), directory_trees(), two_processes()].concat()
}

/// Small files created, written, fsynced, renamed over each other and
/// unlinked.
pub fn small_files() -> Vec<Step> {
    let mut plan = Plan::seeded(1_000);
    plan.create("/a", 3000);
    plan.create("/b", 100);
    plan.fsync("/a");
    plan.write("/b", 50, 2000);
    plan.create("/c", 5000);
    plan.fsync("/c");
    plan.op(Op::Rename("/a".into(), "/b".into()));
    plan.fsync("/b");
    plan.op(Op::Unlink("/c".into()));
    plan.create("/d", 1500);
    plan.op(Op::Sync);
    plan.op(Op::Rename("/d".into(), "/e".into()));
    plan.write("/e", 1500, 3000);
    plan.fsync("/e");
    plan.op(Op::Unlink("/b".into()));
    plan.create("/f", 0);
    plan.fsync("/f");
    plan.steps
}

/// A log appended to and fsynced after most appends.
pub fn appends() -> Vec<Step> {
    let mut plan = Plan::seeded(2_000);
    plan.create("/log", 0);
    let mut length = 0;
    for round in 0..8 {
        let more = 700 + 300 * (round % 3);
        plan.write("/log", length, more);
        length += more;
        if round % 3 != 2 {
            plan.fsync("/log");
        }
    }
    plan.fsync("/log");
    plan.steps
}

/// One file written sequentially in large pieces, then partly rewritten.
pub fn large_write() -> Vec<Step> {
    let mut plan = Plan::seeded(3_000);
    plan.create("/big", 0);
    for piece in 0..12 {
        plan.write("/big", piece * 24 * 1024, 24 * 1024);
    }
    plan.fsync("/big");
    plan.write("/big", 40_000, 20_000);
    plan.fsync("/big");
    plan.steps
}

/// Directory trees made, filled, synced, renamed and taken down.
pub fn directory_trees() -> Vec<Step> {
    let mut plan = Plan::seeded(4_000);
    for directory in ["/top", "/top/one", "/top/one/two", "/top/one/two/three"] {
        plan.op(Op::Mkdir(directory.into()));
    }
    plan.create("/top/one/two/three/leaf", 2000);
    plan.fsync("/top/one/two/three/leaf");
    plan.op(Op::Mkdir("/top/other".into()));
    plan.op(Op::Mkdir("/top/other/inner".into()));
    plan.create("/top/other/inner/file", 1200);
    plan.op(Op::Sync);
    plan.op(Op::Rename("/top/other".into(), "/top/moved".into()));
    plan.fsync("/top/moved/inner/file");
    plan.op(Op::Unlink("/top/moved/inner/file".into()));
    plan.op(Op::Rmdir("/top/moved/inner".into()));
    plan.op(Op::Rmdir("/top/moved".into()));
    plan.op(Op::Mkdir("/top/one/two/sibling".into()));
    plan.op(Op::Sync);
    plan.op(Op::Unlink("/top/one/two/three/leaf".into()));
    plan.op(Op::Rmdir("/top/one/two/three".into()));
    plan.fsync("/top/one/two/sibling");
    plan.steps
}

/// Two processes (on the kernel at once; on the host in plan order): one
/// appends to its log and fsyncs, the other replaces its current file
/// atomically (write a temporary, fsync it, rename it over) and never
/// fsyncs its directory.
pub fn two_processes() -> Vec<Step> {
    let mut plan = Plan::seeded(5_000);
    plan.op(Op::Mkdir("/pa".into()));
    plan.op(Op::Mkdir("/pb".into()));
    plan.create("/pb/current", 900);
    plan.create("/pa/log", 0);
    plan.op(Op::Sync);
    let mut log_length = 0;
    for round in 0..5 {
        plan.process = 1;
        let more = 500 + 200 * round;
        plan.write("/pa/log", log_length, more);
        log_length += more;
        plan.fsync("/pa/log");
        plan.process = 2;
        plan.create("/pb/next", 1000 + 700 * round);
        plan.fsync("/pb/next");
        plan.op(Op::Rename("/pb/next".into(), "/pb/current".into()));
        if round % 2 == 1 {
            plan.write("/pb/current", 1000 + 700 * round, 300);
        }
    }
    plan.process = 0;
    plan.fsync("/pa/log");
    plan.fsync("/pb/current");
    plan.steps
}

/// The SQLite workload: a table created, then [`SQL_ROWS`] rows inserted,
/// one transaction each (a rollback journal; `synchronous=extra`, so each
/// commit is durable when the statement returns), in [`SQL_DATABASE`].
pub fn sqlite_workload() -> Vec<Step> {
    let mut plan = Plan::default();
    plan.op(Op::Mkdir("/sql".into()));
    plan.op(Op::Sql { database: SQL_DATABASE.into(), statement: Sql::Create });
    for row in 0..SQL_ROWS {
        plan.op(Op::Sql { database: SQL_DATABASE.into(), statement: Sql::Insert(row) });
    }
    plan.steps
}

/// Builds a plan with fresh seeds (each workload its own range, so no
/// two writes of the whole plan share their bytes).
#[derive(Default)]
struct Plan {
    steps: Vec<Step>,
    process: u8,
    seed: u32,
}

impl Plan {
    fn seeded(first_seed: u32) -> Self {
        Self { seed: first_seed, ..Self::default() }
    }

    fn op(&mut self, op: Op) {
        self.steps.push(Step { process: self.process, op });
    }

    fn create(&mut self, path: &str, length: usize) {
        self.seed += 1;
        self.op(Op::Create { path: path.into(), seed: self.seed, length });
    }

    fn write(&mut self, path: &str, offset: usize, length: usize) {
        self.seed += 1;
        self.op(Op::Write { path: path.into(), seed: self.seed, offset, length });
    }

    fn fsync(&mut self, path: &str) {
        self.op(Op::Fsync(path.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(operation: u64, end: bool) -> Event {
        let mut bytes = vec![0u8; 512];
        bytes[..16].copy_from_slice(MARKER_MAGIC);
        bytes[16..24].copy_from_slice(&operation.to_le_bytes());
        bytes[24] = u8::from(end);
        Event::Write { sector: 1000 + operation * 2 + u64::from(end), bytes }
    }

    #[test]
    fn the_plan_text_names_every_operation_once_per_line() {
        let steps = kernel_workload();
        let text = text(&steps);
        assert_eq!(text.lines().count(), steps.len());
        assert!(text.lines().all(|line| line.split(' ').count() >= 2));
        assert!(text.contains("0 rename /a /b\n") && text.contains("1 fsync /pa/log\n") && text.contains("2 create /pb/next "));
    }

    #[test]
    fn concurrent_processes_touch_disjoint_paths_and_never_sync() {
        let steps = kernel_workload();
        let paths_of = |process: u8| -> Vec<String> {
            steps
                .iter()
                .filter(|step| step.process == process)
                .flat_map(|step| match &step.op {
                    Op::Sync => panic!("process {process} syncs"),
                    Op::Rename(from, to) => vec![from.clone(), to.clone()],
                    Op::Mkdir(path) | Op::Rmdir(path) | Op::Fsync(path) | Op::Unlink(path) => vec![path.clone()],
                    Op::Create { path, .. } | Op::Write { path, .. } => vec![path.clone()],
                    Op::Sql { database, .. } => vec![database.clone()],
                })
                .collect()
        };
        let (one, two) = (paths_of(1), paths_of(2));
        assert!(!one.is_empty() && !two.is_empty());
        assert!(one.iter().all(|path| !two.contains(path)));
    }

    #[test]
    fn markers_give_each_operation_its_span_and_the_model_its_promises() {
        let steps = vec![
            Step { process: 0, op: Op::Create { path: "/f".into(), seed: 1, length: 10 } },
            Step { process: 0, op: Op::Fsync("/f".into()) },
        ];
        let data = Event::Write { sector: 8, bytes: vec![1; 1024] };
        let events = vec![marker(0, false), data.clone(), marker(0, true), marker(1, false), data, Event::Flush, marker(1, true)];
        let positions = marker_positions(&events, 1000, 2).unwrap();
        assert_eq!(positions, [(0, 2), (3, 6)]);
        let model = model_of(&steps, &positions, events.len()).unwrap();
        assert_eq!(model.promises.iter().filter(|promise| promise.path == "/f").map(|promise| promise.returned_at).min(), Some(6));
        assert_eq!(model.allowed("/f", 1).len(), 3, "absent, empty or written while the create runs");
        assert_eq!(model.allowed("/f", 7), [&Some(Node::File { identity: 1, content: bytes_for(1, 10) })]);
    }

    #[test]
    fn sql_rows_follow_the_inserts_begun_and_ended_before_the_crash() {
        let steps = sqlite_workload();
        let positions: Vec<(usize, usize)> = (0..steps.len()).map(|index| (index * 10, index * 10 + 5)).collect();
        let spans = sql_spans(&steps, &positions, SQL_DATABASE);
        assert_eq!(spans.len(), 1 + SQL_ROWS as usize);
        // Step 0 is the mkdir, 1 the create (10..15), 2 the first insert (20..25).
        assert_eq!(sql_rows_allowed(&spans, 12), (0, 0, false));
        assert_eq!(sql_rows_allowed(&spans, 15), (0, 0, true));
        assert_eq!(sql_rows_allowed(&spans, 21), (0, 1, true), "the first insert runs");
        assert_eq!(sql_rows_allowed(&spans, 25), (1, 1, true), "and returned");
        let model = model_of(&steps, &positions, 1000).unwrap();
        assert!(model.is_opaque("/sql/db") && model.is_opaque("/sql/db-journal") && !model.is_opaque("/sql"));
    }

    #[test]
    fn a_missing_or_repeated_marker_is_an_error() {
        let events = vec![marker(0, false), marker(0, true), marker(1, false)];
        assert!(marker_positions(&events, 1000, 2).is_err(), "operation 1 never ended");
        let events = vec![marker(0, false), marker(0, false), marker(0, true)];
        assert!(marker_positions(&events, 1000, 1).is_err());
        let events = vec![marker(5, false)];
        assert!(marker_positions(&events, 1000, 1).is_err(), "no operation 5");
    }
}
