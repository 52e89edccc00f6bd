//! Prediction and interpolation end to end, behind a conditioned link.

use sightline_harness::measure::{Conditions, Scenario, run};

#[test]
fn prediction_and_interpolation_hold_up_at_150_ms_with_jitter_and_loss() {
    let bad = Conditions {
        rtt_ms: 150.0,
        jitter_ms: 20.0,
        loss_pct: 5.0,
    };
    let mut scenario = Scenario::lab(bad, 2, "duel", 30.0, 21);
    scenario.warmup = 3.0;
    let report = run(&scenario);
    let r = report.pooled;
    eprintln!("{r:#?}");
    // Every input packet was written against a command the server still held.
    assert_eq!(report.unresolved_inputs, 0);
    // Players body-block, so two bots wandering the same small map now and then bump into
    // each other, and the client learns of the other's turn a round trip late: those
    // corrections are collisions. Nothing else may ever need correcting.
    let [own, late, other, _collision, knockback, killed] = r.corrections_by_cause_per_min;
    assert_eq!(
        (own, late, other, knockback, killed),
        (0.0, 0.0, 0.0, 0.0, 0.0),
        "a correction other than a collision happened: {r:#?}"
    );
    assert!(r.interp_error_max < 0.10, "remote path error: {r:#?}");
}

#[test]
fn shots_at_the_drawn_target_hit_at_150_ms_and_shots_beside_it_miss() {
    use sightline_harness::measure::measure_hits;
    let bad = Conditions {
        rtt_ms: 150.0,
        jitter_ms: 20.0,
        loss_pct: 5.0,
    };
    let on = measure_hits(bad, false, 60.0, 5);
    assert!(on.shots >= 150, "{on:?}");
    assert!(on.within_window_pct >= 90.0, "{on:?}");
    // An honest client's shots are judged, late at worst, never refused.
    assert_eq!(on.refused_pct, 0.0, "{on:?}");
    assert!(
        on.hit_pct() >= 99.0,
        "{:.1} % of aimed shots hit: {on:?}",
        on.hit_pct()
    );
    let off = measure_hits(bad, true, 60.0, 5);
    assert!(
        off.hit_pct() <= 2.0,
        "{:.1} % of shots beside the target hit: {off:?}",
        off.hit_pct()
    );
}
