//! The host timer behind the guest's PIT: `setitimer(ITIMER_REAL)` and a
//! SIGALRM handler that only records the expiry. The signal also ends a
//! running `KVM_RUN` (EINTR), so an expiry is seen within one exit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static EXPIRED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_alarm(_signal: libc::c_int) {
    EXPIRED.store(true, Ordering::SeqCst);
}

/// Installs the SIGALRM handler (no SA_RESTART: KVM_RUN must return).
pub fn install() {
    // SAFETY: a zeroed sigaction with a handler that only stores to an
    // atomic, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
    }
}

fn timeval(duration: Duration) -> libc::timeval {
    // SAFETY: timeval is plain integers; zero is a valid value.
    let mut value: libc::timeval = unsafe { std::mem::zeroed() };
    value.tv_sec = duration.as_secs() as _;
    value.tv_usec = duration.subsec_micros() as _;
    value
}

/// Arms the timer: first expiry after `first` (at least 1 µs), then every
/// `period` (`Duration::ZERO`: once). `first` zero stops it.
pub fn arm(first: Duration, period: Duration) {
    let first = if first.is_zero() { first } else { first.max(Duration::from_micros(1)) };
    let value = libc::itimerval { it_value: timeval(first), it_interval: timeval(period) };
    // SAFETY: plain values in, no old value asked for.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &value, std::ptr::null_mut()) };
}

/// Whether the timer expired since the last call.
pub fn take_expiry() -> bool {
    EXPIRED.swap(false, Ordering::SeqCst)
}

/// Sleeps until the timer expires (returns at once if it already has).
pub fn wait_for_expiry() {
    // SAFETY: signal masks of this thread only; SIGALRM is blocked while
    // the flag is checked and unblocked atomically by sigsuspend, so an
    // expiry between the check and the sleep is not lost.
    unsafe {
        let mut alarm: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut alarm);
        libc::sigaddset(&mut alarm, libc::SIGALRM);
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &alarm, &mut previous);
        if !EXPIRED.load(Ordering::SeqCst) {
            let mut waiting = previous;
            libc::sigdelset(&mut waiting, libc::SIGALRM);
            libc::sigsuspend(&waiting);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
    }
}
