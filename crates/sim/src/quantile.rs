//! Quantiles of samples: the two definitions the project uses, each written once. Tick
//! times, frame times, clock offsets, snapshot delays and every measurement table pick
//! one by name rather than indexing a sorted list by hand.

/// `values` sorted, NaN last (IEEE total order).
pub fn sorted(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The value a fraction `q` (0 to 1) of the way through `sorted`, at the nearest index:
/// 0 the least, 0.5 the median (the upper of the middle two of an even count), 1 the
/// greatest. `None` when there are none.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let at = (last as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted.get(at.min(last)).copied()
}

/// The nearest-rank `q` quantile (0 to 1) of `sorted`: the least value that at least a
/// fraction `q` of them do not exceed, so a quantile that must cover `q` of the samples
/// covers at least that many. `None` when there are none.
pub fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n.max(1));
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_by_index_or_by_rank() {
        let v = sorted([4.0, 1.0, 3.0, 2.0]);
        assert_eq!(v, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 0.5), Some(3.0), "the upper median");
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(
            nearest_rank(&v, 0.5),
            Some(2.0),
            "half of them are at most 2"
        );
        assert_eq!(nearest_rank(&v, 0.99), Some(4.0));
        assert_eq!(nearest_rank(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(nearest_rank(&[], 0.5), None);
        // Out-of-range fractions are clamped, never an index past the end.
        assert_eq!(quantile(&v, 7.0), Some(4.0));
        assert_eq!(nearest_rank(&v, -1.0), Some(1.0));
    }

    #[test]
    fn the_median_is_the_middle_element_for_every_count() {
        for n in 1..20 {
            let v = sorted((0..n).map(f64::from));
            assert_eq!(quantile(&v, 0.5), Some(v[v.len() / 2]), "{n} values");
        }
    }
}
