//! `caps/*`: capability operations in guest instructions (SemperOS Table 3
//! and Figures 4 and 5 measure the same in cycles).
//!
//! - `cap_exchange`: one delegation of a memory capability from process A
//!   to process B, as a native call from ring 3 (entry, the database
//!   update under its lock, exit).
//! - `cap_revoke`: revoking one delegated capability, as a native call.
//! - `cap_revoke_chain_<n>` / `cap_revoke_tree_<n>`: one revoke, in the
//!   kernel, of a chain of `n` delegations (each from the last copy,
//!   alternating between two spaces) or a tree of `n` children of one
//!   root. Building the shape is not measured.

use alloc::format;
use alloc::vec::Vec;

use caps::{RevokeScope, Rights};
use containers::ContainerId;

use super::records::{now, report, ClockMode};
use kernel_objects::capabilities::{caps, numbers, undo, NativeProcess};
use linux_abi::Errno;
use kernel_objects::kernel_containers::containers;
use native_harness::{build_delegation_shape, load_stubs, native};

const EXCHANGES_PER_SAMPLE: u64 = 200;
const SAMPLES: usize = 5;
const SHAPE_SIZES: [u32; 5] = [1, 10, 100, 1000, 10_000];

pub fn capability_paths(mode: ClockMode) {
    let Some(tree) = containers() else { return };
    let Ok(container) = tree.create_child(sched::current().container(), 64) else { return };
    if let Some((a, b, b_in_a)) = two_processes(container) {
        exchange_and_revoke(mode, &a, b_in_a);
        a.destroy();
        b.destroy();
    }
    let _ = tree.destroy(container);
    for size in SHAPE_SIZES {
        revoke_shape(mode, size, true);
        revoke_shape(mode, size, false);
    }
}

fn two_processes(container: ContainerId) -> Option<(alloc::sync::Arc<NativeProcess>, alloc::sync::Arc<NativeProcess>, u64)> {
    let a = NativeProcess::create(container).ok()?;
    let b = NativeProcess::create(container).ok()?;
    load_stubs(&a).ok()?;
    let b_in_a = b.introduce_to(&a, Rights::WRITE).ok()?;
    Some((a, b, u64::from(b_in_a)))
}

fn succeeded(result: u64) -> bool {
    Errno::from_return_value(result).is_none()
}

fn exchange_and_revoke(mode: ClockMode, a: &NativeProcess, b_in_a: u64) {
    let memory = native(a, numbers::CREATE_MEMORY, &[1, 0b1_1111]);
    if !succeeded(memory) {
        return;
    }
    let mut exchanges = Vec::new();
    let mut revokes = Vec::new();
    for _ in 0..SAMPLES {
        let start = now();
        let all_given = (0..EXCHANGES_PER_SAMPLE).all(|_| succeeded(native(a, numbers::DELEGATE, &[memory, b_in_a, 0b1_1111])));
        exchanges.push((now() - start) as f64 / EXCHANGES_PER_SAMPLE as f64);
        // Clear b's copies before the next sample (not measured).
        if !(all_given && succeeded(native(a, numbers::REVOKE, &[memory, 1]))) {
            return;
        }
        let mut spent = 0;
        for _ in 0..EXCHANGES_PER_SAMPLE {
            if !succeeded(native(a, numbers::DELEGATE, &[memory, b_in_a, 0b1_1111])) {
                return;
            }
            let start = now();
            let revoked = native(a, numbers::REVOKE, &[memory, 1]);
            spent += now() - start;
            if revoked != 1 {
                return;
            }
        }
        revokes.push(spent as f64 / EXCHANGES_PER_SAMPLE as f64);
    }
    report("caps", "cap_exchange", mode.unit(), &mut exchanges);
    report("caps", "cap_revoke", mode.unit(), &mut revokes);
}

fn revoke_shape(mode: ClockMode, size: u32, chain: bool) {
    let samples_wanted = if size >= 1000 { 3 } else { SAMPLES };
    let mut samples = Vec::new();
    for _ in 0..samples_wanted {
        let Ok((first, second)) = caps().with(|database| Ok::<_, caps::CapError>((database.create_space(size + 2)?, database.create_space(size + 2)?))) else {
            return;
        };
        if let Ok(root) = build_delegation_shape(first, second, size, chain) {
            let start = now();
            let revoked = caps().revoke(first, root, RevokeScope::Descendants, undo);
            let spent = now() - start;
            if revoked.is_ok_and(|report| report.removed == u64::from(size)) {
                samples.push(spent as f64);
            }
        }
        for space in [first, second] {
            let _ = caps().destroy_space(space, undo);
        }
    }
    if samples.len() == samples_wanted {
        let shape = if chain { "chain" } else { "tree" };
        report("caps", &format!("cap_revoke_{shape}_{size}"), mode.unit(), &mut samples);
    }
}
