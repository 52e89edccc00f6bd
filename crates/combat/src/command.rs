//! One player's own part of a tick for one command, written once: the move, then the
//! weapon from where the move ended (Quake 3's `PmoveSingle` is the model). The server's
//! tick, its catch-up's second command and the client's prediction all call
//! [`player_command`], so none of them can run a command's parts in another order.
//!
//! What is the world's and not the player's stays out: rockets flying, bursts pushing,
//! pick-ups, and the grid every tick ends on ([`sightline_movement::on_grid`]), which comes
//! after bursts have pushed (snapping before them too would change the bits).

use crate::{Arsenal, ProjectileKind, Rocket, Shot, launch_rocket, step_arsenal};
use sightline_movement::{MoveParams, MoveWorld, PlayerState, moved_by_bodies, step_among};
use sightline_sim::{InputCmd, PlayerId};

/// What a command's shot does to projectiles, the part of a shot the player's own client
/// predicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProjectileAct {
    /// Nothing.
    #[default]
    None,
    /// Launched one of this kind.
    Launch(ProjectileKind),
    /// Burst the newest in flight (the rocket launcher's alternate fire).
    Detonate,
}

impl ProjectileAct {
    /// What `shot` does to projectiles.
    pub fn of(shot: Option<Shot>) -> Self {
        match shot {
            Some(s) if s.detonates() => Self::Detonate,
            Some(s) => s.projectile().map_or(Self::None, Self::Launch),
            None => Self::None,
        }
    }

    /// The projectile launched, numbered `id`, by `owner` whose command `cmd` left it in
    /// `state`; `None` unless this act launches one.
    pub fn launched(
        self,
        id: u16,
        owner: PlayerId,
        state: &PlayerState,
        cmd: &InputCmd,
        params: &MoveParams,
    ) -> Option<Rocket> {
        match self {
            Self::Launch(kind) => Some(launch_rocket(id, kind, owner, state, cmd, params)),
            Self::None | Self::Detonate => None,
        }
    }
}

/// What one command did to its player.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerCommand {
    /// Where the move left the player: not yet on the grid, as this tick's bursts may
    /// still push it.
    pub state: PlayerState,
    /// Whether another player's body changed the move.
    pub contact: bool,
    /// What the weapon fired, aimed from [`Self::state`].
    pub shot: Option<Shot>,
}

impl PlayerCommand {
    /// What the shot does to projectiles.
    pub fn act(&self) -> ProjectileAct {
        ProjectileAct::of(self.shot)
    }
}

/// Runs `cmd` on a player in `state`: the move through `world` (the map and the bodies
/// about the player), then one step of the weapons in `arsenal`. `None` for a player whose
/// weapons wait: the dead, or a prediction replay, which takes each command's shot from
/// when it was first predicted (see `sightline_prediction`'s weapon check).
pub fn player_command(
    state: &PlayerState,
    cmd: &InputCmd,
    arsenal: Option<&mut Arsenal>,
    world: &MoveWorld,
    params: &MoveParams,
    dt: f32,
) -> PlayerCommand {
    let moved = step_among(state, cmd, world, params, dt);
    let contact = moved_by_bodies(state, cmd, world, &moved, params, dt);
    let shot = arsenal.and_then(|a| step_arsenal(a, cmd, dt));
    PlayerCommand {
        state: moved,
        contact,
        shot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ammo, WeaponKind};
    use bevy::math::Vec3;
    use sightline_map::test_support::open_floor;
    use sightline_movement::Body;
    use sightline_sim::Buttons;

    const DT: f32 = 1.0 / 128.0;

    fn firing(seq: u32) -> InputCmd {
        InputCmd {
            seq,
            forward: 1.0,
            buttons: Buttons::FIRE,
            ..Default::default()
        }
    }

    #[test]
    fn the_weapon_fires_from_where_the_move_ended() {
        let (map, params) = (open_floor(), MoveParams::default());
        let world = MoveWorld {
            map: &map,
            bodies: &[],
        };
        let start = PlayerState::at(Vec3::ZERO, 0.0);
        let launcher = WeaponKind::Rockets;
        let mut arsenal = Arsenal {
            current: launcher,
            owned: launcher.bit(),
            ..Arsenal::spawned()
        };
        arsenal.ammo[launcher.index()] = Ammo {
            magazine: 1,
            reserve: 0,
        };
        let cmd = firing(1);
        let out = player_command(&start, &cmd, Some(&mut arsenal), &world, &params, DT);
        assert_eq!(out.state, step_among(&start, &cmd, &world, &params, DT));
        assert_ne!(out.state.pos, start.pos, "it moved");
        assert_eq!(out.act(), ProjectileAct::Launch(ProjectileKind::Rocket));
        let rocket = out
            .act()
            .launched(9, PlayerId(3), &out.state, &cmd, &params)
            .expect("a rocket");
        assert_eq!(
            rocket,
            launch_rocket(
                9,
                ProjectileKind::Rocket,
                PlayerId(3),
                &out.state,
                &cmd,
                &params
            )
        );
        assert!(!out.contact);
    }

    #[test]
    fn weapons_that_wait_fire_nothing_and_a_body_in_the_way_is_a_contact() {
        let (map, params) = (open_floor(), MoveParams::default());
        // Someone a metre ahead (north, -Z) of a player running at them.
        let ahead = [Body::of(
            &PlayerState::at(Vec3::new(0.0, 0.0, -0.9), 0.0),
            &params,
        )];
        let world = MoveWorld {
            map: &map,
            bodies: &ahead,
        };
        let mut state = PlayerState::at(Vec3::ZERO, 0.0);
        let mut contact = false;
        for seq in 1..=64 {
            let out = player_command(&state, &firing(seq), None, &world, &params, DT);
            assert_eq!(out.shot, None);
            contact |= out.contact;
            state = out.state;
        }
        assert!(contact, "stopped by the body: {state:?}");
        assert!(state.pos.z > -0.9, "{state:?}");
    }
}
