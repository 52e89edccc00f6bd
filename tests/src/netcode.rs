//! Prediction and interpolation end to end, behind a conditioned link.

use crate::measure::{Conditions, measure};

#[test]
fn prediction_and_interpolation_hold_up_at_150_ms_with_jitter_and_loss() {
    let bad = Conditions {
        rtt_ms: 150.0,
        jitter_ms: 20.0,
        loss_pct: 5.0,
    };
    let r = measure(bad, 2, "duel", 3.0, 30.0, 21);
    eprintln!("{r:#?}");
    assert_eq!(r.correction_max, 0.0, "a correction happened: {r:#?}");
    assert!(r.interp_error_max < 0.10, "remote path error: {r:#?}");
}
