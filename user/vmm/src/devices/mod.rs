//! The PC devices the VMM emulates for a Linux guest: the interrupt
//! controllers, the timer's channel 0 and COM1. Plain state machines over
//! port numbers and bytes; the VMM's run loop wires them to KVM.

pub mod pic;
pub mod pit;
pub mod uart;
