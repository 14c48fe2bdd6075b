//! The scale simulator: Lamina's multikernel at up to 640 processing
//! elements (PEs) and 64 kernels, on the host, deterministically.
//!
//! **Provides** a discrete-event simulation ([`World`]) with SemperOS's
//! structure (its §5): kernel PEs, each running the `caps` layer's
//! distributed protocol — the same `caps::distributed::Kernel` the kernel
//! runs, not a model of it — with bounded message slots and an in-flight
//! limit per ordered pair of kernels and a bounded pool of open system
//! calls; file-service PEs reached by their applications, handing out
//! memory capabilities per file range; application PEs replaying
//! system-call traces recorded on Lamina ([`trace`], [`workload`]). Time is
//! in guest instructions, charged from a cost model measured on Lamina
//! ([`CostModel`], `scale-sim/costs.txt`). The experiments of SemperOS's
//! evaluation and their figures are in [`experiments`] and [`plot`].
//!
//! **Relies on** the protocol's FIFO requirement per pair of kernels,
//! which the fabric keeps, and nothing of the host but `std`.
//!
//! **Must never** lose a message, leave an operation unfinished, or let a
//! channel hold more messages than its slots: every run checks these and
//! the protocol's audit at the end ([`Report`]).

#![forbid(unsafe_code)]

mod app_pe;
mod costs;
mod events;
pub mod experiments;
mod fabric;
pub mod figures;
mod kernel_pe;
mod layout;
pub mod plot;
mod service_pe;
pub mod trace;
pub mod workload;
pub mod world;

pub use costs::CostModel;
pub use layout::Layout;
pub use world::{Report, World};
