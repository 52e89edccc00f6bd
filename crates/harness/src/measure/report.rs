//! What a measurement found, per client and for the whole scenario, and the statistics
//! that sum it up.

/// What one measurement found, for one client or pooled over several.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetcodeReport {
    /// Frames per second the client ran at (the mean when pooled).
    pub fps: f64,
    /// Prediction corrections per minute per client.
    pub corrections_per_min: f64,
    /// Corrections a player sees, per minute per client: all but the stop at death
    /// (which the death camera shows instead), classified by what the server did.
    pub seen_per_min: f64,
    /// 99th percentile size of those, metres.
    pub seen_p99: f64,
    /// Mean correction size, metres (0 when none).
    pub correction_mean: f64,
    /// 99th percentile correction size, metres.
    pub correction_p99: f64,
    /// Largest correction, metres.
    pub correction_max: f64,
    /// Corrections per minute per client by the cause prediction gave them, in the order
    /// of `CorrectionCauses::as_array`: our own movement mispredicted, our input late (the
    /// server repeated a command), no prediction to compare; and other players' doing: a
    /// collision, knockback, being killed.
    pub corrections_by_cause_per_min: [f64; 6],
    /// Of the corrections, those that came while the server had the player dead, per
    /// minute per client (observed by the harness, whatever their cause).
    pub corrections_while_dead_per_min: f64,
    /// Of the knockback, the corrections that were news (`Correction::news`: another's
    /// burst whose rocket came too late for the client to fly), over all the
    /// client-minutes.
    pub news: u64,
    /// Client-minutes measured: the span times the clients pooled.
    pub client_minutes: f64,
    /// Visible snaps: frames in which the drawn camera moved more than 5 cm beyond what
    /// the player's own commands moved it, not put down to news or death; over all the
    /// client-minutes.
    pub snaps: u64,
    /// The same put down to news.
    pub news_snaps: u64,
    /// The same while the server had the player dead or in the frame of a respawn (the
    /// death camera's to show).
    pub death_snaps: u64,
    /// Teleports (respawns) prediction adopted without a correction, per minute per
    /// client.
    pub teleports_per_min: f64,
    /// Times prediction gave up waiting for the server and started over, per client.
    pub resets: f64,
    /// Ticks the server repeated a client's command, per minute per client.
    pub repeats_per_min: f64,
    /// Ticks the server held the player waiting for a late command, per minute (each
    /// delays the player's commands by a tick until the server repays it, and corrects
    /// nothing).
    pub held_per_min: f64,
    /// Held ticks the server repaid by running two of the player's commands in a tick,
    /// per minute.
    pub caught_up_per_min: f64,
    /// Key press to the server simulating the command, milliseconds: mean.
    pub input_latency_ms_mean: f64,
    /// Its 99th percentile.
    pub input_latency_ms_p99: f64,
    /// Mean time a command waits in the server's buffer, milliseconds.
    pub input_buffer_ms: f64,
    /// Hitscan shots fired by the client(s) in the span.
    pub shots: u64,
    /// Age of the world each shot was judged against (server time less the view time its
    /// command carried), milliseconds: mean.
    pub shot_age_ms_mean: f64,
    /// Its 99th percentile.
    pub shot_age_ms_p99: f64,
    /// Mean distance between where a remote player was drawn and where the server had it
    /// at the drawn time, metres.
    pub interp_error_mean: f64,
    /// 99th percentile of that distance, metres.
    pub interp_error_p99: f64,
    /// Largest of that distance, metres.
    pub interp_error_max: f64,
    /// Share of remote-player frames drawn past the newest snapshot, percent.
    pub extrapolated_pct: f64,
    /// Share of the client's frames in which it also drew its own player as a remote
    /// player (a ghost of itself), percent.
    pub self_drawn_pct: f64,
    /// Share of remote-player frames in which a player that had respawned was still drawn
    /// where it fell, left out of the interpolation error (the client holds it there until
    /// a snapshot of the new life arrives, so cannot know the tick between two snapshots
    /// at which it respawned), percent.
    pub respawn_frames_pct: f64,
    /// Interpolation delay over the frames, milliseconds: mean.
    pub interp_delay_ms_mean: f64,
    /// Its 99th percentile.
    pub interp_delay_ms_p99: f64,
    /// How far behind the server's present the client draws the other players, each
    /// frame: the server's newest tick less the render time, milliseconds: mean.
    pub drawn_lag_ms_mean: f64,
    /// Its 99th percentile.
    pub drawn_lag_ms_p99: f64,
    /// Pop-ins per minute per client: a remote player drawn at last after frames in
    /// which it stood in plain sight of our eye (a clear line to the middle of its body
    /// where the server had it at the drawn time) and was not drawn.
    pub pop_ins_per_min: f64,
    /// How long those players were missing first, milliseconds: 99th percentile.
    pub pop_in_ms_p99: f64,
    /// Of the remote-player frames in plain sight, the share not drawn, percent.
    pub missing_pct: f64,
    /// Frames whose render time was earlier than the previous frame's, per client.
    pub render_steps_back: f64,
    /// Largest such step back, milliseconds.
    pub render_step_back_max_ms: f64,
    /// Bytes per second per client, client to server, with netcode's and UDP/IP's headers.
    pub up_bytes_per_s: f64,
    /// Bytes per second per client, server to client, with the same headers.
    pub down_bytes_per_s: f64,
}

/// What a scenario found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioReport {
    /// Each measured client, in the scenario's order.
    pub clients: Vec<NetcodeReport>,
    /// All of them pooled.
    pub pooled: NetcodeReport,
    /// Deaths per minute, everyone on the server.
    pub kills_per_min: f64,
    /// Rockets fired per minute, everyone.
    pub rockets_per_min: f64,
    /// Hitscan shots per minute, everyone.
    pub shots_per_min: f64,
    /// Input packets the server dropped because it no longer held the command they were
    /// written against, over the whole run: an honest client never causes one.
    pub unresolved_inputs: u64,
    /// Hitches made in the measured clients' frames, all together.
    pub hitches: u64,
    /// Stalls made on the server.
    pub stalls: u64,
    /// Spells the link went dark.
    pub outages: u64,
}

/// A scenario played with several seeds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeededReport {
    /// Each measured client, pooled over the seeds: rates are the mean per run,
    /// percentiles are over every sample of every run.
    pub clients: Vec<NetcodeReport>,
    /// Each seed's own report, in the order played, for the spread between them.
    pub seeds: Vec<ScenarioReport>,
}

impl SeededReport {
    /// `figure` of client `j` in each seed's run: the smallest and the largest.
    pub fn spread(&self, j: usize, figure: impl Fn(&NetcodeReport) -> f64) -> (f64, f64) {
        self.seeds
            .iter()
            .filter_map(|r| r.clients.get(j))
            .map(figure)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }
}

impl NetcodeReport {
    /// These reports' rare events, pooled.
    pub fn rare_events<'a>(reports: impl IntoIterator<Item = &'a Self>) -> RareEvents {
        reports
            .into_iter()
            .fold(RareEvents::default(), |sum, r| RareEvents {
                snaps: sum.snaps + r.snaps,
                news_snaps: sum.news_snaps + r.news_snaps,
                death_snaps: sum.death_snaps + r.death_snaps,
                news: sum.news + r.news,
                minutes: sum.minutes + r.client_minutes,
            })
    }
}

/// Rare events counted over many client-minutes, for rates with their 95 % interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RareEvents {
    /// Visible snaps not by news or death.
    pub snaps: u64,
    /// Visible snaps by news.
    pub news_snaps: u64,
    /// Visible snaps while dead or respawning.
    pub death_snaps: u64,
    /// News corrections.
    pub news: u64,
    /// Client-minutes they were counted over.
    pub minutes: f64,
}

/// The rate of `count` events in `minutes`, per minute, with its 95 % interval: the
/// Poisson interval by Byar's approximation (within a few per cent of the exact one
/// from a count of one up).
pub fn rate_interval(count: u64, minutes: f64) -> (f64, f64, f64) {
    if minutes <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let n = count as f64;
    let z = 1.959_964;
    let lower = if count == 0 {
        0.0
    } else {
        n * (1.0 - 1.0 / (9.0 * n) - z / (3.0 * n.sqrt())).powi(3)
    };
    let m = n + 1.0;
    let upper = m * (1.0 - 1.0 / (9.0 * m) + z / (3.0 * m.sqrt())).powi(3);
    (n / minutes, lower / minutes, upper / minutes)
}

/// The nearest-rank `q` quantile (0 to 1) of sorted values, or 0 when there are none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    sightline_sim::quantile::quantile(sorted, q).unwrap_or(0.0)
}

/// The mean of `values`, or 0 when there are none.
pub(crate) fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_s_interval_is_poisson_s() {
        // Exact 95 % intervals: 0 events, 0-3.689; 10 events, 4.795-18.39.
        let (rate, lo, hi) = rate_interval(0, 1.0);
        assert_eq!((rate, lo), (0.0, 0.0));
        assert!((hi - 3.689).abs() < 0.03, "{hi}");
        let (rate, lo, hi) = rate_interval(10, 2.0);
        assert_eq!(rate, 5.0);
        assert!((lo - 4.795 / 2.0).abs() < 0.01, "{lo}");
        assert!((hi - 18.39 / 2.0).abs() < 0.01, "{hi}");
        assert_eq!(rate_interval(3, 0.0), (0.0, 0.0, 0.0));
    }

    #[test]
    fn rare_events_pool_counts_and_minutes() {
        let a = NetcodeReport {
            snaps: 2,
            news_snaps: 1,
            news: 4,
            client_minutes: 10.0,
            ..Default::default()
        };
        let b = NetcodeReport {
            snaps: 3,
            death_snaps: 5,
            client_minutes: 20.0,
            ..Default::default()
        };
        assert_eq!(
            NetcodeReport::rare_events([&a, &b]),
            RareEvents {
                snaps: 5,
                news_snaps: 1,
                death_snaps: 5,
                news: 4,
                minutes: 30.0,
            }
        );
    }
}
