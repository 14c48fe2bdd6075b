//! The executable atomic specification of the container tree.
//!
//! [`ContainersSpec`] is plain data — a map from every id ever handed out
//! to its [`Record`] — whose operations happen in one step and return what
//! [`Containers`](crate::Containers)' do. It says nothing about locks,
//! atomics or tables; it must never be used by the implementation, only
//! against it: the refinement tests apply random operation sequences to
//! both and compare every result and every observable, and the loom and
//! thread tests check the implementation's concurrent runs against the
//! properties it states.

mod containers_spec;
mod record;

pub use containers_spec::ContainersSpec;
pub use record::Record;
