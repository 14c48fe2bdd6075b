//! Whole simulations with their end-of-run checks: a 64-PE machine of
//! applications, services and kernels; revocations whose time follows
//! from the cost model by hand; processes that die mid-exchange; and the
//! same input giving the same run.

use std::sync::Arc;

use caps::distributed::Outcome;
use scale_sim::experiments::{efficiency, revoke_chain, revoke_tree, Setup};
use scale_sim::trace::parse;
use scale_sim::workload::{from_trace, summary, Mapping, Step};
use scale_sim::world::{Call, KernelWait};
use scale_sim::{CostModel, Layout, World};

/// A file-heavy application: opens three files, reads 200 KiB of each in
/// 4 KiB calls with compute between, looks at metadata, closes them.
fn workload() -> Arc<[Step]> {
    let mut text = String::from("# synthetic: three files read in 4 KiB calls\n");
    let mut clock = 0;
    let mut call = |name: &str, ret: i64, a0: u64, path: &str| {
        text.push_str(&format!("{clock} {} 1 1 {name} {ret} {a0:#x} 0x0 0x0 {path}\n", clock + 500));
        clock += 2_000;
    };
    for file in 0..3 {
        call("openat", 3 + file, 0xffffff9c, &format!("/data/file{file}"));
        call("newfstatat", 0, 0xffffff9c, "/data");
    }
    for _ in 0..50 {
        for file in 0..3 {
            call("read", 4096, 3 + file as u64, "");
        }
    }
    for file in 0..3 {
        call("close", 0, 3 + file, "");
    }
    from_trace(&parse(&text).expect("well formed"), Mapping { range_bytes: 64 * 1024 }).into()
}

#[test]
fn a_64_pe_machine_runs_every_application_to_its_end_and_loses_nothing() {
    let steps = workload();
    let counts = summary(&steps);
    assert_eq!((counts.opens, counts.closes, counts.metas), (3, 3, 3));
    assert_eq!(counts.extends, 3 * 3, "200 KiB of each file is four 64 KiB ranges");
    // Two of the four groups have no service of their own.
    let layout = Layout::new(4, 2, 58).expect("64 PEs");
    let mut world = World::with_apps(layout, CostModel::committed().unwrap(), KernelWait::Park, steps).unwrap();
    world.run();
    let report = world.finish().expect("no message lost, every call answered, audit clean");
    assert_eq!(report.app_times.len(), 58);
    // Each open and extend is an obtain and a delegate; each range is revoked at close.
    assert_eq!(report.calls, 58 * (2 * (3 + 9) + (3 + 9)));
    assert_eq!(report.refused, 0);
    assert!(report.most_in_flight <= layout.slots && report.most_in_flight > 0);
    assert!(report.messages > 0, "apps in groups without a service reach another group's");
    // Every capability handed out was revoked at close: only the services' roots are left.
    let left: usize = world.kernel_states().map(|kernel| kernel.capability_count()).sum();
    assert_eq!(left, 2);
}

#[test]
fn the_same_input_gives_the_same_run() {
    let run = || {
        let mut world = World::with_apps(Layout::new(3, 2, 20).unwrap(), CostModel::committed().unwrap(), KernelWait::Park, workload()).unwrap();
        world.run();
        world.finish().unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_local_chain_revoke_costs_what_the_model_says() {
    // Uniform costs of 10: the parked kernel's empty turn, its wake-up and
    // the turn of the call (3), the call's receipt and handling (2), one
    // more per capability beyond the first, and the answer's send.
    let setup = Setup::with_costs(CostModel::uniform(10));
    for length in [0, 1, 10, 100] {
        assert_eq!(revoke_chain(&setup, length, 1), Ok(10 * (5 + length as u64 + 1)), "chain of {length}");
    }
}

#[test]
fn spanning_revokes_pay_for_messages_and_trees_spread_their_work() {
    let setup = Setup::committed().unwrap();
    let local = revoke_chain(&setup, 20, 1).unwrap();
    let spanning = revoke_chain(&setup, 20, 2).unwrap();
    assert!(spanning > local, "a chain crossing kernels 20 times pays 20 round trips: {spanning} vs {local}");
    let polling = Setup { wait: KernelWait::Poll, ..setup.clone() };
    assert!(revoke_chain(&polling, 20, 2).unwrap() < spanning, "no wake-up per hop when kernels poll");
    // Children on 8 kernels are revoked in parallel: cheaper than on one other kernel.
    let one = revoke_tree(&setup, 64, 1).unwrap();
    let eight = revoke_tree(&setup, 64, 8).unwrap();
    assert!(eight < one, "{eight} vs {one}");
}

#[test]
fn processes_that_die_mid_exchange_leave_a_consistent_tree() {
    let mut world = World::new(Layout::new(3, 0, 0).unwrap(), CostModel::committed().unwrap(), KernelWait::Park);
    let owner = World::driver_process(0, 0);
    world.call(owner, Call::Create);
    world.run();
    let Some((_, Outcome::Done(Some(root)))) = world.answers().first().copied() else { panic!("no root") };
    // Obtains from two other kernels, and their callers dying at once;
    // a delegation to a process that dies; the owner revoking meanwhile.
    for number in 1..=6 {
        let process = World::driver_process(1 + number as usize % 2, number);
        world.call(process, Call::Obtain { parent: root });
        if number % 3 == 0 {
            world.call(process, Call::Exit);
        }
    }
    let doomed = World::driver_process(2, 99);
    world.call(owner, Call::Delegate { cap: root, to: doomed });
    world.call(doomed, Call::Exit);
    world.run();
    world.call(owner, Call::Revoke { cap: root });
    world.run();
    world.finish().expect("audit clean after deaths mid-exchange");
    let left: usize = world.kernel_states().map(|kernel| kernel.capability_count()).sum();
    assert_eq!(left, 0);
}

#[test]
fn parallel_efficiency_falls_when_applications_share_one_kernel() {
    let setup = Setup::committed().unwrap();
    let steps = workload();
    let shared = efficiency(&setup, &steps, 1, 1, 32).unwrap();
    let spread = efficiency(&setup, &steps, 8, 8, 32).unwrap();
    assert!(shared.parallel > 0.0 && shared.parallel <= 1.0);
    assert!(spread.parallel > shared.parallel, "{spread:?} vs {shared:?}");
}
