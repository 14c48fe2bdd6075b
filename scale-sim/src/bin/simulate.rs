//! `cargo xtask simulate [--figure NAME[,NAME…]|all]`: makes the figures of
//! `docs/scale.md` from the committed cost model and traces, writes their
//! plots to `docs/scale/` and their tables into `docs/scale.md` between
//! `<!-- figure NAME -->` and `<!-- end figure NAME -->`.
//!
//! Must not touch anything else in the document.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use scale_sim::experiments::Setup;
use scale_sim::figures::{figure, App, Apps, NAMES};
use scale_sim::trace::parse;
use scale_sim::workload::{from_trace, Mapping};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").to_path_buf()
}

/// Every `scale-sim/traces/<name>.trace`, by name.
fn apps() -> Result<Apps, String> {
    let directory = workspace().join("scale-sim/traces");
    let Ok(entries) = std::fs::read_dir(&directory) else { return Ok(Vec::new()) };
    let mut paths: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).filter(|path| path.extension().is_some_and(|ext| ext == "trace")).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
            let trace = parse(&text).map_err(|error| format!("{}: {error}", path.display()))?;
            let name = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
            let requests = trace.records.iter().filter(|record| record.name.starts_with("accept") && record.ret >= 0).count();
            Ok(App { name, steps: Arc::from(from_trace(&trace, Mapping::default())), requests })
        })
        .collect()
}

/// Replaces the text between figure `name`'s markers in `document`.
fn place(document: &str, name: &str, table: &str) -> Result<String, String> {
    let begin = format!("<!-- figure {name} -->\n");
    let end = format!("<!-- end figure {name} -->");
    let start = document.find(&begin).ok_or_else(|| format!("docs/scale.md has no `{}` marker", begin.trim()))? + begin.len();
    let stop = document[start..].find(&end).ok_or_else(|| format!("docs/scale.md has no `{end}` marker"))? + start;
    Ok(format!("{}{}\n{}", &document[..start], table.trim_end(), &document[stop..]))
}

fn run(names: &[&str]) -> Result<(), String> {
    let setup = Setup::committed()?;
    let apps = apps()?;
    let docs = workspace().join("docs");
    let plots = docs.join("scale");
    std::fs::create_dir_all(&plots).map_err(|error| format!("{}: {error}", plots.display()))?;
    let document_path = docs.join("scale.md");
    let mut document = std::fs::read_to_string(&document_path).map_err(|error| format!("{}: {error}", document_path.display()))?;
    for name in names {
        let started = Instant::now();
        let made = figure(name, &setup, &apps)?;
        for (file, svg) in &made.plots {
            std::fs::write(plots.join(file), svg).map_err(|error| format!("{file}: {error}"))?;
        }
        document = place(&document, made.name, &made.table)?;
        println!("simulate: figure {name} in {:.1} s", started.elapsed().as_secs_f64());
    }
    std::fs::write(&document_path, document).map_err(|error| format!("{}: {error}", document_path.display()))
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let chosen = match arguments.as_slice() {
        [] => "all".to_string(),
        [flag, value] if flag == "--figure" => value.clone(),
        [flag] if flag.starts_with("--figure=") => flag["--figure=".len()..].to_string(),
        _ => {
            eprintln!("usage: cargo xtask simulate [--figure NAME[,NAME…]|all]; figures: {}", NAMES.join(", "));
            std::process::exit(2);
        }
    };
    let names: Vec<&str> = if chosen == "all" { NAMES.to_vec() } else { chosen.split(',').collect() };
    if let Some(unknown) = names.iter().find(|name| !NAMES.contains(name)) {
        eprintln!("simulate: no figure `{unknown}`; figures: {}", NAMES.join(", "));
        std::process::exit(2);
    }
    if let Err(error) = run(&names) {
        eprintln!("simulate: {error}");
        std::process::exit(1);
    }
}
