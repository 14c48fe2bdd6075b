//! The machine states (FPU and all) of code interrupted by signal
//! handlers, kept in the kernel for `rt_sigreturn`, one per handler frame,
//! named by the frame's `ucontext` address.
//!
//! A handler that leaves by `siglongjmp` never returns through its frame,
//! so its entry must not be kept for ever: stress-ng's sigsegv stressor
//! did that 2,048 times in a second, the list grew by a whole context
//! each time, and the delivery that could not grow it killed the process
//! (and until then the kernel heap held them all). So:
//! - a new frame drops the entries on the same stack (the alternate stack,
//!   or anywhere else) at or below its own address: a live frame there
//!   would lie above the stack pointer the new frame is placed under;
//! - at most [`MOST_KEPT`] entries, the oldest dropped past that;
//! - `rt_sigreturn` from a frame takes its entry and drops the younger
//!   ones (nested deeper, abandoned); a frame with no entry (forged, or
//!   dropped) gets nothing, and the caller keeps the current state.
//!
//! Pure bookkeeping; host-tested.

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

/// The most entries kept: deeper nesting of live handlers is no program's.
pub const MOST_KEPT: usize = 32;

/// The states, oldest first.
#[derive(Debug, Clone)]
pub struct InterruptedStates<T> {
    entries: Vec<(u64, T)>,
}

impl<T> Default for InterruptedStates<T> {
    fn default() -> Self {
        Self { entries: Vec::new() }
    }
}

impl<T> InterruptedStates<T> {
    /// Keeps `state` for the frame whose `ucontext` is at `ucontext`;
    /// `alternate` is the thread's alternate stack (base, size; size 0:
    /// none). Fails only when the list cannot grow.
    pub fn push(&mut self, ucontext: u64, alternate: (u64, u64), state: T) -> Result<(), TryReserveError> {
        let (base, size) = alternate;
        let on_alternate = |address: u64| address.wrapping_sub(base) < size;
        let new_on_alternate = on_alternate(ucontext);
        self.entries.retain(|(address, _)| on_alternate(*address) != new_on_alternate || *address > ucontext);
        if self.entries.len() >= MOST_KEPT {
            self.entries.remove(0);
        }
        self.entries.try_reserve(1)?;
        self.entries.push((ucontext, state));
        Ok(())
    }

    /// The state kept for the frame at `ucontext`, with every younger
    /// entry dropped; `None` (nothing dropped) when there is none.
    pub fn pop(&mut self, ucontext: u64) -> Option<T> {
        let index = self.entries.iter().rposition(|(address, _)| *address == ucontext)?;
        self.entries.truncate(index + 1);
        self.entries.pop().map(|(_, state)| state)
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets them all (`execve`).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALTERNATE: (u64, u64) = (0x5000_0000, 0x10000);
    const NONE: (u64, u64) = (0, 0);

    #[test]
    fn handlers_that_siglongjmp_from_the_alternate_stack_keep_one_entry() {
        let mut states = InterruptedStates::default();
        let top = ALTERNATE.0 + ALTERNATE.1 - 0x800;
        for round in 0..5000u32 {
            states.push(top, ALTERNATE, round).unwrap();
        }
        assert_eq!(states.len(), 1, "each delivery lands where the abandoned one was");
        assert_eq!(states.pop(top), Some(4999));
    }

    #[test]
    fn nested_handlers_return_in_order_across_stacks() {
        let mut states = InterruptedStates::default();
        let main_frame = 0x7fff_0000_0000;
        let on_alternate = ALTERNATE.0 + 0xf000;
        let nested = on_alternate - 0x1000;
        states.push(main_frame, ALTERNATE, "main").unwrap();
        states.push(on_alternate, ALTERNATE, "first handler").unwrap();
        states.push(nested, ALTERNATE, "nested").unwrap();
        assert_eq!(states.len(), 3, "frames above each other are all live");
        assert_eq!(states.pop(nested), Some("nested"));
        assert_eq!(states.pop(on_alternate), Some("first handler"));
        assert_eq!(states.pop(main_frame), Some("main"));
        assert!(states.is_empty());
    }

    #[test]
    fn a_frame_below_an_abandoned_one_on_the_main_stack_drops_it_and_a_deeper_one_cannot_grow_without_bound() {
        let mut states = InterruptedStates::default();
        states.push(0x7000_1000, NONE, 1).unwrap();
        states.push(0x7000_1000, NONE, 2).unwrap();
        assert_eq!(states.len(), 1, "same place: the first was abandoned");
        states.push(0x7000_2000, NONE, 3).unwrap();
        assert_eq!(states.len(), 1, "a frame higher up: everything below it is dead");
        for step in 0..100u64 {
            states.push(0x7000_0000 - step * 16, NONE, 4).unwrap();
        }
        assert_eq!(states.len(), MOST_KEPT, "ever deeper frames are capped");
    }

    #[test]
    fn a_return_from_an_unknown_frame_takes_nothing_and_a_known_one_drops_the_younger() {
        let mut states = InterruptedStates::default();
        states.push(0x9000, NONE, "outer").unwrap();
        states.push(0x8000, NONE, "inner").unwrap();
        assert_eq!(states.pop(0x1234), None);
        assert_eq!(states.len(), 2, "a forged frame changes nothing");
        assert_eq!(states.pop(0x9000), Some("outer"), "the outer handler returned: the inner was abandoned");
        assert!(states.is_empty());
    }
}
