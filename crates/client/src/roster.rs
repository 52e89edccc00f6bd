//! Everyone in the game as the server announces them: joins, leaves and the scoreboard.

use crate::sets::ReceiveStep;
use crate::{ClientStats, FromServer};
use bevy::prelude::*;
use sightline_protocol::{Lifetime, MAX_SNAPSHOT_PLAYERS, ServerMessage};
use sightline_sim::PlayerId;
use sightline_sim::SessionAppExt;
use std::collections::{BTreeMap, VecDeque};

/// A player as the server announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterEntry {
    /// Display name.
    pub name: String,
    /// Whether a bot plays it.
    pub bot: bool,
    /// Round trip to the server, milliseconds, once reported.
    pub ping_ms: Option<u16>,
    /// Kills less suicides.
    pub frags: i32,
    /// Deaths.
    pub deaths: u32,
    /// Team in team games.
    pub team: Option<sightline_combat::Team>,
    /// Enemy flags brought home (capture the flag).
    pub captures: u8,
    /// Kills and deaths over the player's lifetime, where the server keeps statistics.
    pub lifetime: Option<Lifetime>,
}

/// Names of players who left lately, kept so a kill or a line of chat that arrived with
/// the leave still names them.
const RECENTLY_LEFT: usize = 8;

/// Everyone in the game, by id: at most [`MAX_SNAPSHOT_PLAYERS`], as many as a snapshot
/// can describe.
#[derive(Resource, Debug, Default)]
pub struct Roster(
    pub BTreeMap<PlayerId, RosterEntry>,
    VecDeque<(PlayerId, String)>,
);

impl Roster {
    /// Adds or replaces a player; refuses a newcomer when the roster is full, since a
    /// server announcing more players than it can describe is not to be believed.
    pub fn insert(&mut self, id: PlayerId, entry: RosterEntry) -> bool {
        if self.0.len() >= MAX_SNAPSHOT_PLAYERS && !self.0.contains_key(&id) {
            return false;
        }
        self.0.insert(id, entry);
        true
    }

    /// Takes a player out, remembering the name a while.
    pub fn remove(&mut self, id: PlayerId) -> Option<RosterEntry> {
        let entry = self.0.remove(&id)?;
        if self.1.len() >= RECENTLY_LEFT {
            self.1.pop_front();
        }
        self.1.push_back((id, entry.name.clone()));
        Some(entry)
    }

    /// A player's name, or a recent leaver's, or "?".
    pub fn name(&self, id: PlayerId) -> &str {
        self.0.get(&id).map_or_else(
            || {
                self.1
                    .iter()
                    .rev()
                    .find(|(left, _)| *left == id)
                    .map_or("?", |(_, name)| name.as_str())
            },
            |p| p.name.as_str(),
        )
    }
}

/// Joins, leaves and scores.
pub(crate) fn update_roster(
    mut inbound: MessageReader<FromServer>,
    mut roster: ResMut<Roster>,
    mut stats: ResMut<ClientStats>,
) {
    for FromServer(msg) in inbound.read() {
        match msg {
            ServerMessage::PlayerJoined { id, name, bot } => {
                let entry = RosterEntry {
                    name: name.clone(),
                    bot: *bot,
                    ping_ms: None,
                    frags: 0,
                    deaths: 0,
                    captures: 0,
                    team: None,
                    lifetime: None,
                };
                if roster.insert(*id, entry) {
                    info!("{name} joined");
                } else {
                    stats.malformed += 1;
                    debug!("dropped a join beyond {MAX_SNAPSHOT_PLAYERS} players");
                }
            }
            ServerMessage::PlayerRenamed { id, name } => {
                if let Some(p) = roster.0.get_mut(id) {
                    p.name = name.clone();
                }
            }
            ServerMessage::PlayerLeft { id, reason } => {
                if let Some(p) = roster.remove(*id) {
                    info!("{} left ({reason})", p.name);
                }
            }
            ServerMessage::Lifetimes(rows) => {
                for (id, lifetime) in rows {
                    if let Some(p) = roster.0.get_mut(id) {
                        p.lifetime = Some(*lifetime);
                    }
                }
            }
            ServerMessage::Scoreboard(lines) => {
                for line in lines {
                    if let Some(p) = roster.0.get_mut(&line.id) {
                        p.ping_ms = line.ping_ms;
                        p.frags = line.frags;
                        p.deaths = line.deaths;
                        p.team = line.team;
                        p.captures = line.captures;
                    }
                }
            }
            _ => {}
        }
    }
}

/// Who is in the game, from what the server says.
pub(crate) struct RosterPlugin;

impl Plugin for RosterPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Roster>()
            .add_systems(PreUpdate, update_roster.in_set(ReceiveStep::Roster));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> RosterEntry {
        RosterEntry {
            name: name.into(),
            bot: false,
            ping_ms: None,
            frags: 0,
            deaths: 0,
            captures: 0,
            team: None,
            lifetime: None,
        }
    }

    #[test]
    fn the_roster_holds_no_more_players_than_a_snapshot_can_name() {
        let mut roster = Roster::default();
        for id in 0..=u8::MAX {
            let fits = usize::from(id) < MAX_SNAPSHOT_PLAYERS;
            assert_eq!(roster.insert(PlayerId(id), entry("p")), fits, "{id}");
        }
        assert_eq!(roster.0.len(), MAX_SNAPSHOT_PLAYERS);
        // A player already present can still be renamed when the roster is full.
        assert!(roster.insert(PlayerId(0), entry("renamed")));
        assert_eq!(roster.0[&PlayerId(0)].name, "renamed");
        roster.remove(PlayerId(1));
        assert!(roster.insert(PlayerId(200), entry("late")));
    }

    #[test]
    fn a_leaver_is_still_named_for_a_while() {
        let mut roster = Roster::default();
        roster.insert(PlayerId(3), entry("ann"));
        roster.remove(PlayerId(3));
        assert_eq!(roster.name(PlayerId(3)), "ann");
        for id in 10..10 + RECENTLY_LEFT as u8 {
            roster.insert(PlayerId(id), entry("x"));
            roster.remove(PlayerId(id));
        }
        assert_eq!(
            roster.name(PlayerId(3)),
            "?",
            "forgotten after {RECENTLY_LEFT}"
        );
        assert_eq!(roster.1.len(), RECENTLY_LEFT);
    }
}
