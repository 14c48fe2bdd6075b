//! A quota account for tests: a counter with a limit, like a container.

use crate::sync::{AtomicU64, Ordering};
use crate::Account;

/// At most `quota` pages charged at once.
pub(crate) struct TestAccount {
    quota: u64,
    charged: AtomicU64,
}

impl TestAccount {
    pub(crate) fn new(quota: u64) -> Self {
        Self { quota, charged: AtomicU64::new(0) }
    }

    pub(crate) fn charged(&self) -> u64 {
        self.charged.load(Ordering::SeqCst)
    }
}

impl Account for TestAccount {
    fn charge(&self, pages: u64) -> bool {
        let mut charged = self.charged.load(Ordering::SeqCst);
        loop {
            let Some(total) = charged.checked_add(pages).filter(|total| *total <= self.quota) else { return false };
            match self.charged.compare_exchange(charged, total, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(now) => charged = now,
            }
        }
    }

    fn release(&self, pages: u64) {
        self.charged.fetch_sub(pages, Ordering::SeqCst);
    }
}
