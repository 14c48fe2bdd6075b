//! `Record`: what the specification knows of one container, alive or
//! dead. Plain data; it must never hold anything the implementation does
//! not promise callers.

use alloc::collections::BTreeSet;

use crate::ContainerId;

/// One container in the specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `None` for the root only.
    pub parent: Option<ContainerId>,
    /// Its quota in pages, fixed at creation.
    pub quota: u64,
    /// Pages it uses: `charged` plus pages held for children (quotas of
    /// live children, usage of dead ones at their death minus what was
    /// released through them since).
    pub usage: u64,
    /// Pages it charged itself and has not released. For a dead container:
    /// those it still had charged at its death, minus releases since.
    pub charged: u64,
    /// Its live children.
    pub children: BTreeSet<ContainerId>,
    /// Whether it has not been destroyed.
    pub alive: bool,
}

impl Record {
    /// A fresh container under `parent` with `quota` pages.
    pub(crate) fn new(parent: Option<ContainerId>, quota: u64) -> Self {
        Self {
            parent,
            quota,
            usage: 0,
            charged: 0,
            children: BTreeSet::new(),
            alive: true,
        }
    }

    /// Pages it can still charge or carve out.
    pub fn available(&self) -> u64 {
        self.quota - self.usage
    }

    /// Pages held for its children: `usage - charged`.
    pub fn held(&self) -> u64 {
        self.usage - self.charged
    }

    /// Whether its slot in the implementation's table is in use: it lives,
    /// or pages are still charged through it.
    pub(crate) fn occupies_slot(&self) -> bool {
        self.alive || self.usage > 0
    }
}
