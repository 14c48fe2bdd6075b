//! Transaction-ID comparisons that survive 32-bit wrap-around (the
//! kernel's `tid_gt` and `tid_geq`). **Must never** compare IDs with `<`.

/// Whether `x` is after `y`.
pub(crate) fn tid_after(x: u32, y: u32) -> bool {
    (x.wrapping_sub(y) as i32) > 0
}

/// Whether `x` is `y` or after it.
pub(crate) fn tid_at_or_after(x: u32, y: u32) -> bool {
    (x.wrapping_sub(y) as i32) >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap() {
        assert!(tid_after(2, 1));
        assert!(!tid_after(1, 1));
        assert!(tid_at_or_after(1, 1));
        assert!(tid_after(0, u32::MAX));
        assert!(!tid_at_or_after(u32::MAX, 0));
    }
}
