//! `cargo xtask crates`: the workspace's crate graph, from `cargo metadata`,
//! checked against the layer order of the root `Cargo.toml` (a crate may
//! depend only on crates listed above it) and written to `docs/crates.md`
//! as a Mermaid picture and a table, so that the picture stays true (the
//! host tier fails when the committed file differs from what this makes).
//! It also counts each crate's Rust lines (every `.rs` file under its
//! directory) and refuses a crate that holds more than
//! [`LARGEST_SHARE_PERCENT`] of the workspace's: past that a crate is
//! doing several jobs and should be split (issue 16's rule).
//!
//! Must never change any file but `docs/crates.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::failure::{Context, Failure, Outcome};
use crate::json::Value;
use crate::workspace;

/// Where the picture goes, from the workspace root.
pub const GRAPH_FILE: &str = "docs/crates.md";

/// No crate may hold more than this share of the workspace's Rust lines.
pub const LARGEST_SHARE_PERCENT: usize = 15;

/// The workspace's crates in layer order and each one's workspace
/// dependencies (normal and build; dev-dependencies are the host tests').
pub struct CrateGraph {
    pub order: Vec<String>,
    pub dependencies: BTreeMap<String, BTreeSet<String>>,
}

pub fn crates_command() -> Outcome {
    let graph = read_graph()?;
    graph.check_layer_order().map_err(Failure::failed)?;
    let path = workspace::root().join(GRAPH_FILE);
    std::fs::write(&path, graph.render()).context(|| format!("writing {}", path.display()))?;
    println!("{}", path.display());
    let sizes = crate_sizes(&graph.order)?;
    let total: usize = sizes.iter().map(|(_, lines)| lines).sum();
    for (name, lines) in &sizes {
        println!("{lines:>7} lines {:>3} %  {name}", lines * 100 / total.max(1));
    }
    check_sizes(&sizes).map_err(Failure::failed)
}

/// Each crate's Rust lines: every `.rs` file under its directory (its
/// `target/` excepted), largest first.
pub fn crate_sizes(order: &[String]) -> Outcome<Vec<(String, usize)>> {
    fn lines_under(directory: &std::path::Path) -> std::io::Result<usize> {
        let mut lines = 0;
        for entry in std::fs::read_dir(directory)? {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name != "target") {
                    lines += lines_under(&path)?;
                }
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                lines += std::fs::read_to_string(&path)?.lines().count();
            }
        }
        Ok(lines)
    }
    let mut sizes = Vec::new();
    for name in order {
        let directory = workspace::root().join(name);
        sizes.push((name.clone(), lines_under(&directory).context(|| format!("counting lines under {}", directory.display()))?));
    }
    sizes.sort_by(|a, b| b.1.cmp(&a.1));
    Ok(sizes)
}

/// `Err` naming every crate over [`LARGEST_SHARE_PERCENT`] of the total.
pub fn check_sizes(sizes: &[(String, usize)]) -> Result<(), String> {
    let total: usize = sizes.iter().map(|(_, lines)| lines).sum();
    let over: Vec<String> = sizes
        .iter()
        .filter(|(_, lines)| lines * 100 > total * LARGEST_SHARE_PERCENT)
        .map(|(name, lines)| format!("{name} holds {lines} of the workspace's {total} Rust lines, more than {LARGEST_SHARE_PERCENT} %: split it"))
        .collect();
    if over.is_empty() {
        Ok(())
    } else {
        Err(over.join("\n"))
    }
}

/// The graph of this workspace, as `cargo metadata` and the root manifest say.
pub fn read_graph() -> Outcome<CrateGraph> {
    let manifest = std::fs::read_to_string(workspace::root().join("Cargo.toml")).context(|| "reading Cargo.toml".to_string())?;
    let order = member_order(&manifest);
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(workspace::root())
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .output()
        .context(|| "running cargo metadata".to_string())?;
    if !output.status.success() {
        return Err(Failure::failed(format!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr))));
    }
    let metadata = crate::json_parser::parse(&String::from_utf8_lossy(&output.stdout)).map_err(Failure::failed)?;
    let dependencies = workspace_dependencies(&metadata, &order)?;
    Ok(CrateGraph { order, dependencies })
}

/// The directory names in `members = [...]`, in order (each member's
/// directory is its package name here).
fn member_order(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members = [") else { return Vec::new() };
    let list = &manifest[start..];
    let end = list.find(']').unwrap_or(list.len());
    list[..end]
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let quoted = line.strip_prefix('"')?;
            Some(quoted[..quoted.find('"')?].to_string())
        })
        .collect()
}

fn workspace_dependencies(metadata: &Value, order: &[String]) -> Outcome<BTreeMap<String, BTreeSet<String>>> {
    let Some(Value::Array(packages)) = metadata.field("packages") else {
        return Err(Failure::failed("cargo metadata gave no packages"));
    };
    let mut graph = BTreeMap::new();
    for package in packages {
        let name = package.text_field("name").unwrap_or_default().to_string();
        if !order.contains(&name) {
            continue;
        }
        let mut uses = BTreeSet::new();
        if let Some(Value::Array(dependencies)) = package.field("dependencies") {
            for dependency in dependencies {
                let wanted = dependency.text_field("name").unwrap_or_default();
                let development = dependency.text_field("kind") == Some("dev");
                if !development && order.iter().any(|member| member == wanted) {
                    uses.insert(wanted.to_string());
                }
            }
        }
        graph.insert(name, uses);
    }
    Ok(graph)
}

impl CrateGraph {
    /// `Err` naming every dependency on a crate listed at or below the
    /// dependent one.
    pub fn check_layer_order(&self) -> Result<(), String> {
        let position = |name: &str| self.order.iter().position(|member| member == name);
        let wrong: Vec<String> = self
            .dependencies
            .iter()
            .flat_map(|(name, uses)| uses.iter().map(move |used| (name, used)))
            .filter(|(name, used)| position(used) >= position(name))
            .map(|(name, used)| format!("{name} depends on {used}, which the root Cargo.toml lists below it"))
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("\n"))
        }
    }

    /// The crates `name` reaches through its dependencies, itself excluded.
    fn reachable(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut to_visit: Vec<&String> = self.dependencies.get(name).into_iter().flatten().collect();
        while let Some(next) = to_visit.pop() {
            if seen.insert(next.clone()) {
                to_visit.extend(self.dependencies.get(next).into_iter().flatten());
            }
        }
        seen
    }

    /// Direct dependencies no other direct dependency already brings in
    /// (what the picture draws; the table lists them all).
    fn drawn_edges(&self, name: &str) -> Vec<String> {
        let direct = self.dependencies.get(name).cloned().unwrap_or_default();
        direct
            .iter()
            .filter(|used| !direct.iter().any(|other| other != *used && self.reachable(other).contains(*used)))
            .cloned()
            .collect()
    }

    /// The Markdown file: a Mermaid graph (edges point at what a crate
    /// uses) and a table of every direct workspace dependency.
    pub fn render(&self) -> String {
        let mut text = String::from(
            "# The crate graph\n\n\
             Generated by `cargo xtask crates` from `cargo metadata`; the host tier\n\
             fails when this file is stale or a crate depends on one listed below it\n\
             in the root `Cargo.toml` (the layer order). An arrow points at what a\n\
             crate uses; arrows implied by others are left out of the picture, not\n\
             out of the table.\n\n```mermaid\ngraph TD\n",
        );
        let node = |name: &str| name.replace('-', "_");
        for name in self.order.iter().filter(|name| self.dependencies.contains_key(*name)) {
            text.push_str(&format!("    {}[{name}]\n", node(name)));
        }
        for name in &self.order {
            for used in self.drawn_edges(name) {
                text.push_str(&format!("    {} --> {}\n", node(name), node(&used)));
            }
        }
        text.push_str("```\n\n| crate | uses (workspace crates) |\n|---|---|\n");
        for name in self.order.iter().filter(|name| self.dependencies.contains_key(*name)) {
            let uses: Vec<&str> = self.order.iter().filter(|member| self.dependencies[name].contains(*member)).map(String::as_str).collect();
            text.push_str(&format!("| `{name}` | {} |\n", if uses.is_empty() { "—".to_string() } else { uses.join(", ") }));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(order: &[&str], edges: &[(&str, &str)]) -> CrateGraph {
        let mut dependencies: BTreeMap<String, BTreeSet<String>> = order.iter().map(|name| (name.to_string(), BTreeSet::new())).collect();
        for (from, to) in edges {
            dependencies.get_mut(*from).unwrap().insert(to.to_string());
        }
        CrateGraph { order: order.iter().map(|name| name.to_string()).collect(), dependencies }
    }

    #[test]
    fn a_dependency_on_a_lower_crate_is_refused() {
        assert!(graph(&["a", "b"], &[("b", "a")]).check_layer_order().is_ok());
        let wrong = graph(&["a", "b"], &[("a", "b")]).check_layer_order().unwrap_err();
        assert!(wrong.contains("a depends on b"), "{wrong}");
    }

    #[test]
    fn implied_edges_are_not_drawn() {
        let layers = graph(&["a", "b", "c"], &[("b", "a"), ("c", "b"), ("c", "a")]);
        assert_eq!(layers.drawn_edges("c"), vec!["b".to_string()]);
        assert!(layers.render().contains("| `c` | a, b |"));
    }

    #[test]
    fn the_members_list_is_read_in_order() {
        let manifest = "[workspace]\nmembers = [\n    \"machine\",   # layer 0\n    # a comment\n    \"linux-abi\", # x\n]\n";
        assert_eq!(member_order(manifest), vec!["machine".to_string(), "linux-abi".to_string()]);
    }

    #[test]
    fn a_crate_over_the_largest_share_is_refused() {
        let sizes = |lines: &[usize]| lines.iter().enumerate().map(|(index, lines)| (format!("c{index}"), *lines)).collect::<Vec<_>>();
        assert!(check_sizes(&sizes(&[15, 15, 70])).unwrap_err().contains("c2 holds 70"));
        assert!(check_sizes(&sizes(&[15; 7].iter().chain(&[10, 5]).copied().collect::<Vec<_>>())).is_ok());
        assert!(check_sizes(&sizes(&[16, 84])).is_err());
    }

    /// No crate of this workspace is doing several crates' jobs.
    #[test]
    fn no_crate_holds_more_than_the_largest_share() {
        let graph = read_graph().expect("cargo metadata");
        let sizes = crate_sizes(&graph.order).expect("counting lines");
        check_sizes(&sizes).unwrap();
    }

    /// The committed picture is what the workspace is now, and the
    /// workspace keeps the layer order.
    #[test]
    fn the_committed_crate_graph_is_current() {
        let graph = read_graph().expect("cargo metadata");
        graph.check_layer_order().expect("layer order");
        let committed = std::fs::read_to_string(workspace::root().join(GRAPH_FILE)).unwrap_or_default();
        assert!(committed == graph.render(), "{GRAPH_FILE} is stale: run `cargo xtask crates`");
    }
}
