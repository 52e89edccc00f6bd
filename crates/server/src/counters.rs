//! Every counter the server keeps over its life, in one table: its key in the status
//! line, its name and help in a host's metrics, and where its value comes from. The
//! status line and the dedicated server's Prometheus exporter both read [`Counters`],
//! so a counter added here reaches both, under names that cannot drift apart.

use crate::rules::MatchState;
use crate::stalls::Stalls;
use crate::stats::{HostingStats, ServerStats, SnapshotStats};
use bevy::prelude::*;
use sightline_combat::LagCompStats;
use sightline_net::{Connectionless, NetStats};
use sightline_sim::Tick;

/// One counter, as it stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Its key in the status line (`key=value`); `None`: not shown there.
    pub key: Option<&'static str>,
    /// Its name as a Prometheus counter (`sightline_..._total`); `None`: not exported.
    pub metric: Option<&'static str>,
    /// What it counts, for the metric's help.
    pub help: &'static str,
    /// Its value.
    pub value: u64,
}

/// Where the counters' values are read from.
#[derive(bevy::ecs::system::SystemParam)]
pub struct Counters<'w> {
    stats: Res<'w, ServerStats>,
    hosting: Res<'w, HostingStats>,
    snapshots: Res<'w, SnapshotStats>,
    net: Res<'w, NetStats>,
    lagcomp: Res<'w, LagCompStats>,
    stalls: Res<'w, Stalls>,
    matches: Res<'w, MatchState>,
    tick: Res<'w, Tick>,
    connectionless: Option<Res<'w, Connectionless>>,
}

impl Counters<'_> {
    /// Every counter, in the status line's order.
    pub fn all(&self) -> Vec<Counter> {
        let (stats, net, hosting) = (&*self.stats, &*self.net, &*self.hosting);
        let (snapshots, lagcomp, stalls) = (&*self.snapshots, &*self.lagcomp, &*self.stalls);
        let both = |key, metric, help, value| Counter {
            key: Some(key),
            metric: Some(metric),
            help,
            value,
        };
        let status = |key, help, value| Counter {
            key: Some(key),
            metric: None,
            help,
            value,
        };
        let metric = |metric, help, value| Counter {
            key: None,
            metric: Some(metric),
            help,
            value,
        };
        vec![
            both(
                "kicks",
                "sightline_kicks_total",
                "Connections kicked, for strikes or idleness",
                stats.kicks,
            ),
            both(
                "strikes",
                "sightline_strikes_total",
                "Strikes given for misbehaviour, weighted",
                stats.strikes,
            ),
            both(
                "malformed",
                "sightline_malformed_total",
                "Messages dropped because they failed to decode or validate",
                stats.malformed_packets,
            ),
            both(
                "malformed_bundles",
                "sightline_malformed_bundles_total",
                "Datagrams holding a malformed bundle of packets",
                net.malformed_bundles,
            ),
            both(
                "bad_packets",
                "sightline_bad_packets_total",
                "renet packets refused before renet read them",
                net.bad_packets,
            ),
            both(
                "ack_stalls",
                "sightline_ack_stalls_total",
                "Connections dropped for not acknowledging",
                net.ack_stalls,
            ),
            status(
                "resends_held",
                "Reliable resends held back while a connection's acknowledgements stalled",
                net.resends_held,
            ),
            both(
                "over_budget",
                "sightline_over_budget_total",
                "Messages dropped over a connection's budget",
                stats.over_budget,
            ),
            both(
                "refused_commands",
                "sightline_refused_commands_total",
                "Commands refused as impossible",
                stats.refused_commands,
            ),
            both(
                "refused_requests",
                "sightline_refused_requests_total",
                "Chat lines, renames and team changes refused",
                stats.refused_requests,
            ),
            both(
                "switch_leftovers",
                "sightline_switch_leftovers_total",
                "Datagrams of a role just left (watching or playing), dropped",
                stats.switch_leftovers,
            ),
            both(
                "holds",
                "sightline_held_commands_total",
                "Ticks a player was held waiting for a late command",
                stats.holds,
            ),
            both(
                "catch_ups",
                "sightline_caught_up_commands_total",
                "Commands run as a tick's second, repaying a tick their player was held",
                stats.catch_ups,
            ),
            both(
                "repeats",
                "sightline_repeated_commands_total",
                "Commands not run as sent (repeated over a gap, or skipped)",
                stats.repeats,
            ),
            both(
                "unresolved_inputs",
                "sightline_unresolved_inputs_total",
                "Input packets written against a command no longer held",
                stats.unresolved_inputs,
            ),
            both(
                "late_shots",
                "sightline_late_shots_total",
                "Shots judged at the rewind limit, the shooter's view older than it",
                lagcomp.late,
            ),
            both(
                "refused_shots",
                "sightline_refused_shots_total",
                "Shots refused by lag compensation: view times no honest client could claim",
                lagcomp.refused,
            ),
            status(
                "events_expired",
                "Events given up on before a client acknowledged them",
                snapshots.events_expired,
            ),
            both(
                "held_for_rate",
                "sightline_snapshot_players_held_total",
                "Players' updates held back to keep a client within its rate",
                snapshots.held,
            ),
            both(
                "junk_datagrams",
                "sightline_junk_datagrams_total",
                "Datagrams from unknown addresses that were not connection requests",
                net.junk_datagrams,
            ),
            both(
                "handshakes_refused",
                "sightline_handshakes_refused_total",
                "Connection requests over an address's rate",
                net.handshakes_refused,
            ),
            both(
                "connections_refused",
                "sightline_connections_refused_total",
                "Connections turned away after netcode accepted them",
                net.connections_refused,
            ),
            both(
                "tokens_issued",
                "sightline_tokens_issued_total",
                "Connect tokens handed out",
                net.tokens_issued,
            ),
            both(
                "tokens_refused",
                "sightline_tokens_refused_total",
                "Token requests refused (password, rate, limits)",
                net.tokens_refused,
            ),
            both(
                "token_requests_dropped",
                "sightline_token_requests_dropped_total",
                "Token requests dropped unanswered",
                net.token_requests_dropped,
            ),
            both(
                "stalls",
                "sightline_stalls_total",
                "Times the server stood still for a quarter second or more",
                stalls.count,
            ),
            status(
                "ticks_caught_up",
                "Ticks run late to catch up after the server stood still",
                stalls.ticks_caught_up,
            ),
            both(
                "queries",
                "sightline_queries_total",
                "Server queries (A2S) answered",
                hosting.queries,
            ),
            both(
                "queries_dropped",
                "sightline_queries_dropped_total",
                "Server queries dropped unanswered",
                hosting.queries_dropped_in_all(self.connectionless.as_deref()),
            ),
            both(
                "rcon_wrong",
                "sightline_rcon_wrong_passwords_total",
                "Wrong remote-admin passwords",
                hosting.rcon_wrong,
            ),
            both(
                "rcon_lockouts",
                "sightline_rcon_lockouts_total",
                "Addresses locked out for wrong remote-admin passwords",
                hosting.rcon_lockouts,
            ),
            status(
                "rcon_refused",
                "Remote-admin connections refused or closed for bad packets",
                hosting.rcon_refused,
            ),
            status(
                "ban_lines_skipped",
                "Lines of the ban file skipped at start-up as unreadable",
                hosting.ban_lines_skipped,
            ),
            metric(
                "sightline_ticks_total",
                "Simulation ticks run",
                u64::from(self.tick.0),
            ),
            metric(
                "sightline_sent_bytes_total",
                "Bytes the game socket sent, UDP/IP headers included",
                net.sent_bytes,
            ),
            metric(
                "sightline_received_bytes_total",
                "Bytes the game socket received, UDP/IP headers included",
                net.received_bytes,
            ),
            metric(
                "sightline_sent_datagrams_total",
                "Datagrams the game socket sent",
                net.sent_datagrams,
            ),
            metric(
                "sightline_received_datagrams_total",
                "Datagrams the game socket received",
                net.received_datagrams,
            ),
            metric(
                "sightline_snapshots_total",
                "Snapshots sent",
                snapshots.sent,
            ),
            metric(
                "sightline_snapshots_sliced_total",
                "Snapshots over one datagram, sent in slices",
                snapshots.sliced,
            ),
            metric(
                "sightline_matches_played_total",
                "Matches played to their end",
                u64::from(self.matches.finished),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::ecs::system::RunSystemOnce;

    #[test]
    fn every_counter_has_one_key_and_one_metric_name() {
        let mut world = World::new();
        world.init_resource::<ServerStats>();
        world.init_resource::<HostingStats>();
        world.init_resource::<SnapshotStats>();
        world.init_resource::<NetStats>();
        world.init_resource::<LagCompStats>();
        world.init_resource::<Stalls>();
        world.init_resource::<MatchState>();
        world.init_resource::<Tick>();
        world.resource_mut::<ServerStats>().kicks = 3;
        let all = world
            .run_system_once(|c: Counters| c.all())
            .expect("the counters are read");
        let keys: Vec<&str> = all.iter().filter_map(|c| c.key).collect();
        let metrics: Vec<&str> = all.iter().filter_map(|c| c.metric).collect();
        for names in [&keys, &metrics] {
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{names:?}");
        }
        assert!(all.iter().all(|c| c.key.is_some() || c.metric.is_some()));
        assert!(
            metrics
                .iter()
                .all(|m| m.starts_with("sightline_") && m.ends_with("_total"))
        );
        let kicks = all.iter().find(|c| c.key == Some("kicks")).unwrap();
        assert_eq!(
            (kicks.metric, kicks.value),
            (Some("sightline_kicks_total"), 3)
        );
    }
}
