//! The cost model: what each step of a kernel, a service or an
//! application costs, in guest instructions measured on Lamina under
//! `-icount shift=0` (`make bench BENCH=costs` writes `costs.txt`).
//!
//! Must not guess: every key is required, and a missing or malformed one
//! is an error naming it.

use std::collections::BTreeMap;

/// Declares the model's fields once: the struct, and the parser's list of
/// keys (the file's key is the field's name).
macro_rules! cost_model {
    ($($(#[doc = $doc:literal])* $field:ident),* $(,)?) => {
        /// Costs in guest instructions (see `costs.txt` for how each was measured).
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct CostModel {
            $($(#[doc = $doc])* pub $field: u64,)*
        }

        impl CostModel {
            /// Every key the file must have.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            fn from_values(values: &BTreeMap<String, u64>) -> Result<Self, String> {
                let get = |key: &str| values.get(key).copied().ok_or_else(|| format!("the cost model has no `{key}`"));
                Ok(Self { $($field: get(stringify!($field))?,)* })
            }
        }
    };
}

cost_model! {
    /// A system call's entry and exit.
    syscall,
    /// One switch between two threads on one CPU.
    context_switch,
    /// Encoding a message and putting it in a channel slot.
    message_send,
    /// Taking a message from a slot and decoding it.
    message_receive,
    /// Waking a parked kernel thread on another, idle CPU until it runs.
    notify,
    /// One pass of a kernel's loop around its work (its queues, every
    /// peer's channel, the decision to park), whatever it finds.
    kernel_turn,
    /// One message between two kernels' loops on their own CPUs, the
    /// receiver parked: everything, its handler included.
    kernel_hop,
    /// The handler part of `kernel_hop`.
    kernel_hop_handlers,
    /// `obtain` of a capability on the caller's kernel.
    call_obtain_local,
    /// `obtain` of a capability on another kernel (the caller's part).
    call_obtain_remote,
    /// `delegate` to a process of the same kernel.
    call_delegate_local,
    /// `delegate` to a process of another kernel (the caller's part).
    call_delegate_remote,
    /// `revoke` of a local capability with no children.
    call_revoke_leaf,
    /// Each further local capability a revocation marks and removes, in a
    /// revocation of 1000.
    revoke_per_local_cap,
    /// The same between revocations of 10 and of 100.
    revoke_per_local_cap_short,
    /// Each remote child a revocation asks another kernel to revoke.
    revoke_per_remote_child,
    /// Handling `ObtainRequest`.
    handle_obtain_request,
    /// Handling `ObtainReply`.
    handle_obtain_reply,
    /// Handling `DelegateRequest`.
    handle_delegate_request,
    /// Handling `DelegateReply`.
    handle_delegate_reply,
    /// Handling `DelegateAck`.
    handle_delegate_ack,
    /// Handling `RevokeRequest` for a leaf.
    handle_revoke_request,
    /// Handling `RevokeRequest` for a capability with a remote child: mark
    /// it and ask on.
    handle_revoke_request_inner,
    /// Handling the last `RevokeReply` of a revocation, answering a call.
    handle_revoke_reply,
    /// Handling the last `RevokeReply` of a revocation another kernel
    /// asked for: remove, reply on.
    handle_revoke_reply_inner,
    /// Handling `Unlink` (and the abandoned-exchange messages).
    handle_unlink,
    /// A file service's open (with its close).
    file_open_close,
    /// A file service's stat.
    file_stat,
    /// Reading 4 KiB of a cached file.
    file_read_4k,
    /// Writing 4 KiB of a cached file.
    file_write_4k,
}

impl CostModel {
    /// Parses `costs.txt`: `#` comments and `key value` lines; unknown keys
    /// are ignored (a newer bench may measure more), missing ones refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut values = BTreeMap::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else {
                return Err(format!("costs line {}: expected `key value`, found `{line}`", number + 1));
            };
            let value = value.parse::<u64>().map_err(|_| format!("costs line {}: `{value}` is not a count of instructions", number + 1))?;
            values.insert(key.to_string(), value);
        }
        Self::from_values(&values)
    }

    /// The `key value` lines of `text` whose key starts with `prefix`
    /// (measurements kept beside the model, for cross-checks).
    pub fn records(text: &str, prefix: &str) -> BTreeMap<String, u64> {
        text.lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let key = words.next().filter(|key| key.starts_with(prefix))?;
                Some((key.to_string(), words.next()?.parse().ok()?))
            })
            .collect()
    }

    /// What each capability beyond the first costs a revocation that
    /// removes `removed`: the short slope up to 100, the long one from
    /// 1000, between them on a logarithmic line (the maps' depth).
    pub fn per_local_cap(&self, removed: u64) -> u64 {
        let (short, long) = (self.revoke_per_local_cap_short as f64, self.revoke_per_local_cap as f64);
        let at = ((removed.max(1) as f64).log10() - 2.0).clamp(0.0, 1.0);
        (short + (long - short) * at).round() as u64
    }

    /// The committed model (`scale-sim/costs.txt`).
    pub fn committed() -> Result<Self, String> {
        Self::parse(include_str!("../costs.txt"))
    }

    /// Every cost the same: for tests whose arithmetic must be obvious.
    pub fn uniform(value: u64) -> Self {
        let values = Self::KEYS.iter().map(|key| (key.to_string(), value)).collect();
        Self::from_values(&values).expect("every key has a value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_read_and_a_missing_one_is_named() {
        let text: String = CostModel::KEYS.iter().enumerate().map(|(at, key)| format!("# about {key}\n{key} {at}\n")).collect();
        let model = CostModel::parse(&format!("{text}newer_key 5\n")).expect("complete");
        assert_eq!(model.syscall, 0);
        assert_eq!(model.file_write_4k, (CostModel::KEYS.len() - 1) as u64);
        let without_notify: String = text.lines().filter(|line| !line.starts_with("notify")).map(|line| format!("{line}\n")).collect();
        assert_eq!(CostModel::parse(&without_notify), Err("the cost model has no `notify`".to_string()));
    }

    #[test]
    fn a_capabilitys_cost_follows_the_revocations_size_between_the_two_measured() {
        let mut model = CostModel::uniform(0);
        (model.revoke_per_local_cap_short, model.revoke_per_local_cap) = (600, 1000);
        assert_eq!([1, 10, 100, 316, 1000, 100_000].map(|removed| model.per_local_cap(removed)), [600, 600, 600, 800, 1000, 1000]);
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert!(CostModel::parse("syscall many\n").unwrap_err().contains("line 1"));
        assert!(CostModel::parse("syscall 1 2\n").unwrap_err().contains("expected `key value`"));
    }

    #[test]
    fn the_committed_model_is_complete() {
        let model = CostModel::committed().expect("costs.txt has every key");
        assert!(model.message_send > 0 && model.notify > 0);
    }
}
