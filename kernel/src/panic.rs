//! The kernel's panic handler: report, backtrace, stop every CPU.

use core::panic::PanicInfo;

use machine::{backtrace, percpu, stop};

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    machine::emergency_println!("\nlamina: PANIC on CPU {}: {}", percpu::current_index(), info);
    backtrace::print_current();
    stop::fatal_stop(stop::ExitCode::Failure)
}
