//! `cargo xtask profile [MACHINE] -- PROGRAM [ARGS...]`: runs a program
//! on Lamina as `exec` does, with a TCG plugin (`xtask/tools/tbprof.c`,
//! built here with the host's C compiler) counting the instructions each
//! translation block executes, then prints where the kernel's went, by
//! function (the kernel image's symbols), beside the user-space total.
//!
//! Counts are exact instructions, not time: the hot paths the benchmarks
//! compare under `-icount` show here by name. A run includes boot and the
//! program's start; a program argument `{LOW,HIGH}` runs the program twice,
//! with each count in that place, and reports the difference per extra
//! round, which leaves the loop alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::arguments::Arguments;
use crate::exec::{parse_exec_arguments, run_program, ExecRequest, GuestKernel, Input, Output};
use crate::failure::{Context, Failure, Outcome};

/// Lines of the report.
const SHOWN: usize = 40;
/// Where kernel addresses begin.
pub(crate) const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

pub fn profile_command(mut arguments: Arguments) -> Outcome {
    let mut request = parse_exec_arguments(&mut arguments)?;
    if request.kernel != GuestKernel::Lamina {
        return Err(Failure::usage("profile runs Lamina only (its symbols name the functions)"));
    }
    let rounds = rounds_argument(&request.program_arguments)?;
    crate::dependencies::ensure_dependencies()?;
    let counts = crate::workspace::target_directory().join("tools/tbprof.txt");
    attach_plugin(&counts)?;
    let run = |request: &ExecRequest| -> Outcome<String> {
        let _ = std::fs::remove_file(&counts);
        let run = run_program(request, Input::Pipe(Vec::new()), Output::Capture, None)?;
        print!("{}", String::from_utf8_lossy(&run.output));
        // The plugin writes every half second: take its last word.
        std::thread::sleep(std::time::Duration::from_millis(700));
        std::fs::read_to_string(&counts).context(|| format!("the plugin wrote no {}", counts.display()))
    };
    let image = crate::workspace::target_directory().join("x86_64-unknown-none/release/lamina");
    let Some(Rounds { index, low, high }) = rounds else {
        let blocks = run(&request)?;
        print!("{}", report(&blocks, &kernel_functions(&image)?));
        return Ok(());
    };
    request.program_arguments[index] = low.to_string();
    let fewer = run(&request)?;
    request.program_arguments[index] = high.to_string();
    let more = run(&request)?;
    print!("{}", per_round_report(&fewer, &more, high - low, &kernel_functions(&image)?));
    Ok(())
}

/// A program argument `{LOW,HIGH}`: the program runs once with each count
/// there, and the report is the difference per extra round (boot, start-up
/// and set-up cancel out).
#[derive(Debug, PartialEq, Eq)]
struct Rounds {
    index: usize,
    low: u64,
    high: u64,
}

fn rounds_argument(arguments: &[String]) -> Outcome<Option<Rounds>> {
    let mut found = None;
    for (index, argument) in arguments.iter().enumerate() {
        let Some(inside) = argument.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')) else { continue };
        let counts = inside.split_once(',').and_then(|(low, high)| Some((low.trim().parse::<u64>().ok()?, high.trim().parse::<u64>().ok()?)));
        match counts {
            Some((low, high)) if low < high && found.is_none() => found = Some(Rounds { index, low, high }),
            _ => return Err(Failure::usage(format!("`{argument}`: one `{{LOW,HIGH}}` argument, LOW < HIGH, gives the round counts to compare"))),
        }
    }
    Ok(found)
}

/// Builds the plugin when its source is newer than the library.
/// Puts the block-counting plugin into every QEMU this xtask starts from
/// now on (`LAMINA_QEMU_ARGS`), writing its counts to `counts`.
pub(crate) fn attach_plugin(counts: &Path) -> Outcome {
    let plugin = build_plugin()?;
    if let Some(directory) = counts.parent() {
        std::fs::create_dir_all(directory).context(|| format!("creating {}", directory.display()))?;
    }
    let mut qemu_arguments = std::env::var("LAMINA_QEMU_ARGS").unwrap_or_default();
    qemu_arguments.push_str(&format!(" -plugin {},out={}", plugin.display(), counts.display()));
    std::env::set_var("LAMINA_QEMU_ARGS", qemu_arguments.trim());
    Ok(())
}

/// The plugin's `vaddr instructions executions` lines, parsed (others
/// left out).
pub(crate) fn block_lines(blocks: &str) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    blocks.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let address = u64::from_str_radix(fields.next()?, 16).ok()?;
        Some((address, fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
    })
}

fn build_plugin() -> Outcome<PathBuf> {
    let source = crate::workspace::root().join("xtask/tools/tbprof.c");
    let library = crate::workspace::target_directory().join("tools/libtbprof.so");
    let modified = |path: &Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
    if modified(&library).is_some() && modified(&library) >= modified(&source) {
        return Ok(library);
    }
    std::fs::create_dir_all(library.parent().unwrap_or(Path::new("."))).context(|| "creating target/tools".to_string())?;
    let status = Command::new("cc").args(["-shared", "-fPIC", "-O2", "-o"]).arg(&library).arg(&source).arg("-lpthread").status().context(|| "running cc".to_string())?;
    if !status.success() {
        return Err(Failure::failed(format!("cc could not build {}", source.display())));
    }
    Ok(library)
}

/// The kernel image's functions: (start, end, name), sorted.
fn kernel_functions(image: &Path) -> Outcome<Vec<(u64, u64, String)>> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let bytes = std::fs::read(image).context(|| format!("reading {}", image.display()))?;
    let file = object::File::parse(&*bytes).context(|| format!("{} is not an ELF file", image.display()))?;
    let mut functions: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|symbol| symbol.kind() == SymbolKind::Text && symbol.is_definition() && symbol.size() > 0)
        .filter_map(|symbol| Some((symbol.address(), symbol.address() + symbol.size(), format!("{:#}", rustc_demangle::demangle(symbol.name().ok()?)))))
        .collect();
    functions.sort();
    Ok(functions)
}

/// One run's instructions: by kernel function, in user space, and at
/// kernel addresses no symbol covers.
struct Tally<'a> {
    by_function: BTreeMap<&'a str, u64>,
    user: u64,
    unknown: u64,
}

fn tally<'a>(blocks: &str, functions: &'a [(u64, u64, String)]) -> Tally<'a> {
    let (mut by_function, mut user, mut unknown) = (BTreeMap::<&str, u64>::new(), 0u64, 0u64);
    for (address, instructions, _) in block_lines(blocks) {
        if address < KERNEL_HALF {
            user += instructions;
            continue;
        }
        let index = functions.partition_point(|(start, _, _)| *start <= address);
        match index.checked_sub(1).map(|index| &functions[index]) {
            Some((_, end, name)) if address < *end => *by_function.entry(name.as_str()).or_default() += instructions,
            _ => unknown += instructions,
        }
    }
    Tally { by_function, user, unknown }
}

/// Instructions per extra round: `more`'s run minus `fewer`'s, divided by
/// the `extra` rounds it made, by kernel function (those that moved by at
/// least one instruction per round), beside the user-space and kernel totals.
fn per_round_report(fewer: &str, more: &str, extra: u64, functions: &[(u64, u64, String)]) -> String {
    let (fewer, more) = (tally(fewer, functions), tally(more, functions));
    let per_round = |high: u64, low: u64| (high as f64 - low as f64) / extra as f64;
    let kernel = |tally: &Tally| tally.by_function.values().sum::<u64>() + tally.unknown;
    let mut ranked: Vec<(&str, f64)> = more
        .by_function
        .iter()
        .map(|(name, count)| (*name, per_round(*count, fewer.by_function.get(name).copied().unwrap_or(0))))
        .chain(fewer.by_function.iter().filter(|(name, _)| !more.by_function.contains_key(*name)).map(|(name, count)| (*name, per_round(0, *count))))
        .filter(|(_, each)| each.abs() >= 1.0)
        .collect();
    ranked.sort_by(|one, other| other.1.total_cmp(&one.1));
    let (kernel_each, user_each) = (per_round(kernel(&more), kernel(&fewer)), per_round(more.user, fewer.user));
    let mut text = format!("instructions per round ({extra} rounds apart): {:.1} in all, {kernel_each:.1} in the kernel, {user_each:.1} in user space\n", kernel_each + user_each);
    for (name, each) in ranked.into_iter().take(SHOWN) {
        text.push_str(&format!("{each:>10.1}  {name}\n"));
    }
    let unknown = per_round(more.unknown, fewer.unknown);
    if unknown.abs() >= 1.0 {
        text.push_str(&format!("{unknown:>10.1}  (no symbol)\n"));
    }
    text
}

/// Instructions by kernel function, the user-space total and the whole.
fn report(blocks: &str, functions: &[(u64, u64, String)]) -> String {
    let Tally { by_function, user, unknown } = tally(blocks, functions);
    let kernel: u64 = by_function.values().sum::<u64>() + unknown;
    let mut ranked: Vec<(&str, u64)> = by_function.into_iter().collect();
    ranked.sort_by(|one, other| other.1.cmp(&one.1));
    let mut text = format!("instructions: {} in all, {kernel} in the kernel, {user} in user space\n", kernel + user);
    let percent = |count: u64| count as f64 * 100.0 / kernel.max(1) as f64;
    for (name, count) in ranked.into_iter().take(SHOWN) {
        text.push_str(&format!("{count:>14} {:>5.1} %  {name}\n", percent(count)));
    }
    if unknown > 0 {
        text.push_str(&format!("{unknown:>14} {:>5.1} %  (no symbol)\n", percent(unknown)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_summed_by_function_and_user_space_apart() {
        let functions = vec![(0xffff_ffff_8000_0000, 0xffff_ffff_8000_0100, "a".to_string()), (0xffff_ffff_8000_0100, 0xffff_ffff_8000_0200, "b".to_string())];
        let blocks = "ffffffff80000010 30 3\nffffffff80000020 20 1\nffffffff80000150 100 10\n400000 7 7\nffffffff90000000 5 1\n";
        let text = report(blocks, &functions);
        assert!(text.starts_with("instructions: 162 in all, 155 in the kernel, 7 in user space"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with(" b") && lines[1].trim_start().starts_with("100"), "{text}");
        assert!(lines[2].ends_with(" a") && lines[2].trim_start().starts_with("50"), "{text}");
        assert!(lines[3].contains("(no symbol)"));
    }

    #[test]
    fn a_per_round_report_keeps_only_what_grows_with_the_rounds() {
        let functions = vec![(0xffff_ffff_8000_0000, 0xffff_ffff_8000_0100, "boot".to_string()), (0xffff_ffff_8000_0100, 0xffff_ffff_8000_0200, "hot".to_string())];
        let fewer = "ffffffff80000010 5000 1\nffffffff80000150 1000 10\n400000 300 3\n";
        let more = "ffffffff80000010 5000 1\nffffffff80000150 6000 60\n400000 800 8\n";
        let text = per_round_report(fewer, more, 50, &functions);
        assert!(text.starts_with("instructions per round (50 rounds apart): 110.0 in all, 100.0 in the kernel, 10.0 in user space"), "{text}");
        assert!(text.lines().nth(1).is_some_and(|line| line.trim() == "100.0  hot"), "{text}");
        assert!(!text.contains("boot"), "what does not grow is left out: {text}");
    }

    #[test]
    fn the_rounds_argument_is_one_pair_low_then_high() {
        let arguments = |list: &[&str]| list.iter().map(|text| text.to_string()).collect::<Vec<_>>();
        assert_eq!(rounds_argument(&arguments(&["getpid", "{100,600}"])).unwrap(), Some(Rounds { index: 1, low: 100, high: 600 }));
        assert_eq!(rounds_argument(&arguments(&["getpid", "600"])).unwrap(), None);
        for bad in [&["{600,100}"][..], &["{1,x}"], &["{1,2}", "{3,4}"], &["{}"]] {
            assert!(rounds_argument(&arguments(bad)).is_err(), "{bad:?}");
        }
    }
}
