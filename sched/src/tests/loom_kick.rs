//! Loom: a signal sent to a thread that is on its way back to user mode
//! on another CPU. The thread takes its kick flag, looks at its signals,
//! may take an interrupt (the wake IPI, which then does nothing) or be
//! preempted, tests the flag with interrupts off and enters user mode,
//! where only an IPI brings it back. The sender marks the signal pending,
//! raises the flag and sends the IPI if the thread is on its CPU (the
//! kernel's `run` loop, `send_to` and `kick`). In no interleaving does the
//! thread stay in user mode with the signal unseen (loom would report the
//! thread halted for good); without the flag it does (negative control).

use loom::sync::{Arc, Mutex};
use loom::thread;

use super::loom_support::{check, finds_a_failure, Preemptions, WakeLine};
use crate::kick_flag::KickFlag;
use crate::pending_hint::PendingHint;

/// Whether the model uses the flag (the kernel) or only the IPI.
#[derive(Clone, Copy)]
enum Kicks {
    FlagAndIpi,
    IpiOnly,
}

struct Shared {
    /// The process's signal state: is the signal pending?
    pending: Mutex<bool>,
    kick: KickFlag,
    /// The CPU's `current`: is the thread on its CPU?
    on_cpu: Mutex<bool>,
    line: WakeLine,
}

fn signal_reaches_a_thread_leaving_the_kernel(kicks: Kicks) {
    let shared = Arc::new(Shared { pending: Mutex::new(false), kick: KickFlag::new(), on_cpu: Mutex::new(true), line: WakeLine::default() });
    let sender = {
        let shared = shared.clone();
        thread::spawn(move || {
            *shared.pending.lock().unwrap() = true;
            if matches!(kicks, Kicks::FlagAndIpi) {
                shared.kick.raise();
            }
            if *shared.on_cpu.lock().unwrap() {
                shared.line.send_ipi();
            }
        })
    };
    // The thread's return-to-user loop, until it delivers the signal.
    loop {
        if matches!(kicks, Kicks::FlagAndIpi) {
            shared.kick.take();
        }
        if *shared.pending.lock().unwrap() {
            break;
        }
        // Interrupts on in the kernel: an IPI taken here is forgotten.
        shared.line.take_if_pending();
        // A preemption: off the CPU and back.
        *shared.on_cpu.lock().unwrap() = false;
        *shared.on_cpu.lock().unwrap() = true;
        // Interrupts off from here to user mode.
        if matches!(kicks, Kicks::FlagAndIpi) && shared.kick.is_raised() {
            continue;
        }
        // User mode: it leaves only for an interrupt.
        shared.line.halt();
    }
    sender.join().unwrap();
}

#[test]
fn a_signal_sent_while_its_thread_leaves_the_kernel_is_seen() {
    check("kick flag and IPI", Preemptions::Unbounded, || signal_reaches_a_thread_leaving_the_kernel(Kicks::FlagAndIpi));
}

#[test]
fn without_the_flag_a_kick_taken_in_the_kernel_is_lost() {
    assert!(finds_a_failure(Preemptions::Unbounded, || signal_reaches_a_thread_leaving_the_kernel(Kicks::IpiOnly)));
}

/// When the returning thread reads the pending hint: after taking its kick
/// flag (the kernel), or before (the negative control).
#[derive(Clone, Copy, PartialEq)]
enum HintRead {
    AfterTheKick,
    BeforeTheKick,
}

struct HintShared {
    pending: Mutex<bool>,
    hint: PendingHint,
    kick: KickFlag,
    on_cpu: Mutex<bool>,
    line: WakeLine,
}

/// As above, with the look at the signal state behind the lock skipped
/// while the hint is clear (`sched::pending_hint`). `stale_hint`: the hint
/// starts set with nothing pending, so the thread's first look clears it
/// under the lock while the sender may be raising it.
fn signal_reaches_a_thread_that_reads_the_hint(read: HintRead, stale_hint: bool) {
    let shared = Arc::new(HintShared { pending: Mutex::new(false), hint: PendingHint::new(), kick: KickFlag::new(), on_cpu: Mutex::new(true), line: WakeLine::default() });
    if stale_hint {
        shared.hint.raise();
    }
    let sender = {
        let shared = shared.clone();
        thread::spawn(move || {
            {
                let mut pending = shared.pending.lock().unwrap();
                *pending = true;
                shared.hint.raise();
            }
            shared.kick.raise();
            if *shared.on_cpu.lock().unwrap() {
                shared.line.send_ipi();
            }
        })
    };
    loop {
        let maybe = if read == HintRead::AfterTheKick {
            shared.kick.take();
            shared.hint.maybe_pending()
        } else {
            let maybe = shared.hint.maybe_pending();
            shared.kick.take();
            maybe
        };
        if maybe {
            let mut pending = shared.pending.lock().unwrap();
            let delivered = *pending;
            // Taken (delivered), or nothing was there: nothing is pending now.
            *pending = false;
            shared.hint.clear();
            if delivered {
                break;
            }
        }
        shared.line.take_if_pending();
        *shared.on_cpu.lock().unwrap() = false;
        *shared.on_cpu.lock().unwrap() = true;
        if shared.kick.is_raised() {
            continue;
        }
        shared.line.halt();
    }
    sender.join().unwrap();
}

#[test]
fn a_thread_that_reads_the_hint_after_its_kick_sees_the_signal() {
    check("pending hint after the kick", Preemptions::Unbounded, || signal_reaches_a_thread_that_reads_the_hint(HintRead::AfterTheKick, false));
}

#[test]
fn a_stale_hint_cleared_while_a_signal_arrives_loses_nothing() {
    check("stale pending hint", Preemptions::Unbounded, || signal_reaches_a_thread_that_reads_the_hint(HintRead::AfterTheKick, true));
}

#[test]
fn reading_the_hint_before_the_kick_loses_the_signal() {
    assert!(finds_a_failure(Preemptions::Unbounded, || signal_reaches_a_thread_that_reads_the_hint(HintRead::BeforeTheKick, false)));
}
