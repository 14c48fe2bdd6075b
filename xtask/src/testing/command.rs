//! `cargo xtask test [--only host|parsers|loom|ktest|boot|iso|user|suites|net|disk|groups|fuzz[,...]]
//! [--repeat N] [--smp N[,N…]] [--tests PATTERN[,PATTERN…]]`: runs the tiers,
//! prints `N passed, M failed` last and fails if anything failed. The last
//! three shape the in-kernel tier (see `kernel_tests`): e.g.
//! `--only ktest --repeat 200 --smp 8` is its stress mode.

use super::boot::run_boot_tests;
use super::host::{run_host_tests, run_loom_checks};
use super::iso_boot::run_iso_tests;
use super::kernel_tests::{run_kernel_tests, KernelTestPlan};
use super::disk_checks::run_disk_checks;
use super::ext4_mount_checks::run_ext4_mount_checks;
use super::ext4_write_checks::run_ext4_write_checks;
use super::page_cache_checks::run_page_cache_checks;
use super::exec_pipes::run_exec_checks;
use super::hypervisor_checks::run_hypervisor_checks;
use super::fuzz_checks::run_fuzz_checks;
use super::allocation_failure_checks::run_allocation_failure_checks;
use super::parser_fuzz_checks::run_parser_fuzz_checks;
use super::group_checks::run_group_checks;
use super::network_checks::run_network_checks;
use super::bad_packet_checks::run_bad_packet_checks;
use super::root_disk_checks::run_root_disk_checks;
use super::crash_tier::run_crash_tier;
use super::outside_suites::{run_outside_suites, SuiteOptions, SUITES};
use super::user_space::run_user_tests;
use super::tally::Tally;
use crate::arguments::{unexpected, Argument, Arguments};
use crate::dependencies::ensure_dependencies;
use crate::failure::{Failure, Outcome};
use std::time::{Duration, Instant};

/// One group of checks that `--only` can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// `cargo test` on the host.
    Host,
    /// Structure-aware random inputs into every parser of outside bytes,
    /// on the host (issue 23).
    Parsers,
    /// loom model checking of the shared objects on the host.
    Loom,
    /// The in-kernel test image in QEMU.
    KernelTests,
    /// Boot, monitor and bad-boot tests of the normal image.
    Boot,
    /// GRUB CD boots under SeaBIOS and OVMF.
    Iso,
    /// The user-space suite on Lamina and on Linux, outputs compared.
    User,
    /// Outside conformance suites on Lamina and on Linux, per test.
    Suites,
    /// The user tier's network checks alone (servers through forwarded
    /// ports, malformed frames into the card), for work on the network.
    Network,
    /// The user tier's CPU-group checks alone (Lamina as several kernel
    /// instances), for work on the multikernel.
    Groups,
    /// The user tier's system-call fuzzing and allocation-failure
    /// injection alone (issue 23).
    Fuzz,
    /// The user tier's disk checks alone (block device, ext4 mounted and
    /// written, root on a disk, the page cache, crash states), for work
    /// on storage.
    Disk,
    /// The user tier's hypervisor checks alone (`/dev/kvm` against
    /// Linux's KVM), for work on issue 24.
    Hypervisor,
}

const ALL_TIERS: [Tier; 8] = [
    Tier::Host,
    Tier::Parsers,
    Tier::Loom,
    Tier::KernelTests,
    Tier::Boot,
    Tier::Iso,
    Tier::User,
    Tier::Suites,
];

/// `cargo xtask test`.
pub fn test_command(mut arguments: Arguments) -> Outcome {
    let (tiers, kernel_plan) = parse_test_arguments(&mut arguments)?;
    if tiers
        .iter()
        .any(|tier| !matches!(tier, Tier::Host | Tier::Parsers | Tier::Loom))
    {
        ensure_dependencies()?;
    }
    let mut tally = Tally::default();
    let mut times = StepTimes::default();
    for tier in tiers {
        run_tier(tier, &kernel_plan, &mut tally, &mut times);
    }
    println!("{}", times.report());
    print!("{}", tally.recap());
    println!("{}", tally.summary());
    match tally.failed() {
        0 => Ok(()),
        failed => Err(Failure::failed(format!("{failed} test check(s) failed"))),
    }
}

fn run_tier(tier: Tier, kernel_plan: &KernelTestPlan, tally: &mut Tally, times: &mut StepTimes) {
    let mut step = |name: &str, run: &mut dyn FnMut(&mut Tally)| times.time(name, || run(tally));
    match tier {
        Tier::Host => step("host", &mut run_host_tests),
        Tier::Parsers => step("parsers", &mut run_parser_fuzz_checks),
        Tier::Loom => step("loom", &mut run_loom_checks),
        Tier::KernelTests => step("ktest", &mut |tally| run_kernel_tests(tally, kernel_plan)),
        Tier::Boot => step("boot", &mut run_boot_tests),
        Tier::Iso => step("iso", &mut run_iso_tests),
        Tier::User => {
            step("user programs", &mut run_user_tests);
            step("exec pipes", &mut run_exec_checks);
            step("hypervisor", &mut run_hypervisor_checks);
            step("groups", &mut run_group_checks);
            step("fuzz", &mut run_fuzz_checks);
            step("allocation failures", &mut run_allocation_failure_checks);
            step("network", &mut run_network_checks);
            step("bad packets", &mut run_bad_packet_checks);
            run_disk_steps(&mut step);
        }
        Tier::Disk => run_disk_steps(&mut step),
        Tier::Groups => step("groups", &mut run_group_checks),
        Tier::Hypervisor => step("hypervisor", &mut run_hypervisor_checks),
        Tier::Fuzz => {
            step("fuzz", &mut run_fuzz_checks);
            step("allocation failures", &mut run_allocation_failure_checks);
        }
        Tier::Suites => {
            for suite in SUITES {
                let options = SuiteOptions { suite: Some(suite.to_string()), ..SuiteOptions::default() };
                step(suite, &mut |tally| run_outside_suites(tally, &options));
            }
        }
        Tier::Network => {
            step("network", &mut run_network_checks);
            step("bad packets", &mut run_bad_packet_checks);
        }
    }
}

fn run_disk_steps(step: &mut impl FnMut(&str, &mut dyn FnMut(&mut Tally))) {
    step("disk", &mut run_disk_checks);
    step("ext4 mount", &mut run_ext4_mount_checks);
    step("ext4 write", &mut run_ext4_write_checks);
    step("page cache", &mut run_page_cache_checks);
    step("root disk", &mut run_root_disk_checks);
    step("crash", &mut run_crash_tier);
}

/// How long each step of the run took, so that the total can be kept
/// inside CI's limit (the README gives it) and the slow steps found.
#[derive(Debug, Default)]
struct StepTimes {
    steps: Vec<(String, Duration)>,
}

impl StepTimes {
    fn time(&mut self, name: &str, run: impl FnOnce()) {
        let start = Instant::now();
        run();
        self.steps.push((name.to_string(), start.elapsed()));
    }

    /// `time: host 95 s, ktest 310 s, … (total 2,400 s)`.
    fn report(&self) -> String {
        let total: Duration = self.steps.iter().map(|(_, took)| *took).sum();
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(name, took)| format!("{name} {} s", took.as_secs()))
            .collect();
        format!("time: {} (total {} s)", steps.join(", "), total.as_secs())
    }
}

fn parse_test_arguments(arguments: &mut Arguments) -> Outcome<(Vec<Tier>, KernelTestPlan)> {
    let mut tiers = ALL_TIERS.to_vec();
    let mut kernel_plan = KernelTestPlan::default();
    while let Some(argument) = arguments.next_argument()? {
        match argument {
            Argument::Flag(flag) if flag == "--only" => {
                tiers = parse_tiers(&arguments.value(&flag)?)?
            }
            Argument::Flag(flag) if kernel_plan.take_flag(&flag, arguments)? => {}
            other => return Err(unexpected("test", other)),
        }
    }
    Ok((tiers, kernel_plan))
}

/// `host,boot` and the like, in the order given.
fn parse_tiers(names: &str) -> Outcome<Vec<Tier>> {
    names.split(',').map(parse_tier).collect()
}

fn parse_tier(name: &str) -> Outcome<Tier> {
    match name.trim() {
        "host" => Ok(Tier::Host),
        "parsers" => Ok(Tier::Parsers),
        "loom" => Ok(Tier::Loom),
        "ktest" => Ok(Tier::KernelTests),
        "boot" => Ok(Tier::Boot),
        "iso" => Ok(Tier::Iso),
        "user" => Ok(Tier::User),
        "suites" => Ok(Tier::Suites),
        "net" => Ok(Tier::Network),
        "disk" => Ok(Tier::Disk),
        "groups" => Ok(Tier::Groups),
        "fuzz" => Ok(Tier::Fuzz),
        "hypervisor" => Ok(Tier::Hypervisor),
        other => Err(Failure::usage(format!(
            "--only takes host, parsers, loom, ktest, boot, iso, user, suites, net, disk, groups, fuzz or hypervisor, not `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Outcome<Vec<Tier>> {
        parse_test_arguments(&mut Arguments::new(
            list.iter().map(|text| text.to_string()),
        ))
        .map(|(tiers, _)| tiers)
    }

    #[test]
    fn every_tier_runs_unless_only_is_given() {
        assert_eq!(parse(&[]), Ok(ALL_TIERS.to_vec()));
        assert_eq!(parse(&["--only", "boot"]), Ok(vec![Tier::Boot]));
        assert_eq!(
            parse(&["--only=ktest,host"]),
            Ok(vec![Tier::KernelTests, Tier::Host])
        );
    }

    #[test]
    fn kernel_test_flags_shape_the_kernel_tier() {
        let (tiers, plan) = parse_test_arguments(&mut Arguments::new(
            ["--only", "ktest", "--repeat", "5", "--smp", "8"].map(String::from),
        ))
        .unwrap();
        assert_eq!(tiers, vec![Tier::KernelTests]);
        assert_eq!((plan.rounds, plan.cpu_counts), (5, vec![8]));
    }

    #[test]
    fn step_times_name_every_step_and_the_total() {
        let mut times = StepTimes::default();
        times.time("host", || {});
        times.steps.push(("suites".into(), Duration::from_secs(61)));
        assert_eq!(times.report(), "time: host 0 s, suites 61 s (total 61 s)");
    }

    #[test]
    fn unknown_tiers_and_arguments_are_usage_errors() {
        for bad in [&["--only", "lom"][..], &["--only"], &["--only="], &["boot"]] {
            assert!(
                matches!(parse(bad), Err(Failure::Usage(_))),
                "{bad:?} accepted"
            );
        }
    }
}
