//! Dispatch from the subcommand name to its implementation, and the help text.

use crate::arguments::Arguments;
use crate::bench::bench_command;
use crate::boottime::boottime_command;
use crate::crate_graph::crates_command;
use crate::dependencies::deps_command;
use crate::exec::exec_command;
use crate::failure::{Failure, Outcome};
use crate::iso::iso_command;
use crate::kernel_build::build_command;
use crate::run::run_command;
use crate::testing::command::test_command;
use crate::testing::crash_tier::crash_command;
use crate::testing::outside_suites::suites_command;

pub const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  deps                     check host packages; install missing ones when root
  build [--test]           build the kernel (or the in-kernel test image), print its path
  run [MACHINE]            build and boot Lamina on this terminal (Ctrl-A x quits)
  test [--only host|parsers|loom|ktest|boot|iso|user|suites|net|disk|groups|fuzz|hypervisor[,...]] [--repeat N] [--smp N]
                           run the test tiers; last line `N passed, M failed`,
                           before it how long each step took (net, disk, groups,
                           fuzz: that part of the user tier alone; parsers: 100000
                           random inputs into each parser of outside bytes)
  fuzz [--smp N] [--seed S] [--mask M] [--calls N] [--runs N] [--no-coverage]
                           the system-call fuzzer (user/fuzz/syscall_fuzz.c) on
                           Lamina, run after run until one fails (or N ran); each
                           run: N calls (100000) from 4 processes of 2 threads;
                           hangs, leaks, leftovers and kernel alarms fail it; runs
                           reaching new kernel blocks (TCG plugin) are kept in
                           target/fuzz/corpus.txt and their neighbours tried
                           (docs/reliability.md)
  stress [--minutes M] [--smp N]
                           Debian's stress-ng, its CPU, memory, process, pipe,
                           signal, file-system, timer and network stressors one
                           after another (M minutes in all, 10 by default; N
                           instances each on N CPUs, 4 by default), on Lamina and
                           on Linux at once: fails on a panic, a hang, a stressor
                           that passed on Linux only, memory or processes left
                           behind; a table of both kernels' rates
  suites [--suite posix|python] [--all] [--write-lists] [--tests PART[,PART...]]
                           the outside-suite tier alone, on Lamina and on Linux
                           (Open POSIX Test Suite from Debian's source; CPython's
                           regression tests from Debian's libpython3.11-testsuite):
                           counts, target/outside/*-report.txt; --suite runs one,
                           --all adds the slow posix tests, --write-lists rewrites
                           user/suites/*.txt, --tests runs only tests (python:
                           modules) whose name has a PART
  crash                    the kernel crash tier alone (part of `test --only user`):
                           a workload on ext4 with Lamina's disk writes logged by
                           QEMU blklogwrites; every crash state cut from the log
                           checked (recovery, e2fsck, what was fsynced), and the
                           flush-dropping mutations it must catch
  iso                      build target/lamina.iso (GRUB, BIOS and UEFI)
  exec [MACHINE] [--linux] [--file HOST[:GUEST]]... [--disk|--raw-disk IMAGE] [--net] [--port HOST:GUEST]... [--trace FILE] -- PROGRAM [ARGS...]
                           run one static Linux program as the guest's first
                           user process (Debian's Linux with --linux), copying
                           PROGRAM and each --file (a file, or a directory
                           copied whole) into the guest, with the interpreter
                           and libraries of dynamic programs; exit status
                           is the program's. At a terminal it runs on the guest
                           console; with stdin piped it reads exactly those
                           bytes then end of file, and its stdout and stderr
                           come back apart, byte for byte. --disk attaches the
                           raw image IMAGE as the virtio disk /dev/vda (made,
                           256 MiB of ext4, if missing) and /init mounts it
                           read-write at /mnt (unmounted clean before power-off);
                           --raw-disk attaches it unmounted. --net adds a virtio
                           network card on QEMU's restricted user network (the
                           guest reaches nothing outside; 10.0.2.15 by DHCP);
                           --port forwards 127.0.0.1:HOST on the host to the
                           guest's TCP port GUEST (implies --net). --trace
                           records every system call of the program and its
                           children into FILE, one line each with entry and
                           exit in guest instructions (implies --icount; Lamina
                           only; docs/tracing.md)
  profile [MACHINE] [--file ...] -- PROGRAM [ARGS...]
                           run a program on Lamina as exec does, counting the
                           instructions each kernel function executes (a TCG
                           plugin, xtask/tools/tbprof.c); prints the top 40;
                           an argument {LOW,HIGH} runs it with each count there
                           and prints the difference per extra round
  boottime [--runs N] [--smp N]
                           time boot to prompt; record in target/bench/results.json
  bench [--groups a,b]     run benchmark groups, Lamina beside Linux: boot, locks,
                           ipc, sched, mem, caps, multikernel, syscalls, apps, fs,
                           net, scaling, vm (all by default)
  apps                     build the real programs (lua, sqlite3, make, tar, redis-server
                           with redis-cli and redis-benchmark) statically from Debian's
                           sources into target/apps/; make run puts them in /usr/local/bin
  traces [APP...]          record the system-call traces of the SemperOS application
                           set (tar, untar, find, sqlite, ...) on Lamina into
                           scale-sim/traces/APP.trace, inputs made by the recipe
  simulate [--figure NAME[,NAME...]|all]
                           the multikernel at up to 640 PEs, simulated with the caps
                           protocol's own code and the cost model measured on Lamina:
                           rewrites docs/scale.md's tables and docs/scale/*.svg
  crates                   check the crate graph keeps the layer order; write docs/crates.md
  help                     this text

MACHINE: [--smp N] [--mem MiB] [--accel tcg|kvm] [--icount]
         defaults: --smp 2 --mem 256 --accel tcg
";

/// Runs the subcommand named by the first argument.
pub fn dispatch(mut command_line: impl Iterator<Item = String>) -> Outcome {
    let Some(name) = command_line.next() else {
        print!("{USAGE}");
        return Err(Failure::usage("no command given"));
    };
    let arguments = Arguments::new(command_line);
    match name.as_str() {
        "deps" => deps_command(),
        "build" => build_command(arguments),
        "run" => run_command(arguments),
        "test" => test_command(arguments),
        "suites" => suites_command(arguments),
        "crash" => crash_command(),
        "iso" => iso_command(),
        "exec" => exec_command(arguments),
        "boottime" => boottime_command(arguments),
        "bench" => bench_command(arguments),
        "profile" => crate::profile::profile_command(arguments),
        "fuzz" => crate::testing::fuzz_checks::fuzz_command(arguments),
        "stress" => crate::testing::stress::stress_command(arguments),
        "crates" => crates_command(),
        "apps" => crate::apps::apps_command(),
        "simulate" => crate::simulate::simulate_command(arguments),
        "traces" => crate::traces::traces_command(arguments),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(Failure::usage(format!("unknown command `{other}`"))),
    }
}
