//! Minimum, median, maximum and spread of a set of measurements.

/// The numbers DESIGN.md's benchmark records carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub minimum: f64,
    pub median: f64,
    pub maximum: f64,
    /// (maximum - minimum) / median.
    pub spread: f64,
}

/// `None` for no samples.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (minimum, maximum) = (*sorted.first()?, *sorted.last()?);
    let middle = sorted.len() / 2;
    let median = match sorted.len() % 2 {
        1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    };
    let spread = if median == 0.0 {
        0.0
    } else {
        (maximum - minimum) / median
    };
    Some(Summary {
        minimum,
        median,
        maximum,
        spread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts_have_the_usual_median() {
        let odd = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (odd.minimum, odd.median, odd.maximum, odd.spread),
            (1.0, 2.0, 3.0, 1.0)
        );
        assert_eq!(summarize(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
    }

    #[test]
    fn no_samples_have_no_summary() {
        assert_eq!(summarize(&[]), None);
    }
}
