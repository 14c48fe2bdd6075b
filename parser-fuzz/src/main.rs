//! `parser_fuzz`: runs the parser targets (all, or those named) for a number
//! of inputs each, on several threads; `--forever` starts again with the
//! next seed until a failure. A panic saves the input and prints the command
//! that repeats it; an input that runs for a minute is a hang and is saved
//! the same way; either ends the process with a failure.
//!
//! `parser_fuzz [--target NAME[,NAME...]] [--seed S] [--inputs N] [--forever]
//!  [--jobs J] [--out DIR] [--replay FILE] [--list]`

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use parser_fuzz::driver::{fuzz, Report, CURRENT, PROGRESS, WORKER};
use parser_fuzz::targets;
use parser_fuzz::Target;

/// No input may take this long: past it the run is a hang.
const HANG: Duration = Duration::from_secs(60);

struct Options {
    names: Vec<String>,
    seed: u64,
    inputs: u64,
    forever: bool,
    jobs: usize,
    out: PathBuf,
    replay: Option<PathBuf>,
    list: bool,
}

fn usage(problem: &str) -> ! {
    eprintln!("parser_fuzz: {problem}");
    eprintln!("usage: parser_fuzz [--target NAME[,NAME...]] [--seed S] [--inputs N] [--forever] [--jobs J] [--out DIR] [--replay FILE] [--list]");
    std::process::exit(2);
}

fn options() -> Options {
    let mut options = Options {
        names: Vec::new(),
        seed: 1,
        inputs: 100_000,
        forever: false,
        jobs: std::thread::available_parallelism().map_or(1, |count| count.get()),
        out: PathBuf::from("target/parser-fuzz"),
        replay: None,
        list: false,
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value = || arguments.next().unwrap_or_else(|| usage(&format!("{argument} needs a value")));
        let number = |text: String| text.parse::<u64>().unwrap_or_else(|_| usage(&format!("not a number: {text}")));
        match argument.as_str() {
            "--target" => options.names = value().split(',').map(str::to_string).collect(),
            "--seed" => options.seed = number(value()),
            "--inputs" => options.inputs = number(value()),
            "--jobs" => options.jobs = number(value()).max(1) as usize,
            "--out" => options.out = PathBuf::from(value()),
            "--replay" => options.replay = Some(PathBuf::from(value())),
            "--forever" => options.forever = true,
            "--list" => options.list = true,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    options
}

/// Saves what worker `only` (or every worker) is running to `out`; prints
/// how to repeat each.
fn save_current(out: &PathBuf, why: &str, only: Option<usize>) {
    let slots = match CURRENT.try_lock() {
        Ok(slots) => slots.clone(),
        Err(_) => return eprintln!("parser_fuzz: {why}; the input could not be saved"),
    };
    let _ = std::fs::create_dir_all(out);
    let chosen = slots.into_iter().enumerate().filter(|(worker, _)| only.is_none_or(|only| only == *worker));
    for current in chosen.filter_map(|(_, current)| current) {
        let path = out.join(format!("{}-seed{}-input{}.bin", current.target, current.seed, current.index));
        let saved = std::fs::write(&path, &*current.input).is_ok();
        eprintln!(
            "parser_fuzz: {why} in target {} (seed {}, input {}, {} bytes){}",
            current.target,
            current.seed,
            current.index,
            current.input.len(),
            if saved { format!(", saved as {}", path.display()) } else { String::new() }
        );
        eprintln!(
            "parser_fuzz: repeat with: cargo run -p parser-fuzz -- --target {} --replay {}  (or --seed {} --inputs {})",
            current.target,
            path.display(),
            current.seed,
            current.index + 1
        );
    }
}

fn main() {
    let options = options();
    let every = targets::all();
    if options.list {
        for target in &every {
            println!("{}", target.name());
        }
        return;
    }
    let chosen: Vec<&dyn Target> = if options.names.is_empty() {
        every.iter().map(|target| &**target).collect()
    } else {
        options
            .names
            .iter()
            .map(|name| {
                every.iter().find(|target| target.name() == name).map(|target| &**target).unwrap_or_else(|| usage(&format!("no target {name} (--list names them)")))
            })
            .collect()
    };
    std::panic::set_hook(Box::new(|info| eprintln!("parser_fuzz: PANIC: {info}")));
    if let Some(path) = &options.replay {
        let input = std::fs::read(path).unwrap_or_else(|error| usage(&format!("{}: {error}", path.display())));
        for target in chosen {
            println!("{}: {}", target.name(), target.run(&input));
        }
        return;
    }
    let out = options.out.clone();
    std::panic::set_hook(Box::new(move |info| {
        eprintln!("parser_fuzz: PANIC: {info}");
        save_current(&out, "a panic", WORKER.with(|slot| slot.get()));
    }));
    let out = options.out.clone();
    std::thread::spawn(move || watchdog(out));
    let mut seed = options.seed;
    loop {
        let started = Instant::now();
        let reports = run_all(&chosen, seed, options.inputs, options.jobs);
        let total: u64 = reports.iter().map(|report| report.inputs).sum();
        for report in &reports {
            println!(
                "parsers: {:<15} {:>8} inputs, {:>4} outcomes, corpus {:>3}, slowest input {:.1} ms (#{}), seed {}",
                report.target,
                report.inputs,
                report.outcomes,
                report.corpus,
                report.slowest.0.as_secs_f64() * 1e3,
                report.slowest.1,
                report.seed
            );
        }
        println!(
            "parsers: {} targets, {} inputs in {:.0} s: 0 panics, 0 hangs",
            reports.len(),
            total,
            started.elapsed().as_secs_f64()
        );
        if !options.forever {
            break;
        }
        seed += 1;
    }
}

/// Runs each target once on `jobs` threads; the reports in target order.
fn run_all(chosen: &[&dyn Target], seed: u64, inputs: u64, jobs: usize) -> Vec<Report> {
    let next = Mutex::new(0usize);
    let reports = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..jobs.min(chosen.len()) {
            let (next, reports) = (&next, &reports);
            scope.spawn(move || loop {
                let which = {
                    let mut next = next.lock().unwrap();
                    *next += 1;
                    *next - 1
                };
                let Some(target) = chosen.get(which) else { break };
                let report = fuzz(*target, seed.wrapping_add(which as u64 * 1_000_003), inputs, worker);
                reports.lock().unwrap().push((which, report));
            });
        }
    });
    let mut reports = reports.into_inner().unwrap();
    reports.sort_by_key(|(which, _)| *which);
    reports.into_iter().map(|(_, report)| report).collect()
}

/// Ends the process if no input finishes for [`HANG`].
fn watchdog(out: PathBuf) {
    let mut last = (PROGRESS.load(Ordering::Relaxed), Instant::now());
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = PROGRESS.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > HANG && CURRENT.lock().map(|slots| slots.iter().any(Option::is_some)).unwrap_or(true) {
            save_current(&out, "a HANG (no input finished for a minute)", None);
            std::process::exit(1);
        }
    }
}
