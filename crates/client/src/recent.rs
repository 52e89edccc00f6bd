//! The last few seconds of the world as the server sent it, kept so they can be shown
//! again: the killcam replays the moments before our death from our killer's eyes. Each
//! snapshot's players and projectiles are kept by server time; a [`Clip`] cut from them
//! is sampled at any moment of its span. The record is kept only where it is wanted (the
//! game inserts [`RecentWorld`]); headless clients and bots do not pay for it.

use bevy::prelude::*;
use sightline_combat::ProjectileKind;
use sightline_interpolation::between;
use sightline_movement::PlayerState;
use sightline_protocol::{PlayerSnap, ProjectileSnap, Snapshot};
use sightline_sim::PlayerId;
use std::collections::{BTreeMap, VecDeque};

/// Seconds of the world kept behind the newest snapshot: a killcam's clip and the
/// interpolation delay (the kill is shown that much after its snapshot came), with room.
pub const RECENT_SECONDS: f64 = 3.0;
/// Most snapshots kept, whatever their times: [`RECENT_SECONDS`] at the fastest tick rate.
/// Times come from the server; this bounds what a stream of distinct stamps can hold.
pub const MAX_RECENT: usize = 3 * sightline_sim::MAX_TICK_HZ as usize;
/// Longest a player or projectile may be missing from the snapshots (held back for our
/// rate, or a snapshot lost) and still be drawn moving between the two it is in; past
/// it, it is not drawn in the gap.
pub const MAX_GAP: f64 = 0.3;

/// One snapshot's world: who was where, and what was flying.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    /// Server time, seconds.
    time: f64,
    /// The players sent in full (not held back), by id.
    players: Vec<PlayerSnap>,
    /// The projectiles in flight.
    projectiles: Vec<ProjectileSnap>,
}

/// The recent world, oldest first. The snapshot handling fills it in when it exists.
#[derive(Resource, Debug, Default, Clone)]
pub struct RecentWorld {
    frames: VecDeque<Frame>,
}

impl RecentWorld {
    /// Keeps `snapshot`'s world at its server time. A time already held, or one not
    /// finite, is ignored; snapshots arriving out of order take their place in time.
    pub fn record(&mut self, snapshot: &Snapshot) {
        let time = snapshot.server_time_us as f64 / 1e6;
        let at = self.frames.partition_point(|f| f.time < time);
        if !time.is_finite() || self.frames.get(at).is_some_and(|f| f.time == time) {
            return;
        }
        let players = snapshot
            .players
            .iter()
            .filter(|p| snapshot.held.binary_search(&p.id).is_err())
            .copied()
            .collect();
        let frame = Frame {
            time,
            players,
            projectiles: snapshot.projectiles.clone(),
        };
        self.frames.insert(at, frame);
        let newest = self.frames.back().map_or(time, |f| f.time);
        while self
            .frames
            .front()
            .is_some_and(|f| f.time < newest - RECENT_SECONDS)
            || self.frames.len() > MAX_RECENT
        {
            self.frames.pop_front();
        }
    }

    /// How many snapshots are kept.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// When player `id` last died: the server time of the first snapshot that has them
    /// dead after one that had them alive. `None` when no such change is kept.
    pub fn death_of(&self, id: PlayerId) -> Option<f64> {
        let health = |f: &Frame| {
            f.players
                .binary_search_by_key(&id, |p| p.id)
                .ok()
                .map(|i| f.players[i].health)
        };
        let mut alive = false;
        let mut death = None;
        for frame in &self.frames {
            match health(frame) {
                Some(0) if alive => {
                    death = Some(frame.time);
                    alive = false;
                }
                Some(0) | None => {}
                Some(_) => alive = true,
            }
        }
        death
    }

    /// The kept world from `from` to `to` (server seconds), with the snapshot before
    /// `from` so the clip can be sampled from its start.
    pub fn clip(&self, from: f64, to: f64) -> Clip {
        let first = self.frames.partition_point(|f| f.time <= from).max(1) - 1;
        let mut clip = Clip {
            from,
            to,
            ..Clip::default()
        };
        for frame in self.frames.iter().skip(first).take_while(|f| f.time <= to) {
            for p in &frame.players {
                clip.players.entry(p.id).or_default().push((frame.time, *p));
            }
            for p in &frame.projectiles {
                clip.projectiles
                    .entry(p.id)
                    .or_default()
                    .push((frame.time, *p));
            }
        }
        clip
    }
}

/// A player as a clip shows them at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipPose {
    /// Where they stood and looked, between the snapshots around the moment (as the live
    /// world is drawn, [`between`]).
    pub state: PlayerState,
    /// Health, 0 dead (from the nearer snapshot before the moment).
    pub health: u8,
    /// The weapon in hand.
    pub weapon: sightline_combat::WeaponKind,
    /// Power-ups and weapons held ([`PlayerSnap::kit`]).
    pub kit: u8,
}

/// A stretch of the recent world, each player's and projectile's states in time order.
#[derive(Debug, Clone, Default)]
pub struct Clip {
    /// Where it starts, server seconds.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
    players: BTreeMap<PlayerId, Vec<(f64, PlayerSnap)>>,
    projectiles: BTreeMap<u16, Vec<(f64, ProjectileSnap)>>,
}

/// The entries of `track` around `t`: the last at or before it, and the next when it
/// follows within [`MAX_GAP`], with how far `t` is from the one to the other (0 to 1);
/// `None` before the first, and past the last by more than the gap (gone from the
/// snapshots).
fn around<T>(track: &[(f64, T)], t: f64) -> Option<(&(f64, T), Option<(&(f64, T), f32)>)> {
    let next = track.partition_point(|(time, _)| *time <= t);
    let a = track.get(next.checked_sub(1)?)?;
    let b = track.get(next).filter(|b| b.0 - a.0 <= MAX_GAP);
    if b.is_none() && t - a.0 > MAX_GAP {
        return None;
    }
    Some((
        a,
        b.map(|b| (b, ((t - a.0) / (b.0 - a.0)).clamp(0.0, 1.0) as f32)),
    ))
}

impl Clip {
    /// The players seen anywhere in the clip.
    pub fn players(&self) -> impl Iterator<Item = PlayerId> + '_ {
        self.players.keys().copied()
    }

    /// When player `id` is first in the clip.
    pub fn first_seen(&self, id: PlayerId) -> Option<f64> {
        self.players.get(&id)?.first().map(|(t, _)| *t)
    }

    /// Player `id` at server time `t`: between the snapshots around it (never across a
    /// respawn), or held at the last one; `None` where the clip does not have them.
    pub fn pose(&self, id: PlayerId, t: f64) -> Option<ClipPose> {
        let (a, b) = around(self.players.get(&id)?, t)?;
        let sa = &a.1;
        let state = match b.filter(|((_, sb), _)| sb.spawn_count == sa.spawn_count) {
            Some(((_, sb), f)) => between(&sa.state(), &sb.state(), f),
            None => sa.state(),
        };
        Some(ClipPose {
            state,
            health: sa.health,
            weapon: sa.weapon,
            kit: sa.kit,
        })
    }

    /// The projectiles in flight at server time `t`, where they were then.
    pub fn projectiles(&self, t: f64) -> Vec<(u16, ProjectileKind, Vec3)> {
        self.projectiles
            .iter()
            .filter_map(|(id, track)| {
                let (a, b) = around(track, t)?;
                let from = Vec3::from_array(a.1.pos);
                let pos = match b {
                    Some(((_, pb), f)) => from.lerp(Vec3::from_array(pb.pos), f),
                    // Past its last snapshot it has burst (or left our view): not drawn.
                    None if t > a.0 => return None,
                    None => from,
                };
                Some((*id, a.1.kind, pos))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player(id: u8, x: f32, health: u8, spawn: u8) -> PlayerSnap {
        let state = PlayerState::at(Vec3::new(x, 0.0, 0.0), 0.0);
        PlayerSnap {
            health,
            spawn_count: spawn,
            ..PlayerSnap::new(PlayerId(id), &state)
        }
    }

    fn snapshot(time: f64, players: Vec<PlayerSnap>) -> Snapshot {
        Snapshot {
            server_time_us: (time * 1e6) as u64,
            players,
            ..Snapshot::default()
        }
    }

    /// Player 1 runs along x at 10 m/s; player 2 stands, dies at 1.0 s.
    fn world(until: f64) -> RecentWorld {
        let mut world = RecentWorld::default();
        let mut t = 0.0;
        while t <= until + 1e-9 {
            let health = if t >= 1.0 { 0 } else { 100 };
            world.record(&snapshot(
                t,
                vec![
                    player(1, t as f32 * 10.0, 100, 0),
                    player(2, 5.0, health, 0),
                ],
            ));
            t += 0.05;
        }
        world
    }

    #[test]
    fn a_clip_draws_players_between_snapshots_and_finds_the_death() {
        let world = world(2.0);
        let death = world.death_of(PlayerId(2)).unwrap();
        assert!((death - 1.0).abs() < 1e-6, "{death}");
        assert_eq!(world.death_of(PlayerId(1)), None);
        let clip = world.clip(death - 0.5, death);
        let runner = clip.pose(PlayerId(1), 0.725).unwrap();
        assert!((runner.state.pos.x - 7.25).abs() < 0.02, "{runner:?}");
        assert_eq!(clip.pose(PlayerId(2), 0.9).unwrap().health, 100);
        assert_eq!(clip.pose(PlayerId(2), 1.0).unwrap().health, 0);
        assert_eq!(
            clip.players().collect::<Vec<_>>(),
            [PlayerId(1), PlayerId(2)]
        );
        // From the snapshot at or before the clip's start.
        assert!((clip.first_seen(PlayerId(1)).unwrap() - 0.5).abs() < 1e-6);
        // Sampled from the clip's start, through the snapshot before it.
        assert!(clip.pose(PlayerId(1), death - 0.5).is_some());
    }

    #[test]
    fn the_record_keeps_a_few_seconds_and_takes_late_snapshots_in_order() {
        let mut world = world(10.0);
        assert!(world.len() <= (RECENT_SECONDS / 0.05) as usize + 2);
        assert_eq!(world.death_of(PlayerId(2)), None, "the death is forgotten");
        let before = world.len();
        // A late snapshot between two kept ones, and a duplicate.
        world.record(&snapshot(9.925, vec![player(1, 0.0, 100, 0)]));
        world.record(&snapshot(9.925, vec![player(1, 50.0, 100, 0)]));
        assert_eq!(world.len(), before + 1);
        let clip = world.clip(9.9, 9.95);
        assert!(clip.pose(PlayerId(1), 9.925).unwrap().state.pos.x.abs() < 1e-3);
        // Far-future stamps cannot grow it.
        for i in 0..(2 * MAX_RECENT) {
            world.record(&snapshot(1e6 + i as f64 * 1e-5, vec![]));
        }
        assert!(world.len() <= MAX_RECENT);
    }

    #[test]
    fn a_player_is_not_drawn_across_a_respawn_or_long_after_leaving() {
        let mut world = RecentWorld::default();
        world.record(&snapshot(0.0, vec![player(1, 0.0, 100, 0)]));
        world.record(&snapshot(0.1, vec![player(1, 40.0, 100, 1)]));
        world.record(&snapshot(0.2, vec![]));
        let clip = world.clip(0.0, 1.0);
        // Held where it was until the new life's snapshot, then there.
        assert_eq!(clip.pose(PlayerId(1), 0.05).unwrap().state.pos.x, 0.0);
        assert_eq!(clip.pose(PlayerId(1), 0.1).unwrap().state.pos.x, 40.0);
        // Missing since 0.1: still held within the gap, gone after it.
        assert!(clip.pose(PlayerId(1), 0.1 + MAX_GAP * 0.9).is_some());
        assert!(clip.pose(PlayerId(1), 0.1 + MAX_GAP * 1.1).is_none());
        assert!(clip.pose(PlayerId(1), -0.1).is_none(), "before it was seen");
        assert!(clip.pose(PlayerId(7), 0.05).is_none());
    }

    #[test]
    fn projectiles_fly_between_snapshots_and_go_when_they_burst() {
        let rocket = |x: f32| ProjectileSnap {
            id: 4,
            kind: ProjectileKind::Rocket,
            owner: PlayerId(1),
            pos: [x, 1.0, 0.0],
            vel: [20.0, 0.0, 0.0],
        };
        let mut world = RecentWorld::default();
        for (i, x) in [0.0, 2.0, 4.0].into_iter().enumerate() {
            let mut s = snapshot(i as f64 * 0.1, vec![]);
            s.projectiles = vec![rocket(x)];
            world.record(&s);
        }
        world.record(&snapshot(0.3, vec![]));
        let clip = world.clip(0.0, 0.3);
        let at = clip.projectiles(0.15);
        assert_eq!(at.len(), 1);
        assert!((at[0].2.x - 3.0).abs() < 1e-4, "{at:?}");
        assert_eq!(clip.projectiles(0.2).len(), 1, "at its last snapshot");
        assert!(clip.projectiles(0.25).is_empty(), "burst after it");
    }
}
