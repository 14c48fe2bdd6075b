//! Which PE does what: SemperOS's machine of kernel PEs, file-service PEs
//! and application PEs, divided into groups, one kernel each.
//!
//! Must not place more than 640 PEs or 64 kernels (the protocol's and
//! SemperOS's limits), and must place the same way every time.

/// The machine: how many of each kind of PE, and the kernels' limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Kernel PEs, one per group.
    pub kernels: usize,
    /// File-service PEs.
    pub services: usize,
    /// Application PEs (one instance each).
    pub apps: usize,
    /// Message slots per ordered pair of kernels (SemperOS: 4 in flight).
    pub slots: usize,
    /// System calls a kernel runs at once (its pool of kernel threads);
    /// more wait their turn. Messages from kernels are never held back.
    pub threads: usize,
}

/// SemperOS's machine: 640 PEs.
pub const MAX_PES: usize = 640;
/// SemperOS's DTU endpoints allow 64 kernels; `KernelId` is a byte.
pub const MAX_KERNELS: usize = 64;

impl Layout {
    /// `kernels` kernels, `services` services and `apps` applications, with
    /// SemperOS's 4 slots per pair and 8 kernel threads.
    pub fn new(kernels: usize, services: usize, apps: usize) -> Result<Self, String> {
        let layout = Self { kernels, services, apps, slots: 4, threads: 8 };
        layout.check().map(|()| layout)
    }

    fn check(&self) -> Result<(), String> {
        if self.kernels == 0 || self.kernels > MAX_KERNELS {
            return Err(format!("{} kernels: 1 to {MAX_KERNELS} are possible", self.kernels));
        }
        if self.pes() > MAX_PES {
            return Err(format!("{} PEs: at most {MAX_PES}", self.pes()));
        }
        if self.slots == 0 || self.threads == 0 {
            return Err("a kernel needs at least one slot per pair and one thread".into());
        }
        Ok(())
    }

    /// Every PE.
    pub fn pes(&self) -> usize {
        self.kernels + self.services + self.apps
    }

    /// PEs given to the OS (kernels and services).
    pub fn os_pes(&self) -> usize {
        self.kernels + self.services
    }

    /// The group (kernel) of application `app`: round robin.
    pub fn app_kernel(&self, app: usize) -> usize {
        app % self.kernels
    }

    /// The group (kernel) of service `service`: spread evenly over the
    /// groups (round robin when there are more services than kernels).
    pub fn service_kernel(&self, service: usize) -> usize {
        if self.services <= self.kernels {
            service * self.kernels / self.services
        } else {
            service % self.kernels
        }
    }

    /// The service application `app` uses: one of its own group's, if the
    /// group has any (SemperOS: kernels prefer the service in their group);
    /// else a shared one.
    pub fn app_service(&self, app: usize) -> Option<usize> {
        if self.services == 0 {
            return None;
        }
        let group = self.app_kernel(app);
        let local: Vec<usize> = (0..self.services).filter(|service| self.service_kernel(*service) == group).collect();
        Some(match local.len() {
            0 => group % self.services,
            count => local[(app / self.kernels) % count],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_refused() {
        assert!(Layout::new(65, 0, 1).is_err());
        assert!(Layout::new(64, 64, 513).is_err());
        assert!(Layout::new(64, 64, 512).is_ok());
        assert!(Layout::new(0, 1, 1).is_err());
    }

    #[test]
    fn apps_use_their_own_groups_service_when_it_has_one() {
        let layout = Layout::new(4, 2, 8).unwrap();
        assert_eq!((0..2).map(|s| layout.service_kernel(s)).collect::<Vec<_>>(), [0, 2]);
        // Apps 0 and 4 are in group 0, which hosts service 0; group 1 has none.
        assert_eq!(layout.app_service(0), Some(0));
        assert_eq!(layout.app_service(2), Some(1));
        assert_eq!(layout.app_service(1), Some(1));
        let more = Layout::new(2, 4, 4).unwrap();
        assert_eq!((0..4).map(|app| more.app_service(app)).collect::<Vec<_>>(), [Some(0), Some(1), Some(2), Some(3)]);
    }
}
