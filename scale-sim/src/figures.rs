//! The figures of `docs/scale.md`, each next to what SemperOS reports:
//! chain and tree revocation across kernels (its Figures 4 and 5), the
//! parallel efficiency of the applications (Figures 6–8), system
//! efficiency (Figure 9), and the cross-check of the model against
//! Lamina's own multikernel benchmark.
//!
//! Must compute every number from the committed cost model and traces;
//! a figure that cannot be made (a trace missing) says so in its table.

use std::fmt::Write;
use std::sync::Arc;

use crate::experiments::{efficiency, exchange, revoke_chain, revoke_tree, Setup};
use crate::plot::{Plot, Scale, Series};
use crate::workload::Step;
use crate::world::KernelWait;

/// A figure: its name, its plots (file name, SVG) and its markdown table.
pub struct Figure {
    pub name: &'static str,
    pub plots: Vec<(String, String)>,
    pub table: String,
}

/// An application's workload.
pub struct App {
    pub name: String,
    pub steps: Arc<[Step]>,
    /// Requests it serves (a server's accepted connections).
    pub requests: usize,
}

/// The applications, by name.
pub type Apps = Vec<App>;

/// Every figure's name, in the order of `docs/scale.md`.
pub const NAMES: [&str; 8] = ["crosscheck", "chain", "tree", "apps", "services", "kernels", "system", "nginx"];

/// Makes figure `name`.
pub fn figure(name: &str, setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    match name {
        "crosscheck" => crosscheck(setup),
        "chain" => chain(setup),
        "tree" => tree(setup),
        "apps" => app_efficiency(setup, apps),
        "services" => services(setup, apps),
        "kernels" => kernels(setup, apps),
        "system" => system(setup, apps),
        "nginx" => nginx(setup, apps),
        other => Err(format!("no figure `{other}`; figures: {}", NAMES.join(", "))),
    }
}

fn with_wait(setup: &Setup, wait: KernelWait) -> Setup {
    Setup { wait, ..setup.clone() }
}

fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A markdown table's header: `first`, then a column per label.
fn header(first: &str, labels: impl IntoIterator<Item = String>) -> String {
    let mut text = format!("| {first} |");
    let mut count = 0;
    for label in labels {
        let _ = write!(text, " {label} |");
        count += 1;
    }
    text.push_str("\n|---|");
    text.push_str(&"---|".repeat(count));
    text.push('\n');
    text
}

const CHAIN_LENGTHS: [usize; 6] = [1, 10, 50, 100, 500, 1000];
const CHAIN_KERNELS: [usize; 4] = [1, 2, 4, 64];

/// SemperOS's Figure 4: revoking a chain, group-local and spanning.
fn chain(setup: &Setup) -> Result<Figure, String> {
    let mut table = String::from("| chain length | kernels park: local | 2 kernels | 4 | 64 | spanning (2) ÷ local | kernels poll: local | 2 kernels | spanning (2) ÷ local |\n|---|---|---|---|---|---|---|---|---|\n");
    let mut plots = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for wait in [KernelWait::Park, KernelWait::Poll] {
        let setup = with_wait(setup, wait);
        for kernels in CHAIN_KERNELS {
            let name = format!("{} kernel{}{}", kernels, if kernels == 1 { "" } else { "s" }, if wait == KernelWait::Poll { ", polling" } else { "" });
            if wait == KernelWait::Poll && kernels > 2 {
                continue;
            }
            let points = CHAIN_LENGTHS.iter().map(|&length| Ok((length as f64, revoke_chain(&setup, length, kernels)? as f64))).collect::<Result<_, String>>()?;
            series.push(Series { name, points });
        }
    }
    for (row, length) in CHAIN_LENGTHS.iter().enumerate() {
        let at = |column: usize| series[column].points[row].1 as u64;
        let _ = writeln!(
            table,
            "| {length} | {} | {} | {} | {} | {:.2} | {} | {} | {:.2} |",
            thousands(at(0)),
            thousands(at(1)),
            thousands(at(2)),
            thousands(at(3)),
            at(1) as f64 / at(0) as f64,
            thousands(at(4)),
            thousands(at(5)),
            at(5) as f64 / at(4) as f64
        );
    }
    table.push_str("\nSemperOS (its Figure 4): a group-spanning chain takes about 3× a group-local one.\n");
    let plot = Plot {
        title: "Revoking a chain of capabilities".into(),
        x_label: "chain length".into(),
        y_label: "instructions".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        series,
    };
    plots.push(("chain.svg".to_string(), plot.svg()));
    Ok(Figure { name: "chain", plots, table })
}

const TREE_CHILDREN: [usize; 6] = [1, 10, 50, 100, 500, 1000];
const TREE_SPREADS: [usize; 6] = [0, 1, 4, 12, 32, 63];

/// SemperOS's Figure 5: revoking a root with children on other kernels.
fn tree(setup: &Setup) -> Result<Figure, String> {
    let mut series = Vec::new();
    for spread in TREE_SPREADS {
        let points = TREE_CHILDREN.iter().map(|&children| Ok((children as f64, revoke_tree(setup, children, spread)? as f64))).collect::<Result<_, String>>()?;
        series.push(Series { name: format!("1 + {spread} kernels"), points });
    }
    let mut table = header("children", TREE_SPREADS.iter().map(|spread| format!("1 + {spread}")));
    for (row, children) in TREE_CHILDREN.iter().enumerate() {
        let _ = write!(table, "| {children} |");
        for line in &series {
            let _ = write!(table, " {} |", thousands(line.points[row].1 as u64));
        }
        table.push('\n');
    }
    let break_even = TREE_CHILDREN.iter().enumerate().find(|(row, _)| series[3].points[*row].1 < series[0].points[*row].1).map(|(_, children)| *children);
    let _ = writeln!(
        table,
        "\nWith 12 other kernels the parallel revoke beats the local one from {} children (SemperOS: from 80).",
        break_even.map_or("none of these".to_string(), |children| format!("{children}"))
    );
    let plot = Plot {
        title: "Revoking a tree of capabilities".into(),
        x_label: "child capabilities".into(),
        y_label: "instructions".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        series,
    };
    Ok(Figure { name: "tree", plots: vec![("tree.svg".into(), plot.svg())], table })
}

const INSTANCES: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

fn missing(apps: &Apps) -> Result<(), String> {
    if apps.is_empty() {
        return Err("no traces in scale-sim/traces: run `cargo xtask traces`".into());
    }
    Ok(())
}

/// SemperOS's Figure 6: every application at 1…512 instances on 32
/// kernels and 32 services.
fn app_efficiency(setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    missing(apps)?;
    let columns = ["capability calls per instance".to_string(), "alone (instructions)".to_string()]
        .into_iter()
        .chain(INSTANCES.iter().map(|instances| instances.to_string()))
        .chain(["busiest service, kernel at 512".to_string(), "512, service work free".to_string(), "512, kernels poll".to_string()]);
    let mut table = header("application", columns);
    let free = setup.without_file_work();
    let mut series = Vec::new();
    for App { name, steps, .. } in apps {
        let runs = INSTANCES.iter().map(|&instances| efficiency(setup, steps, 32, 32, instances)).collect::<Result<Vec<_>, String>>()?;
        let _ = write!(table, "| {name} | {} | {} |", runs[0].calls, thousands(runs[0].alone));
        for run in &runs {
            let _ = write!(table, " {:.0} % |", run.parallel * 100.0);
        }
        let last = runs[runs.len() - 1];
        let protocol_only = efficiency(&free, steps, 32, 32, 512)?;
        let polling = efficiency(&with_wait(setup, KernelWait::Poll), steps, 32, 32, 512)?;
        let _ = writeln!(
            table,
            " {:.0} %, {:.0} % | {:.0} % | {:.0} % |",
            last.busiest_service * 100.0,
            last.busiest_kernel * 100.0,
            protocol_only.parallel * 100.0,
            polling.parallel * 100.0
        );
        series.push(Series { name: name.clone(), points: INSTANCES.iter().zip(&runs).map(|(instances, run)| (*instances as f64, run.parallel * 100.0)).collect() });
    }
    table.push_str("\nSemperOS (its Figure 6, 32 kernels and 32 services): 70 % (SQLite) to 78 % (tar) at 512 instances. \"Busiest\": the share of the 512-instance run the busiest service and kernel were busy. \"Service work free\": the same run with the service's own file work (open, stat, read, write) costing nothing, so that only the capability protocol, the kernels and the messages are left. \"Kernels poll\": the same run with kernels that poll their channels instead of parking (no wake-up cost).\n");
    let plot = Plot {
        title: "Parallel efficiency, 32 kernels and 32 services".into(),
        x_label: "application instances".into(),
        y_label: "parallel efficiency (%)".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Linear,
        series,
    };
    Ok(Figure { name: "apps", plots: vec![("apps.svg".into(), plot.svg())], table })
}

/// A grid of efficiency at 512 instances over one varied count.
fn sweep(setup: &Setup, apps: &Apps, name: &'static str, varied: &str, values: &[usize], layout: impl Fn(usize) -> (usize, usize), note: &str) -> Result<Figure, String> {
    missing(apps)?;
    let mut table = header("application", values.iter().map(|value| format!("{value} {varied}")));
    let mut series = Vec::new();
    for App { name: app, steps, .. } in apps {
        let _ = write!(table, "| {app} |");
        let mut points = Vec::new();
        for &value in values {
            let (kernels, services) = layout(value);
            let run = efficiency(setup, steps, kernels, services, 512)?;
            let _ = write!(table, " {:.0} % |", run.parallel * 100.0);
            points.push((value as f64, run.parallel * 100.0));
        }
        table.push('\n');
        series.push(Series { name: app.clone(), points });
    }
    let _ = writeln!(table, "\n{note}");
    let plot = Plot {
        title: format!("Parallel efficiency at 512 instances against {varied}"),
        x_label: varied.to_string(),
        y_label: "parallel efficiency (%)".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        series,
    };
    Ok(Figure { name, plots: vec![(format!("{name}.svg"), plot.svg())], table })
}

/// SemperOS's Figure 7: efficiency against the number of services.
fn services(setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    sweep(setup, apps, "services", "services", &[4, 8, 16, 32, 48], |services| (64, services), "64 kernels. SemperOS (its Figure 7): tar gains nothing past 32 services; SQLite gains 9 points from 16 to 32.")
}

/// SemperOS's Figure 8: efficiency against the number of kernels.
fn kernels(setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    sweep(setup, apps, "kernels", "kernels", &[4, 8, 16, 32, 64], |kernels| (kernels, 32), "32 services. SemperOS (its Figure 8): PostMark is more sensitive to the number of kernels than LevelDB.")
}

const SYSTEM_PES: [usize; 5] = [64, 128, 256, 384, 576];
/// Kernels and services: SemperOS's shapes, and ones with more services
/// than kernels (the services are what the applications wait for).
const SYSTEM_CONFIGS: [(usize, usize); 8] = [(4, 4), (8, 8), (16, 16), (32, 16), (32, 32), (8, 24), (16, 48), (32, 64)];

/// SemperOS's Figure 9: system efficiency (the OS's PEs count as zero).
fn system(setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    missing(apps)?;
    let mut plots = Vec::new();
    let mut table = String::from("Best configuration (kernels + services) and its system efficiency, per machine size:\n\n");
    table.push_str(&header("application", SYSTEM_PES.iter().map(|pes| format!("{pes} PEs"))));
    for App { name: app, steps, .. } in apps {
        let mut series: Vec<Series> = SYSTEM_CONFIGS.iter().map(|(k, s)| Series { name: format!("{k} kernels + {s} services"), points: Vec::new() }).collect();
        let _ = write!(table, "| {app} |");
        for pes in SYSTEM_PES {
            let mut best: Option<(f64, usize, usize)> = None;
            for (config, &(kernels, services)) in SYSTEM_CONFIGS.iter().enumerate() {
                let Some(instances) = pes.checked_sub(kernels + services).filter(|instances| *instances > 0) else { continue };
                let run = efficiency(setup, steps, kernels, services, instances)?;
                series[config].points.push((pes as f64, run.system * 100.0));
                if best.is_none_or(|(value, _, _)| run.system > value) {
                    best = Some((run.system, kernels, services));
                }
            }
            match best {
                Some((value, kernels, services)) => {
                    let _ = write!(table, " {kernels}+{services}: {:.0} % |", value * 100.0);
                }
                None => table.push_str(" – |"),
            }
        }
        table.push('\n');
        let plot = Plot {
            title: format!("System efficiency: {app}"),
            x_label: "PEs".into(),
            y_label: "system efficiency (%)".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series,
        };
        plots.push((format!("system-{app}.svg"), plot.svg()));
    }
    table.push_str("\nSemperOS (its Figure 9): for SQLite, 16 kernels and 16 services are best at 192 PEs, 32 and 16 at 256 PEs.\n");
    Ok(Figure { name: "system", plots, table })
}

/// The model against Lamina's own `multikernel` benchmark (the measured
/// values are in `costs.txt` under `multikernel_*`, from the same run).
fn crosscheck(setup: &Setup) -> Result<Figure, String> {
    let measured = &setup.measured;
    let mut table = String::from("| benchmark | simulated | measured on Lamina | simulated ÷ measured |\n|---|---|---|---|\n");
    let mut worst: Option<f64> = None;
    let mut row = |table: &mut String, what: String, key: String, simulated: u64| match measured.get(&key) {
        Some(&value) => {
            let ratio = simulated as f64 / value as f64;
            worst = Some(worst.unwrap_or(0.0).max((ratio - 1.0).abs()));
            let _ = writeln!(table, "| {what} | {} | {} | {ratio:.2} |", thousands(simulated), thousands(value));
        }
        None => {
            let _ = writeln!(table, "| {what} | {} | not measured | – |", thousands(simulated));
        }
    };
    for spanning in [false, true] {
        let suffix = if spanning { "2kernels" } else { "local" };
        row(&mut table, format!("exchange (one delegation), {suffix}"), format!("multikernel_exchange_{suffix}"), exchange(setup, spanning)?);
    }
    for (length, kernels) in [(1, 1), (10, 1), (100, 1), (1000, 1), (1, 2), (10, 2), (100, 2), (1000, 2), (10, 4), (100, 4), (1000, 4)] {
        let suffix = if kernels == 1 { "local".to_string() } else { format!("{kernels}kernels") };
        let simulated = revoke_chain(setup, length, kernels)?;
        row(&mut table, format!("revoke, chain of {length}, {suffix}"), format!("multikernel_revoke_chain_{length}_{suffix}"), simulated);
    }
    match worst {
        Some(worst) => {
            let _ = writeln!(table, "\nLargest difference: {:.0} % (the issue asks for at most 15 %).", worst * 100.0);
        }
        None => table.push_str("\nNo measurement to compare with: `make bench BENCH=costs` records them.\n"),
    }
    Ok(Figure { name: "crosscheck", plots: Vec::new(), table })
}

/// Instructions per second of the simulated PEs: SemperOS's 2 GHz cores,
/// one instruction per cycle.
const CLOCK: f64 = 2e9;
const NGINX_INSTANCES: [usize; 6] = [16, 32, 64, 128, 256, 512];
const NGINX_OS: [usize; 4] = [4, 8, 16, 32];

/// SemperOS's Figure 10: NGINX requests per second against the number of
/// server PEs, for several numbers of kernels (as many services).
fn nginx(setup: &Setup, apps: &Apps) -> Result<Figure, String> {
    let Some(server) = apps.iter().find(|app| app.name == "nginx") else {
        return Err("no nginx trace in scale-sim/traces: run `cargo xtask traces nginx`".into());
    };
    if server.requests == 0 {
        return Err("the nginx trace accepts no connection".into());
    }
    let mut table = format!("Requests per second at {} GHz, one instruction per cycle; each server replays its trace of {} requests.\n\n", CLOCK / 1e9, server.requests);
    table.push_str(&header("kernels = services", NGINX_INSTANCES.iter().map(|instances| format!("{instances} servers"))));
    let mut series = Vec::new();
    for os in NGINX_OS {
        let _ = write!(table, "| {os} |");
        let mut points = Vec::new();
        for instances in NGINX_INSTANCES {
            let run = efficiency(setup, &server.steps, os, os, instances)?;
            let rate = (instances * server.requests) as f64 / (run.mean as f64 / CLOCK);
            let _ = write!(table, " {} |", thousands(rate.round() as u64));
            points.push((instances as f64, rate));
        }
        table.push('\n');
        series.push(Series { name: format!("{os} kernels + {os} services"), points });
    }
    table.push_str("\nSemperOS (its Figure 10): almost linear growth with 32 kernels and 32 services; fewer OS PEs flatten the curve.\n");
    let plot = Plot {
        title: "NGINX: requests per second".into(),
        x_label: "server PEs".into(),
        y_label: "requests per second".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        series,
    };
    Ok(Figure { name: "nginx", plots: vec![("nginx.svg".into(), plot.svg())], table })
}
