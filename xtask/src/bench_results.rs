//! Benchmark records and `target/bench/results.json` (DESIGN.md, "Benchmark
//! output"): new records replace older ones of the same group and name;
//! records of other names are kept.

use crate::failure::{Context, Outcome};
use crate::json::Value;
use crate::json_parser;
use crate::workspace;
use std::path::{Path, PathBuf};

/// One benchmark result.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkRecord {
    pub group: String,
    pub name: String,
    pub unit: String,
    /// Median over `runs` on Lamina.
    pub lamina: Option<f64>,
    /// Median over `runs` on Linux.
    pub linux: Option<f64>,
    /// Median on Linux booted with `mitigations=off`.
    pub linux_no_mitigations: Option<f64>,
    pub cpu_count: u32,
    pub accelerator: String,
    pub runs: usize,
    /// (max - min) / median.
    pub spread: f64,
}

fn optional_number(number: Option<f64>) -> Value {
    number.map_or(Value::Null, Value::number)
}

impl BenchmarkRecord {
    /// The record with DESIGN.md's keys, in its order.
    pub fn to_value(&self) -> Value {
        let text = |text: &str| Value::String(text.to_string());
        Value::Object(vec![
            ("group".into(), text(&self.group)),
            ("name".into(), text(&self.name)),
            ("unit".into(), text(&self.unit)),
            ("lamina".into(), optional_number(self.lamina)),
            ("linux".into(), optional_number(self.linux)),
            (
                "linux_nomitig".into(),
                optional_number(self.linux_no_mitigations),
            ),
            ("smp".into(), Value::Number(self.cpu_count.to_string())),
            ("accel".into(), text(&self.accelerator)),
            ("runs".into(), Value::Number(self.runs.to_string())),
            ("spread".into(), Value::number(self.spread)),
        ])
    }
}

/// `target/bench/results.json`.
pub fn results_path() -> PathBuf {
    workspace::target_directory()
        .join("bench")
        .join("results.json")
}

/// `existing` with each record of the same group and name as a new one
/// replaced in place; the other new records appended.
pub fn merge_records(mut existing: Vec<Value>, new: &[BenchmarkRecord]) -> Vec<Value> {
    for record in new {
        let same = |value: &Value| {
            value.text_field("group") == Some(&record.group)
                && value.text_field("name") == Some(&record.name)
        };
        match existing.iter_mut().find(|value| same(value)) {
            Some(slot) => *slot = record.to_value(),
            None => existing.push(record.to_value()),
        }
    }
    existing
}

/// One record per line.
pub fn render(records: &[Value]) -> String {
    let lines: Vec<String> = records.iter().map(|record| format!("  {record}")).collect();
    format!("[\n{}\n]\n", lines.join(",\n"))
}

/// Merges `new` into the results file; returns its path.
pub fn save_records(new: &[BenchmarkRecord]) -> Outcome<PathBuf> {
    let path = results_path();
    let existing = read_records(&path)?;
    let directory = path
        .parent()
        .expect("the results file is inside target/bench");
    std::fs::create_dir_all(directory)
        .context(|| format!("cannot create {}", directory.display()))?;
    let text = render(&merge_records(existing, new));
    std::fs::write(&path, text).context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The records in the file; none if it does not exist. An unreadable file
/// is kept aside as `results.json.unreadable` rather than lost.
fn read_records(path: &Path) -> Outcome<Vec<Value>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    match json_parser::parse(&text) {
        Ok(Value::Array(records)) => Ok(records),
        Ok(_) => set_aside(path, "it is not a JSON array"),
        Err(error) => set_aside(path, &error),
    }
}

fn set_aside(path: &Path, why: &str) -> Outcome<Vec<Value>> {
    let aside = path.with_extension("json.unreadable");
    eprintln!(
        "xtask: {} is unreadable ({why}); keeping it as {}",
        path.display(),
        aside.display()
    );
    std::fs::rename(path, &aside).context(|| format!("cannot rename {}", path.display()))?;
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, lamina: f64) -> BenchmarkRecord {
        BenchmarkRecord {
            group: "boot".into(),
            name: name.into(),
            unit: "ns".into(),
            lamina: Some(lamina),
            linux: None,
            linux_no_mitigations: None,
            cpu_count: 2,
            accelerator: "tcg".into(),
            runs: 10,
            spread: 0.25,
        }
    }

    #[test]
    fn a_record_has_design_md_keys_in_order() {
        assert_eq!(
            record("boot_to_prompt_smp2", 1.5e9).to_value().to_string(),
            r#"{"group": "boot", "name": "boot_to_prompt_smp2", "unit": "ns", "lamina": 1500000000.0, "linux": null, "linux_nomitig": null, "smp": 2, "accel": "tcg", "runs": 10, "spread": 0.25}"#
        );
    }

    #[test]
    fn merging_replaces_same_names_and_keeps_others() {
        let other =
            json_parser::parse(r#"{"group": "locks", "name": "ticket_uncontended", "lamina": 21}"#)
                .unwrap();
        let existing = vec![record("a", 1.0).to_value(), other.clone()];
        let merged = merge_records(existing, &[record("a", 2.0), record("b", 3.0)]);
        assert_eq!(
            merged,
            [
                record("a", 2.0).to_value(),
                other,
                record("b", 3.0).to_value()
            ]
        );
        let reread = json_parser::parse(&render(&merged)).unwrap();
        assert_eq!(reread, Value::Array(merged));
    }
}
