//! One predicted tick of our own player: everything the server does to it in a tick that
//! the client can know, in the server's order.

use crate::{OtherPlayers, Touched};
use bevy::prelude::*;
use sightline_combat::{
    Arsenal, Hitbox, ProjectileAct, Rocket, Shot, detonate_newest, fly_rocket, player_command,
    rocket_splash,
};
use sightline_map::CollisionWorld;
use sightline_movement::{Body, MoveParams, MoveWorld, PlayerState, bodies_near, on_grid};
use sightline_sim::{InputCmd, PlayerId};

/// What a predicted tick runs in besides the player.
#[derive(Clone, Copy)]
pub struct TickWorld<'a> {
    /// The map.
    pub map: &'a CollisionWorld,
    /// Movement tuning.
    pub params: &'a MoveParams,
    /// Seconds per tick.
    pub dt: f32,
    /// The other players as last seen.
    pub others: &'a OtherPlayers,
    /// Who we are (the owner of our rockets).
    pub me: PlayerId,
}

/// Where a predicted command's shot comes from.
#[derive(Debug)]
pub enum Weapons<'a> {
    /// Our weapons, stepped by the command as the server's tick steps them.
    Step(&'a mut Arsenal),
    /// What the command's shot did when it was first predicted: a replay moves us again,
    /// while our weapons are checked against the server's apart ([`crate::check_weapons`]).
    Replayed(ProjectileAct),
}

impl From<ProjectileAct> for Weapons<'_> {
    fn from(act: ProjectileAct) -> Self {
        Self::Replayed(act)
    }
}

/// What a predicted tick did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredictedTick {
    /// Where it left us, on the grid.
    pub state: PlayerState,
    /// What touched us besides our command.
    pub touched: Touched,
    /// What our shot did to projectiles.
    pub act: ProjectileAct,
    /// What our weapons fired ([`Weapons::Step`] only).
    pub shot: Option<Shot>,
}

/// Runs our command `cmd` on our player in `state` as the server will: our part of the
/// tick by the server's own [`player_command`] (the move against the map and the other
/// players where the server should have them, [`OtherPlayers::at`]; then our weapons),
/// then what the server's combat does after: a projectile launched by this command from
/// where the move ended, or our newest detonated, and one tick of flight for each rocket
/// in `rockets` (ours, and others' known from the snapshots), against the map and every
/// body but its owner's, a burst pushing us by the same [`rocket_splash`] the server
/// applies; no flight for the second command of a server tick
/// ([`OtherPlayers::tick_of`]), which runs after the tick's. Rockets fired since the newest
/// snapshot by others are not known: their pushes arrive as corrections. Last, the state
/// goes on the grid, as the server's tick leaves it ([`sightline_movement::grid`]).
pub fn predict_tick<'w>(
    world: &TickWorld,
    state: &PlayerState,
    cmd: &InputCmd,
    weapons: impl Into<Weapons<'w>>,
    rockets: &mut Vec<Rocket>,
) -> PredictedTick {
    let TickWorld {
        map, params, dt, ..
    } = *world;
    let others = world.others.at(cmd.seq, state, map, params, dt);
    let bodies = bodies_near(
        state,
        params,
        dt,
        others.iter().map(|(_, o)| Body::of(o, params)),
    );
    let moving = MoveWorld {
        map,
        bodies: &bodies,
    };
    let (arsenal, replayed) = match weapons.into() {
        Weapons::Step(arsenal) => (Some(arsenal), None),
        Weapons::Replayed(act) => (None, Some(act)),
    };
    let ours = player_command(state, cmd, arsenal, &moving, params, dt);
    let act = replayed.unwrap_or_else(|| ours.act());
    let mut s = ours.state;
    // As the server tells a contact.
    let mut touched = Touched {
        contact: ours.contact,
        ..default()
    };
    let done = |state: PlayerState, touched: Touched| PredictedTick {
        // What the server's tick leaves is on the grid; so is what we predict it leaves.
        state: on_grid(&state),
        touched,
        act,
        shot: ours.shot,
    };

    if act == ProjectileAct::Detonate {
        detonate_newest(rockets.iter_mut(), world.me);
    }
    rockets.extend(act.launched(0, world.me, &s, cmd, params));
    // The second command of a server tick (one repaying a held tick) moves and fires
    // after the tick's rockets flew: they fly on with the next.
    if world.others.tick_of(cmd.seq).1 {
        return done(s, touched);
    }
    // Every body but the owner's, as the server's rockets fly after everyone has moved.
    let me = (world.me, Hitbox::of(&s));
    let bodies: Vec<(PlayerId, Hitbox)> = others
        .iter()
        .map(|(id, o)| (*id, Hitbox::of(o)))
        .chain([me])
        .collect();
    rockets.retain_mut(|rocket| {
        let owner = rocket.owner;
        let targets = bodies
            .iter()
            .filter(|(id, _)| *id != owner)
            .map(|(_, h)| *h);
        let Some(at) = fly_rocket(rocket, map, targets, params, dt) else {
            return true;
        };
        if let Some((_, push)) = rocket_splash(rocket.kind, at, &s, map, params) {
            s.vel += push;
            if owner == world.me {
                touched.own = true;
            } else {
                touched.others = true;
            }
        }
        false
    });
    done(s, touched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OtherPlayer;
    use sightline_combat::ProjectileKind;
    use sightline_map::test_support::open_floor;

    /// A rocket of `owner`'s at chest height `x` metres east of the origin, flying west.
    fn rocket(owner: PlayerId, x: f32) -> Rocket {
        Rocket {
            id: 7,
            kind: ProjectileKind::Rocket,
            owner,
            pos: Vec3::new(x, 1.0, 0.0),
            vel: Vec3::new(-28.0, 0.0, 0.0),
            age: 0.0,
            detonate: false,
        }
        .on_grid()
    }

    /// Us, player 1, at 128 Hz on `map` among `others`.
    fn floor_world<'a>(
        map: &'a CollisionWorld,
        params: &'a MoveParams,
        others: &'a OtherPlayers,
    ) -> TickWorld<'a> {
        TickWorld {
            map,
            params,
            dt: 1.0 / 128.0,
            others,
            me: PlayerId(1),
        }
    }

    /// Predicts us from the origin on the open floor at 128 Hz, running `forward`, among
    /// `others` and `rockets`, for at most `ticks` commands or until `stop` holds for
    /// what has touched us; what touched us in all, where we ended, and whether `stop`
    /// held.
    fn predict_from_origin(
        others: &OtherPlayers,
        forward: f32,
        ticks: u32,
        rockets: &mut Vec<Rocket>,
        stop: impl Fn(Touched) -> bool,
    ) -> (Touched, PlayerState, bool) {
        let (map, params) = (open_floor(), MoveParams::default());
        let world = floor_world(&map, &params, others);
        let mut me = PlayerState::at(Vec3::ZERO, 0.0);
        let mut touched = Touched::default();
        for seq in 1..=ticks {
            let cmd = InputCmd {
                seq,
                forward,
                ..default()
            };
            let PredictedTick {
                state: after,
                touched: t,
                ..
            } = predict_tick(&world, &me, &cmd, ProjectileAct::None, rockets);
            (me, touched) = (after, touched.or(t));
            if stop(touched) {
                return (touched, me, true);
            }
        }
        (touched, me, false)
    }

    /// Ticks `rockets` flying at us standing at the origin, with `others` about, until a
    /// burst; whose it was and how it left us.
    fn until_burst(rockets: &mut Vec<Rocket>, others: &OtherPlayers) -> (Touched, PlayerState) {
        let (touched, me, burst) =
            predict_from_origin(others, 0.0, 127, rockets, |t| t.own || t.others);
        assert!(burst, "no burst reached us: {rockets:?}");
        (touched, me)
    }

    #[test]
    fn anothers_rocket_bursts_on_us_and_passes_through_its_owner() {
        // Its owner stands between it and us: the rocket flies through them, as the
        // server's leaves its owner out, and bursts on us.
        let owner = OtherPlayers {
            ack: 0,
            owed: 0,
            players: vec![OtherPlayer {
                id: PlayerId(2),
                state: PlayerState::at(Vec3::new(2.0, 0.0, 0.0), 0.0),
                moves_first: false,
            }],
        };
        let mut rockets = vec![rocket(PlayerId(2), 6.0)];
        let (touched, me) = until_burst(&mut rockets, &owner);
        assert_eq!(
            touched,
            Touched {
                others: true,
                ..default()
            }
        );
        assert!(rockets.is_empty());
        assert!(me.vel.x < -1.0, "thrown west: {me:?}");

        // Someone else's body in the way stops it short of us: a burst there still
        // reaches us, weaker.
        let mut blocked = vec![rocket(PlayerId(3), 6.0)];
        let (_, shielded) = until_burst(&mut blocked, &owner);
        assert!(
            shielded.vel.x > me.vel.x && shielded.vel.x < 0.0,
            "{shielded:?} against {me:?}"
        );
    }

    #[test]
    fn the_second_command_of_a_tick_flies_no_rocket() {
        // One tick owed at the acknowledged command 0: commands 1 and 2 share a tick.
        let others = OtherPlayers {
            ack: 0,
            owed: 1,
            players: vec![],
        };
        let (map, params) = (open_floor(), MoveParams::default());
        let world = floor_world(&map, &params, &others);
        let mut rockets = vec![rocket(PlayerId(1), 30.0)];
        let me = PlayerState::at(Vec3::ZERO, 0.0);
        let mut xs = vec![rockets[0].pos.x];
        for seq in 1..=3 {
            let cmd = InputCmd { seq, ..default() };
            predict_tick(&world, &me, &cmd, ProjectileAct::None, &mut rockets);
            xs.push(rockets[0].pos.x);
        }
        assert!(xs[1] < xs[0], "the tick's first flies it: {xs:?}");
        assert_eq!(xs[2], xs[1], "its second does not");
        assert!(xs[3] < xs[2], "the next tick's does: {xs:?}");
    }

    #[test]
    fn a_body_in_our_way_is_a_predicted_contact() {
        // Someone standing a metre ahead of us (north, -Z), and us running at them.
        let ahead = |z: f32| OtherPlayers {
            ack: 0,
            owed: 0,
            players: vec![OtherPlayer {
                id: PlayerId(2),
                state: PlayerState::at(Vec3::new(0.0, 0.0, z), 0.0),
                moves_first: true,
            }],
        };
        let run = |others: &OtherPlayers| {
            let (touched, me, _) = predict_from_origin(others, 1.0, 63, &mut vec![], |_| false);
            (touched, me)
        };
        let (touched, me) = run(&ahead(-1.0));
        assert!(
            touched.contact && !touched.own && !touched.others,
            "{touched:?}"
        );
        assert!(me.pos.z > -1.0, "stopped short of them: {me:?}");
        let (touched, me) = run(&ahead(-30.0));
        assert_eq!(touched, Touched::default(), "nobody in the way");
        assert!(me.pos.z < -1.0, "{me:?}");
    }
}
