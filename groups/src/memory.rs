//! Which physical frames each group owns: the free frames, in address
//! order, cut into `groups` runs of equal count (the first
//! `total mod groups` runs one frame larger), so each group's kernel has a
//! frame allocator of its own over memory no other group hands out.

use alloc::vec::Vec;

/// Frames `start..end` (frame numbers; `end` not included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpan {
    /// The first frame.
    pub start: u64,
    /// One past the last frame.
    pub end: u64,
}

impl FrameSpan {
    /// How many frames.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether it has no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it holds frame `frame`.
    pub fn contains(&self, frame: u64) -> bool {
        (self.start..self.end).contains(&frame)
    }
}

/// The free `spans` (any order; overlaps count once, empty spans are
/// ignored) cut into `groups` parts of equal frame count in address order;
/// part g is group g's memory. No group asked for: no part.
pub fn partition_ranges(spans: &[FrameSpan], groups: usize) -> Vec<Vec<FrameSpan>> {
    let mut sorted: Vec<FrameSpan> = spans.iter().copied().filter(|span| !span.is_empty()).collect();
    sorted.sort_by_key(|span| span.start);
    // Clip overlaps so that every frame is counted once.
    let mut disjoint: Vec<FrameSpan> = Vec::with_capacity(sorted.len());
    for span in sorted {
        let start = disjoint.last().map_or(span.start, |last| span.start.max(last.end));
        if start < span.end {
            disjoint.push(FrameSpan { start, end: span.end });
        }
    }
    let total: u64 = disjoint.iter().map(FrameSpan::len).sum();
    let mut parts: Vec<Vec<FrameSpan>> = (0..groups).map(|_| Vec::new()).collect();
    if groups == 0 {
        return parts;
    }
    let (base, extra) = (total / groups as u64, total % groups as u64);
    let wanted = |group: usize| base + u64::from((group as u64) < extra);
    let (mut group, mut taken) = (0usize, 0u64);
    for span in disjoint {
        let mut start = span.start;
        while start < span.end && group < groups {
            let take = (wanted(group) - taken).min(span.end - start);
            if take > 0 {
                parts[group].push(FrameSpan { start, end: start + take });
            }
            start += take;
            taken += take;
            if taken == wanted(group) {
                group += 1;
                taken = 0;
            }
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, end: u64) -> FrameSpan {
        FrameSpan { start, end }
    }

    #[test]
    fn two_groups_split_a_hole_in_the_middle_evenly() {
        let parts = partition_ranges(&[span(100, 110), span(0, 4)], 2);
        assert_eq!(parts, [alloc::vec![span(0, 4), span(100, 103)], alloc::vec![span(103, 110)]]);
    }

    #[test]
    fn overlaps_count_once_and_empty_spans_vanish() {
        let parts = partition_ranges(&[span(0, 6), span(4, 8), span(9, 9)], 1);
        assert_eq!(parts, [alloc::vec![span(0, 6), span(6, 8)]]);
    }

    #[test]
    fn fewer_frames_than_groups_leaves_the_last_groups_empty() {
        let parts = partition_ranges(&[span(0, 2)], 3);
        assert_eq!(parts, [alloc::vec![span(0, 1)], alloc::vec![span(1, 2)], alloc::vec![]]);
        assert!(partition_ranges(&[span(0, 2)], 0).is_empty());
    }
}
