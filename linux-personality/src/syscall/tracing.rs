//! Recording each system call for the tracer (`linux_objects::syscall_trace`):
//! the path a call names is read before it runs (`execve` replaces the
//! memory it lies in), then the clock is read around the call itself, so
//! that the tracer's own work falls between calls, not inside them.
//! Process 1 (xtask's `/init`, which only relays the program's output) is
//! not traced.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::syscall_trace::{path_argument, TraceRecord, MAX_TRACE_PATH};
use linux_abi::Errno;
use machine::user::UserContext;

use super::Flow;
use crate::process::Process;
use crate::run::ThreadSelf;
use crate::syscall_trace;

/// The untraced dispatch.
pub(super) type Dispatch = fn(&Arc<Process>, &mut UserContext, &mut ThreadSelf) -> Flow;

/// Runs `dispatch` and records the call.
pub(super) fn traced(process: &Arc<Process>, context: &mut UserContext, thread: &mut ThreadSelf, dispatch: Dispatch) -> Flow {
    if process.pid == 1 {
        return dispatch(process, context, thread);
    }
    let registers = &context.registers;
    let (number, arguments) = (registers.rax, [registers.rdi, registers.rsi, registers.rdx]);
    let path = path_argument(number).and_then(|index| path_named(process, arguments[index]));
    let (pid, tid) = (process.pid, thread.tid);
    let start = machine::timer::uptime_nanoseconds();
    let flow = dispatch(process, context, thread);
    let end = machine::timer::uptime_nanoseconds();
    let result = match flow {
        Flow::Continue => context.registers.rax as i64,
        Flow::ExitThread(_) | Flow::Exit(_) => 0,
    };
    syscall_trace::record(&TraceRecord { start, end, pid, tid, number, result, arguments, path: path.as_deref() });
    flow
}

/// The string at `address`, if it is one a record keeps.
fn path_named(process: &Process, address: u64) -> Option<Vec<u8>> {
    process.native.user_memory().read_c_string(address, MAX_TRACE_PATH + 1, Errno::ENAMETOOLONG).ok()
}
