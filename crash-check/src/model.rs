//! What the workload did, as the crash checker needs it: every path's
//! history of versions (with the log position where the operation that
//! made each one started) and the durability promises (fsync, sync) with
//! the log position where they returned.
//!
//! For a crash at log position `bound`, a path may show any version from
//! the newest one promised before `bound` to the newest one whose
//! operation started before `bound`.

use std::collections::BTreeMap;

/// What a path names.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Node {
    Directory,
    /// A regular file: `identity` tells files apart across renames.
    File { identity: u32, content: Vec<u8> },
}

/// One state of a path.
#[derive(Clone, Debug)]
pub struct Version {
    /// Log position when the operation that made it started.
    pub started_at: usize,
    /// `None`: the path does not exist.
    pub node: Option<Node>,
}

/// A promise that a path shows at least this version.
#[derive(Clone, Debug)]
pub struct Promise {
    /// Log position when fsync or sync returned.
    pub returned_at: usize,
    pub path: String,
    pub version: usize,
}

#[derive(Default, Debug)]
pub struct Model {
    pub history: BTreeMap<String, Vec<Version>>,
    pub promises: Vec<Promise>,
    /// Directories whose contents another verdict judges (a database's
    /// files): paths below them are not compared with the history.
    pub opaque: Vec<String>,
    next_identity: u32,
}

impl Model {
    /// A fresh identity for a new file.
    pub fn new_identity(&mut self) -> u32 {
        self.next_identity += 1;
        self.next_identity
    }

    /// What `path` names now.
    pub fn current(&self, path: &str) -> Option<&Node> {
        self.history.get(path).and_then(|versions| versions.last()).and_then(|version| version.node.as_ref())
    }

    /// Records that an operation started at `started_at` made `path` name `node`.
    pub fn set(&mut self, path: &str, node: Option<Node>, started_at: usize) {
        let versions = self.history.entry(path.to_string()).or_insert_with(|| vec![Version { started_at: 0, node: None }]);
        versions.push(Version { started_at, node });
    }

    /// The paths strictly below directory `directory` that exist now.
    pub fn existing_below(&self, directory: &str) -> Vec<String> {
        let prefix = format!("{directory}/");
        self.history
            .keys()
            .filter(|path| path.starts_with(&prefix) && self.current(path).is_some())
            .cloned()
            .collect()
    }

    /// An operation started at `started_at` created the empty file `path`.
    pub fn create_file(&mut self, path: &str, started_at: usize) {
        let identity = self.new_identity();
        self.set(path, Some(Node::File { identity, content: Vec::new() }), started_at);
    }

    /// An operation started at `started_at` wrote `data` at `offset` of
    /// the file `path` (growing it, zero-filled, as needed). `None` when
    /// `path` is no file.
    pub fn write_file(&mut self, path: &str, offset: usize, data: &[u8], started_at: usize) -> Option<()> {
        let Some(Node::File { identity, content }) = self.current(path).cloned() else { return None };
        let mut content = content;
        if content.len() < offset + data.len() {
            content.resize(offset + data.len(), 0);
        }
        content[offset..offset + data.len()].copy_from_slice(data);
        self.set(path, Some(Node::File { identity, content }), started_at);
        Some(())
    }

    /// An operation started at `started_at` renamed `from` to `to`
    /// (replacing what was there), moving everything below a directory.
    pub fn rename(&mut self, from: &str, to: &str, started_at: usize) {
        let below = self.existing_below(from);
        let moved = self.current(from).cloned();
        self.set(from, None, started_at);
        self.set(to, moved, started_at);
        for path in below {
            let node = self.current(&path).cloned();
            self.set(&path, None, started_at);
            self.set(&format!("{to}{}", &path[from.len()..]), node, started_at);
        }
    }

    /// `path`'s current version is durable from `returned_at` on.
    pub fn promise(&mut self, path: &str, returned_at: usize) {
        if let Some(versions) = self.history.get(path) {
            let promise = Promise { returned_at, path: path.to_string(), version: versions.len() - 1 };
            self.promises.push(promise);
        }
    }

    /// Every path's current version is durable from `returned_at` on.
    pub fn promise_all(&mut self, returned_at: usize) {
        let paths: Vec<String> = self.history.keys().cloned().collect();
        for path in paths {
            self.promise(&path, returned_at);
        }
    }

    /// Whether `path` lies below a directory another verdict judges.
    pub fn is_opaque(&self, path: &str) -> bool {
        self.opaque.iter().any(|directory| path.strip_prefix(directory.as_str()).is_some_and(|rest| rest.starts_with('/')))
    }

    /// The versions `path` may show after a crash at `bound`.
    pub fn allowed(&self, path: &str, bound: usize) -> Vec<&Option<Node>> {
        let Some(versions) = self.history.get(path) else { return vec![&None] };
        let promised = self
            .promises
            .iter()
            .filter(|promise| promise.path == path && promise.returned_at <= bound)
            .map(|promise| promise.version)
            .max()
            .unwrap_or(0);
        versions
            .iter()
            .enumerate()
            .filter(|(index, version)| *index == promised || (*index > promised && version.started_at < bound))
            .map(|(_, version)| &version.node)
            .collect()
    }
}
