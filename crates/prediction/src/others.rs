//! The other players, as our prediction expects the server to have them.
//!
//! The server moves our command for tick T against the others where they stand during its
//! tick T: a player with a lower id has already made its tick-T move, one with a higher id
//! still stands where tick T-1 left it. The client knows them only as the newest snapshot
//! showed them, at the tick that ran our command `ack`. So for our command `seq` each is
//! carried forward from the snapshot along its velocity (falling, if airborne) by the
//! ticks between ([`OtherPlayers::tick_of`]: `seq - ack`, fewer while the server repays
//! ticks it held us, running two of our commands a tick), one fewer for those the server
//! moves after us (none for the second command of a tick: everyone has moved by then),
//! and stopped by the map and by us. That is where the server will have them if they keep doing what
//! they were doing; drawn positions (interpolated, in the past by the interpolation delay
//! and half a round trip) would be wrong whenever they move at all.

use bevy::prelude::*;
use sightline_map::CollisionWorld;
use sightline_movement::{Body, MoveParams, MoveWorld, PlayerState};
use sightline_sim::PlayerId;

/// Longest a remote player is carried forward, seconds: past this the guess is worth
/// little, and the snapshot that would correct it is overdue anyway.
pub const MAX_EXTRAPOLATION: f32 = 0.5;

/// Farther than this from us (plus how far it can travel in the time carried), a player
/// cannot touch us or stop one of our rockets near us, and is left out, metres.
const INTERACTION_RANGE: f32 = 8.0;

/// Another living player as the newest snapshot showed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OtherPlayer {
    /// Who it is (a rocket flies through its owner's body).
    pub id: PlayerId,
    /// Its state at the snapshot's tick.
    pub state: PlayerState,
    /// Whether the server moves it before us in a tick (a lower player id).
    pub moves_first: bool,
}

/// The other living players as the newest snapshot showed them, for predicting our
/// movement and rockets against. The client's snapshot handling fills it in.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct OtherPlayers {
    /// Our command the snapshot acknowledged: the states hold at the tick that ran it.
    pub ack: u32,
    /// Ticks the server held us and had not repaid at that tick: our next commands run
    /// two a tick until they are.
    pub owed: u32,
    /// The others, in id order.
    pub players: Vec<OtherPlayer>,
}

impl OtherPlayers {
    /// The server ticks after the acknowledged command's at which our command `seq` runs,
    /// and whether as the second of its tick. The server repays what it owes two commands
    /// a tick, from the next tick on, while the commands are there to run: true after an
    /// outage, when what it held us for comes at once. A command at or before the
    /// acknowledged one counts back one tick a command.
    pub fn tick_of(&self, seq: u32) -> (i64, bool) {
        let n = i64::from(seq) - i64::from(self.ack);
        let paired = 2 * i64::from(self.owed);
        if n <= 0 {
            (n, false)
        } else if n <= paired {
            ((n + 1) / 2, n % 2 == 0)
        } else {
            (n - i64::from(self.owed), false)
        }
    }

    /// Where the server will have the others (those near enough to matter) while it runs
    /// our command `seq`, we standing in `me` before it.
    pub fn at(
        &self,
        seq: u32,
        me: &PlayerState,
        map: &CollisionWorld,
        params: &MoveParams,
        dt: f32,
    ) -> Vec<(PlayerId, PlayerState)> {
        let (ahead, second) = self.tick_of(seq);
        let most = (MAX_EXTRAPOLATION / dt).round() as i64;
        let mine = [Body::of(me, params)];
        self.players
            .iter()
            .filter_map(|other| {
                let moved_after_us = !other.moves_first && !second;
                let ticks = (ahead - i64::from(moved_after_us)).clamp(0, most);
                let t = ticks as f32 * dt;
                let travel = other.state.vel.length() * t + 0.5 * params.gravity * t * t;
                if other.state.pos.distance(me.pos) > INTERACTION_RANGE + travel {
                    return None;
                }
                Some((other.id, carried(&other.state, t, map, &mine, params)))
            })
            .collect()
    }
}

/// `state` carried forward `t` seconds along its velocity (and gravity, when airborne),
/// stopped by the map and by `blockers`.
fn carried(
    state: &PlayerState,
    t: f32,
    map: &CollisionWorld,
    blockers: &[Body],
    params: &MoveParams,
) -> PlayerState {
    if t <= 0.0 {
        return *state;
    }
    let mut motion = state.vel * t;
    if !state.on_ground() {
        motion.y -= 0.5 * params.gravity * t * t;
    }
    let world = MoveWorld {
        map,
        bodies: blockers,
    };
    let height = params.height(state.crouched());
    let free = world.travel(state.pos, params.radius, height, motion);
    PlayerState {
        pos: state.pos + motion * free,
        ..*state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_map::test_support::open_floor;
    use sightline_movement::MoveFlags;

    fn runner(x: f32, vx: f32) -> PlayerState {
        let mut s = PlayerState::at(Vec3::new(x, 0.01, 0.0), 0.0);
        s.vel = Vec3::new(vx, 0.0, 0.0);
        s.flags.set(MoveFlags::ON_GROUND, true);
        s
    }

    #[test]
    fn others_are_carried_to_the_tick_the_server_runs_our_command() {
        let params = MoveParams::default();
        let others = OtherPlayers {
            ack: 10,
            owed: 0,
            players: vec![
                OtherPlayer {
                    id: PlayerId(1),
                    state: runner(-4.0, 2.0),
                    moves_first: true,
                },
                OtherPlayer {
                    id: PlayerId(3),
                    state: runner(4.0, 2.0),
                    moves_first: false,
                },
            ],
        };
        let me = runner(0.0, 0.0);
        let dt = 0.125;
        let at: Vec<_> = others
            .at(14, &me, &open_floor(), &params, dt)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        // Four ticks on for the one moved before us, three for the one moved after.
        assert!(
            (at[0].pos.x - (-4.0 + 2.0 * 4.0 * dt)).abs() < 1e-5,
            "{at:?}"
        );
        assert!(
            (at[1].pos.x - (4.0 + 2.0 * 3.0 * dt)).abs() < 1e-5,
            "{at:?}"
        );
        // The acknowledged command itself sees them where the snapshot had them.
        assert_eq!(
            others.at(10, &me, &open_floor(), &params, dt)[0],
            (PlayerId(1), others.players[0].state)
        );
    }

    #[test]
    fn while_held_ticks_are_owed_our_commands_run_two_a_tick() {
        let owing = |owed| OtherPlayers {
            ack: 100,
            owed,
            players: vec![],
        };
        let ticks = |o: &OtherPlayers| (98..=106).map(|seq| o.tick_of(seq)).collect::<Vec<_>>();
        // Nothing owed: a tick a command, each the first of its tick.
        let plain: Vec<_> = (-2..=6).map(|n| (n, false)).collect();
        assert_eq!(ticks(&owing(0)), plain);
        // Two owed: 101 and 102 in the next tick, 103 and 104 in the one after, then one
        // a tick again, two ticks sooner than without.
        assert_eq!(
            ticks(&owing(2)),
            [
                (-2, false),
                (-1, false),
                (0, false),
                (1, false),
                (1, true),
                (2, false),
                (2, true),
                (3, false),
                (4, false),
            ]
        );
        // The second of a tick sees everyone moved in it, those after us in id order too.
        let params = MoveParams::default();
        let others = OtherPlayers {
            players: vec![OtherPlayer {
                id: PlayerId(3),
                state: runner(2.0, 2.0),
                moves_first: false,
            }],
            ..owing(1)
        };
        let x = |seq| {
            others.at(seq, &runner(0.0, 0.0), &open_floor(), &params, 0.125)[0]
                .1
                .pos
                .x
        };
        assert!(
            (x(101) - 2.0).abs() < 1e-5,
            "first of the tick: not moved yet"
        );
        assert!((x(102) - 2.25).abs() < 1e-5, "second: moved");
        assert!(
            (x(103) - 2.25).abs() < 1e-5,
            "next tick, first: as the second before"
        );
    }

    #[test]
    fn a_carried_player_stops_at_us_and_at_the_open_floor() {
        let params = MoveParams::default();
        let me = runner(0.0, 0.0);
        let mut faller = PlayerState::at(Vec3::new(-3.0, 1.0, 0.0), 0.0);
        faller.vel = Vec3::new(0.0, -5.0, 0.0);
        let others = OtherPlayers {
            ack: 0,
            owed: 0,
            players: vec![
                OtherPlayer {
                    id: PlayerId(1),
                    state: runner(-2.0, 7.0),
                    moves_first: true,
                },
                OtherPlayer {
                    id: PlayerId(2),
                    state: faller,
                    moves_first: true,
                },
            ],
        };
        let at = others.at(40, &me, &open_floor(), &params, 1.0 / 64.0);
        let gap = Body::of(&at[0].1, &params).gap(&Body::of(&me, &params));
        assert!((0.0..0.01).contains(&gap), "ran into us: gap {gap}");
        assert!(at[1].1.pos.y >= 0.0 && at[1].1.pos.y < 0.02, "{:?}", at[1]);
    }

    #[test]
    fn far_players_are_left_out() {
        let params = MoveParams::default();
        let others = OtherPlayers {
            ack: 0,
            owed: 0,
            players: vec![OtherPlayer {
                id: PlayerId(1),
                state: runner(30.0, 0.0),
                moves_first: true,
            }],
        };
        assert!(
            others
                .at(5, &runner(0.0, 0.0), &open_floor(), &params, 0.01)
                .is_empty()
        );
    }
}
