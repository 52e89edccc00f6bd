//! What the relay counts: one table, from which the struct, the status line and the
//! Prometheus text are all made. Nothing is logged per packet; everything is counted.

use std::sync::atomic::{AtomicU64, Ordering};

/// One number the relay keeps.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets a gauge.
    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// Its value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Datagrams and their bytes, one way.
#[derive(Debug, Default)]
pub struct Traffic {
    /// Datagrams.
    pub datagrams: Counter,
    /// Their payloads' bytes.
    pub bytes: Counter,
}

impl Traffic {
    /// Counts `n` datagrams of `bytes` in all.
    pub fn add(&self, n: u64, bytes: usize) {
        self.datagrams.add(n);
        self.bytes.add(bytes as u64);
    }
}

macro_rules! counters {
    (
        gauges { $($g:ident: $ghelp:literal,)* }
        counters { $($c:ident: $chelp:literal,)* }
        traffic { $($t:ident: $thelp:literal,)* }
    ) => {
        /// Everything the relay counts.
        #[derive(Debug, Default)]
        pub struct Counters {
            $(#[doc = $ghelp] pub $g: Counter,)*
            $(#[doc = $chelp] pub $c: Counter,)*
            $(#[doc = $thelp] pub $t: Traffic,)*
        }

        impl Counters {
            /// Every series: its name, help, Prometheus type and value.
            pub fn rows(&self) -> Vec<(String, &'static str, &'static str, u64)> {
                let mut rows = Vec::new();
                $(rows.push((format!("sightline_relay_{}", stringify!($g)), $ghelp, "gauge", self.$g.get()));)*
                $(rows.push((format!("sightline_relay_{}_total", stringify!($c)), $chelp, "counter", self.$c.get()));)*
                $(
                    rows.push((format!("sightline_relay_{}_datagrams_total", stringify!($t)), $thelp, "counter", self.$t.datagrams.get()));
                    rows.push((format!("sightline_relay_{}_bytes_total", stringify!($t)), $thelp, "counter", self.$t.bytes.get()));
                )*
                rows
            }
        }
    };
}

counters! {
    gauges {
        games_open: "Games open now.",
    }
    counters {
        games_allocated: "Games allocated.",
        games_refused: "Registrations refused (relay full, too many from one host or network, no port).",
        games_expired: "Games closed because their host fell silent.",
        games_closed: "Games their host closed.",
        cookies_sent: "Cookies sent to hosts proving their address.",
        asking_refused: "Answers to unproven askers left out past their allowance.",
        unknown_session: "Host messages or attaches naming no game, or with a wrong secret.",
        hosts_moved: "Host messages from a new address with the right secret (a router changed the port).",
        malformed: "Datagrams and stream headers that were not relay messages.",
        flood_dropped: "Players' datagrams dropped past their host's or network's packet rate.",
        over_budget: "Datagrams dropped past their game's bytes a second.",
        unsolicited_dropped: "Host datagrams to addresses that had not spoken to the game, past their allowance.",
        streams_opened: "TCP streams that came to a game's port and were offered to its host.",
        streams_refused: "TCP streams refused past a game's, a host's or the relay's count.",
        streams_joined: "TCP streams joined to their host.",
        streams_unattached: "TCP streams closed because their host never attached.",
        probes_sent: "Reachability probes sent.",
        probes_refused: "Probes refused past the asker's allowance.",
        send_errors: "Datagrams the system would not send.",
        receive_errors: "Errors receiving.",
    }
    traffic {
        to_hosts: "Players' datagrams forwarded to hosts (payload bytes for _bytes).",
        to_players: "Hosts' datagrams forwarded to players (payload bytes for _bytes).",
    }
}

impl Counters {
    /// The counters in Prometheus's text format.
    pub fn prometheus_text(&self) -> String {
        let mut out = String::new();
        for (name, help, kind, value) in self.rows() {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        }
        out
    }

    /// One line for a log: the non-zero series, short names.
    pub fn status_line(&self) -> String {
        self.rows()
            .into_iter()
            .filter(|row| row.3 != 0)
            .map(|(name, _, _, value)| {
                let short = name.trim_start_matches("sightline_relay_");
                format!("{}={value}", short.trim_end_matches("_total"))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_one_prometheus_series_with_its_help_and_type() {
        let c = Counters::default();
        c.games_open.set(3);
        c.to_hosts.add(2, 300);
        c.malformed.add(1);
        let text = c.prometheus_text();
        assert!(
            text.contains(
                "# TYPE sightline_relay_games_open gauge\nsightline_relay_games_open 3\n"
            )
        );
        assert!(text.contains("sightline_relay_to_hosts_bytes_total 300\n"));
        assert!(text.contains("# TYPE sightline_relay_malformed_total counter\n"));
        let names: Vec<String> = c.rows().into_iter().map(|r| r.0).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len());
        assert_eq!(
            c.status_line(),
            "games_open=3 malformed=1 to_hosts_datagrams=2 to_hosts_bytes=300"
        );
    }
}
