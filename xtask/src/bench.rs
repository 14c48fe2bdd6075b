//! `cargo xtask bench [--groups a,b]`: runs benchmark groups, prints a table
//! and merges the records into `target/bench/results.json`.
//!
//! Known groups: `boot`, `locks`, `ipc`, `sched`, `mem`, `caps`, `multikernel`, `costs`,
//! `syscalls`, `apps`, `fs`, `net`, `scaling`. Each issue that adds benchmarks adds its group to [`GROUPS`].

use crate::arguments::{unexpected, Argument, Arguments};
use crate::bench_results::{save_records, BenchmarkRecord};
use crate::boottime::{measure_boot_time, BoottimeOptions};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Failure, Outcome};
use crate::kernel_bench::run_kernel_group;
use crate::kernel_build::{build_kernel, ImageKind};

/// A benchmark group and how to run it.
struct Group {
    name: &'static str,
    run: fn() -> Outcome<Vec<BenchmarkRecord>>,
}

const GROUPS: &[Group] = &[
    Group {
        name: "boot",
        run: run_boot_group,
    },
    Group {
        name: "locks",
        run: run_locks_group,
    },
    Group {
        name: "ipc",
        run: run_ipc_group,
    },
    Group {
        name: "sched",
        run: run_sched_group,
    },
    Group {
        name: "mem",
        run: run_mem_group,
    },
    Group {
        name: "caps",
        run: run_caps_group,
    },
    Group {
        name: "multikernel",
        run: run_multikernel_group,
    },
    Group {
        name: "costs",
        run: crate::cost_model::run_costs_group,
    },
    Group {
        name: "syscalls",
        run: crate::linux_bench::run_syscalls_group,
    },
    Group {
        name: "apps",
        run: crate::linux_bench::run_apps_group,
    },
    Group {
        name: "fs",
        run: crate::fs_bench::run_fs_group,
    },
    Group {
        name: "net",
        run: crate::net_bench::run_net_group,
    },
    Group {
        name: "scaling",
        run: crate::linux_bench::run_scaling_group,
    },
    Group {
        name: "vm",
        run: crate::vm_bench::run_vm_group,
    },
];

/// `cargo xtask bench`.
pub fn bench_command(mut arguments: Arguments) -> Outcome {
    let groups = parse_bench_arguments(&mut arguments)?;
    ensure_dependencies()?;
    let mut records = Vec::new();
    for group in groups {
        println!("xtask: benchmark group {}", group.name);
        records.extend((group.run)()?);
    }
    print_table(&records);
    println!("results written to {}", save_records(&records)?.display());
    if records.iter().any(|record| crate::linux_bench::ratio(record).is_some()) {
        let chart = crate::bench_results::results_path().with_file_name("ratios.svg");
        std::fs::write(&chart, crate::linux_bench::chart(&records))
            .map_err(|error| Failure::failed(format!("writing {}: {error}", chart.display())))?;
        println!("chart written to {}", chart.display());
    }
    Ok(())
}

/// The groups named by `--groups` (all known groups without it).
fn parse_bench_arguments(arguments: &mut Arguments) -> Outcome<Vec<&'static Group>> {
    let mut groups: Vec<&'static Group> = GROUPS.iter().collect();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--groups" => {
                groups = select_groups(&arguments.value(&flag)?)?
            }
            other => return Err(unexpected("bench", other)),
        }
    }
    Ok(groups)
}

/// Looks up each comma-separated name; an unknown one is a usage error.
fn select_groups(names: &str) -> Outcome<Vec<&'static Group>> {
    names.split(',').map(str::trim).map(find_group).collect()
}

fn find_group(name: &str) -> Outcome<&'static Group> {
    GROUPS
        .iter()
        .find(|group| group.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = GROUPS.iter().map(|group| group.name).collect();
            Failure::usage(format!(
                "unknown benchmark group `{name}`; known groups: {}",
                known.join(", ")
            ))
        })
}

/// Host-native lock records (the spinlock crate's benchmark, rdtsc cycles)
/// plus the in-kernel efficiency records under TCG.
fn run_locks_group() -> Outcome<Vec<BenchmarkRecord>> {
    let mut records = crate::host_lock_bench::run()?;
    records.extend(run_kernel_group("locks")?);
    Ok(records)
}

fn run_sched_group() -> Outcome<Vec<BenchmarkRecord>> {
    run_kernel_group("sched")
}

fn run_ipc_group() -> Outcome<Vec<BenchmarkRecord>> {
    run_kernel_group("ipc")
}

fn run_mem_group() -> Outcome<Vec<BenchmarkRecord>> {
    run_kernel_group("mem")
}

fn run_caps_group() -> Outcome<Vec<BenchmarkRecord>> {
    run_kernel_group("caps")
}

fn run_multikernel_group() -> Outcome<Vec<BenchmarkRecord>> {
    run_kernel_group("multikernel")
}

fn run_boot_group() -> Outcome<Vec<BenchmarkRecord>> {
    let image = build_kernel(ImageKind::Normal)?;
    Ok(vec![measure_boot_time(&image, BoottimeOptions::default())?])
}

fn print_table(records: &[BenchmarkRecord]) {
    let shown = |value: Option<f64>| value.map_or("-".to_string(), |value| format!("{value:.4e}"));
    println!(
        "{:<8} {:<38} {:<12} {:>12} {:>12} {:>12} {:>7} {:>7}",
        "group", "name", "unit", "lamina", "linux", "linux-nomit", "ratio", "spread"
    );
    for record in records {
        let ratio = crate::linux_bench::ratio(record).map_or("-".to_string(), |ratio| format!("{ratio:.2}"));
        let noisy = if record.spread > 0.10 { " noisy" } else { "" };
        println!(
            "{:<8} {:<38} {:<12} {:>12} {:>12} {:>12} {:>7} {:>7.3}",
            record.group,
            record.name,
            record.unit,
            shown(record.lamina),
            shown(record.linux),
            shown(record.linux_no_mitigations),
            ratio,
            record.spread
        );
        if !noisy.is_empty() {
            println!("{:>8} (spread above 10%: take this record as indicative only)", "");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Outcome<Vec<&'static str>> {
        let mut arguments = Arguments::new(list.iter().map(|text| text.to_string()));
        Ok(parse_bench_arguments(&mut arguments)?
            .iter()
            .map(|group| group.name)
            .collect())
    }

    #[test]
    fn all_groups_by_default_and_named_groups_on_request() {
        assert_eq!(names(&[]), Ok(vec!["boot", "locks", "ipc", "sched", "mem", "caps", "multikernel", "costs", "syscalls", "apps", "fs", "net", "scaling", "vm"]));
        assert_eq!(names(&["--groups", "boot"]), Ok(vec!["boot"]));
        assert_eq!(
            names(&["--groups", "sched,locks"]),
            Ok(vec!["sched", "locks"])
        );
    }

    #[test]
    fn unknown_groups_are_refused_with_the_known_list() {
        let Err(Failure::Usage(message)) = names(&["--groups", "boot,nosuch"]) else {
            panic!("accepted")
        };
        assert!(
            message.contains("`nosuch`") && message.contains("known groups: boot, locks, ipc, sched, mem"),
            "{message}"
        );
        assert!(
            matches!(names(&["--groups="]), Err(Failure::Usage(_))),
            "empty list accepted"
        );
    }
}
