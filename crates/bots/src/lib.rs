//! Bots as a pure function: [`decide`] maps (own state, what the bot senses, its seed,
//! the tick) to an input command, so bots drive the real movement code exactly as a
//! player would, and the same bot replays identically anywhere. Randomness is a hash of
//! (seed, tick window, purpose), never a stateful generator. What a bot senses includes
//! the next spot of its route: routes come from a [`NavGraph`] built from the map, to
//! the places [`goals()`] ranks.

mod goals;
mod nav;

pub use goals::{
    FlagRole, FlagWhere, FlagsSeen, HURT, ItemSeen, Needs, flag_goal, flag_role, goals,
};
pub use nav::{Itinerary, LinkKind, MAX_NODES, NavGraph, Waypoint};

use bevy::math::Vec3;
use sightline_combat::{Arsenal, WeaponKind};
use sightline_map::CollisionWorld;
use sightline_movement::{MoveParams, PlayerState, view_vectors};
use sightline_sim::{Buttons, InputCmd};
use std::f32::consts::PI;

/// How far a bot looks for walls, m.
pub const SIGHT: f32 = 4.0;
/// Turning speed, radians per second.
pub const TURN_RATE: f32 = 4.0;
/// Ticks are grouped into windows of this many seconds; each window gets fresh choices.
pub const WINDOW_SECONDS: f32 = 1.5;

/// How well a bot fights. With the `clap` feature it is a command-line value
/// (`easy`, `normal`, `hard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BotSkill {
    /// Slow to turn, slow to react, wide of the mark.
    Easy,
    /// A fair opponent.
    #[default]
    Normal,
    /// Quick and accurate.
    Hard,
}

impl BotSkill {
    /// Seconds an enemy must have been in view before the bot reacts to it.
    pub fn reaction(self) -> f32 {
        match self {
            Self::Easy => 0.5,
            Self::Normal => 0.3,
            Self::Hard => 0.15,
        }
    }

    /// (turn rate rad/s, aim error degrees, firing cone degrees).
    fn aim(self) -> (f32, f32, f32) {
        match self {
            Self::Easy => (3.0, 6.0, 8.0),
            Self::Normal => (6.0, 3.0, 5.0),
            Self::Hard => (10.0, 1.2, 3.0),
        }
    }
}

/// What a bot perceives of the world around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BotSense {
    /// Free distance straight ahead, at knee and chest height (the smaller), up to [`SIGHT`].
    pub ahead: f32,
    /// Free distance 45 degrees to the left.
    pub left: f32,
    /// Free distance 45 degrees to the right.
    pub right: f32,
    /// From the bot's eye to the chest of the enemy it has in view and has reacted to.
    pub enemy: Option<Vec3>,
    /// How well it fights.
    pub skill: BotSkill,
    /// The next spot on its route, if it is going somewhere.
    pub waypoint: Option<Waypoint>,
    /// Its health.
    pub health: f32,
    /// The weapons it holds ([`WeaponKind::bit`]s).
    pub owned: u8,
}

/// Looks around a player with rays against the map.
pub fn sense(world: &CollisionWorld, state: &PlayerState, params: &MoveParams) -> BotSense {
    let look = |yaw_offset: f32| {
        let (forward, _) = view_vectors(state.yaw + yaw_offset);
        [0.5, 1.3]
            .into_iter()
            .map(|h| {
                let origin = state.pos + Vec3::Y * h;
                world
                    .cast_ray(origin, forward, SIGHT)
                    .map_or(SIGHT, |(d, _)| d)
            })
            .fold(SIGHT, f32::min)
            - params.radius
    };
    BotSense {
        ahead: look(0.0),
        left: look(PI / 4.0),
        right: look(-PI / 4.0),
        enemy: None,
        skill: BotSkill::Normal,
        waypoint: None,
        health: 100.0,
        owned: Arsenal::spawned().owned,
    }
}

pub use sightline_sim::hash::hash;
use sightline_sim::hash::unit;

/// What to do this tick. `seq` and `client_tick` of the result are left at 0 for the
/// caller to stamp.
pub fn decide(
    state: &PlayerState,
    sense: &BotSense,
    seed: u64,
    tick: u32,
    tick_hz: u32,
) -> InputCmd {
    let dt = 1.0 / tick_hz as f32;
    let window_ticks = ((WINDOW_SECONDS * tick_hz as f32) as u32).max(1);
    let window = (tick / window_ticks) as u64;
    let first_tick_of_window = tick.is_multiple_of(window_ticks);
    if let Some(to) = sense.enemy {
        return fight(state, to, sense, seed, tick, tick_hz, window);
    }
    if let Some(waypoint) = sense.waypoint {
        return follow(state, waypoint, sense, dt);
    }

    // Steer: away from walls first, otherwise toward this window's wander heading.
    let wander = (unit(hash(seed, window, 1)) - 0.5) * 1.5;
    let desired_turn = if sense.ahead < 1.5 {
        if sense.left >= sense.right {
            PI / 2.0
        } else {
            -PI / 2.0
        }
    } else if sense.left < 0.8 {
        -0.6
    } else if sense.right < 0.8 {
        0.6
    } else {
        wander
    };
    let max_turn = TURN_RATE * dt;
    let yaw = sightline_sim::wrap_angle(state.yaw + desired_turn.clamp(-max_turn, max_turn));

    // Mostly run forward, sometimes strafe or back-pedal a little, sometimes crouch.
    let style = hash(seed, window, 2) % 8;
    let (forward, right) = match style {
        0 => (1.0, 1.0),
        1 => (1.0, -1.0),
        2 => (0.0, 1.0),
        3 => (-0.5, 0.0),
        _ => (1.0, 0.0),
    };
    let mut buttons = Buttons::default();
    if first_tick_of_window && hash(seed, window, 3).is_multiple_of(3) {
        buttons = buttons.with(Buttons::JUMP);
    }
    if hash(seed, window, 4).is_multiple_of(10) {
        buttons = buttons.with(Buttons::CROUCH);
    }
    InputCmd {
        seq: 0,
        client_tick: 0,
        forward,
        right,
        yaw,
        pitch: 0.0,
        buttons,
        weapon_slot: 0,
        ..Default::default()
    }
}

/// How close (horizontally, m) a bot must come to a jump's landing before it jumps.
const JUMP_FROM: f32 = 1.6;

/// Runs along a route: turns toward the next spot, runs when facing it, and jumps where
/// the route jumps up (a pad throws it by itself).
fn follow(state: &PlayerState, waypoint: Waypoint, sense: &BotSense, dt: f32) -> InputCmd {
    let to = waypoint.pos - state.pos;
    let want_yaw = libm::atan2f(-to.x, -to.z);
    let max_turn = 2.0 * TURN_RATE * dt;
    let dyaw = sightline_sim::wrap_angle(want_yaw - state.yaw);
    let yaw = sightline_sim::wrap_angle(state.yaw + dyaw.clamp(-max_turn, max_turn));
    let facing = dyaw.abs() < 1.0;
    let flat = Vec3::new(to.x, 0.0, to.z).length();
    let mut buttons = Buttons::default();
    // A jump up onto the next spot, or over something in the way.
    let blocked = sense.ahead < 0.4 && facing;
    if (waypoint.kind == LinkKind::Jump && flat < JUMP_FROM) || blocked {
        buttons = buttons.with(Buttons::JUMP);
    }
    InputCmd {
        forward: if facing { 1.0 } else { 0.3 },
        yaw,
        buttons,
        ..Default::default()
    }
}

/// The weapon slot a bot of `skill` holding `owned` takes at `distance`: the shotgun up
/// close; rockets (or plasma) at middle range for those who use splash; the railgun far
/// off if it has one; otherwise the rifle.
pub fn weapon_for(distance: f32, owned: u8, skill: BotSkill) -> u8 {
    let has = |w: WeaponKind| owned & w.bit() != 0;
    let pick = if distance < 6.0 {
        WeaponKind::Shotgun
    } else if skill == BotSkill::Easy {
        WeaponKind::Rifle
    } else if distance < 18.0 {
        if skill == BotSkill::Hard && has(WeaponKind::Plasma) {
            WeaponKind::Plasma
        } else {
            WeaponKind::Rockets
        }
    } else if distance > 22.0 && has(WeaponKind::Railgun) {
        WeaponKind::Railgun
    } else {
        WeaponKind::Rifle
    };
    if has(pick) { pick.def().slot } else { 1 }
}

/// Turns toward the enemy (with a skill-dependent, slowly wandering aim error), fires when
/// on target, strafes, and keeps a middling distance with the weapon for it
/// ([`weapon_for`]). A rocket is aimed at the feet, for its splash. A skilled bot jumps
/// in a fight and backs off when hurt.
fn fight(
    state: &PlayerState,
    to: Vec3,
    sense: &BotSense,
    seed: u64,
    tick: u32,
    tick_hz: u32,
    window: u64,
) -> InputCmd {
    let skill = sense.skill;
    let dt = 1.0 / tick_hz as f32;
    let (turn_rate, error_deg, cone_deg) = skill.aim();
    let distance = to.length();
    let slot = weapon_for(distance, sense.owned, skill);
    // The enemy's chest is `to`; its feet are about a metre below.
    let to = if slot == WeaponKind::Rockets.def().slot {
        to - Vec3::Y * 0.95
    } else {
        to
    };
    let want_yaw = libm::atan2f(-to.x, -to.z);
    let want_pitch = libm::asinf((to.y / distance.max(1e-3)).clamp(-1.0, 1.0));
    // The error drifts every 0.3 s, so aim settles and then wanders, as a hand does.
    let drift = (tick as f32 * dt / 0.3) as u64;
    let err = error_deg.to_radians();
    let err_yaw = (unit(hash(seed, drift, 5)) - 0.5) * 2.0 * err;
    let err_pitch = (unit(hash(seed, drift, 6)) - 0.5) * err;
    let max_turn = turn_rate * dt;
    let dyaw = sightline_sim::wrap_angle(want_yaw + err_yaw - state.yaw);
    let yaw = sightline_sim::wrap_angle(state.yaw + dyaw.clamp(-max_turn, max_turn));
    let pitch = state.pitch + (want_pitch + err_pitch - state.pitch).clamp(-max_turn, max_turn);
    let off = sightline_sim::wrap_angle(want_yaw - yaw)
        .abs()
        .max((want_pitch - pitch).abs());
    let mut buttons = Buttons::default();
    if off < cone_deg.to_radians() {
        buttons = buttons.with(Buttons::FIRE);
    }
    let retreat = skill != BotSkill::Easy && sense.health < HURT * 0.7;
    let forward = if retreat || distance < 5.0 {
        -1.0
    } else if distance > 14.0 {
        1.0
    } else {
        0.0
    };
    // Jumps in a fight: a hard bot every 0.6 s or so, a normal one now and then.
    let hop_ticks = ((0.6 * tick_hz as f32) as u32).max(1);
    let hop = tick.is_multiple_of(hop_ticks)
        && match skill {
            BotSkill::Easy => false,
            BotSkill::Normal => hash(seed, u64::from(tick / hop_ticks), 8).is_multiple_of(4),
            BotSkill::Hard => !hash(seed, u64::from(tick / hop_ticks), 8).is_multiple_of(3),
        };
    if hop {
        buttons = buttons.with(Buttons::JUMP);
    }
    let right = if hash(seed, window, 7).is_multiple_of(2) {
        1.0
    } else {
        -1.0
    };
    InputCmd {
        forward,
        right,
        yaw,
        pitch,
        buttons,
        weapon_slot: slot,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::Quat;
    use sightline_map::test_support::floor_box;
    use sightline_movement::step;

    fn arena() -> CollisionWorld {
        let wall = |c: Vec3, h: Vec3| (c, h, Quat::IDENTITY);
        CollisionWorld::from_boxes([
            floor_box(10.0),
            wall(Vec3::new(10.5, 2.0, 0.0), Vec3::new(0.5, 2.0, 10.0)),
            wall(Vec3::new(-10.5, 2.0, 0.0), Vec3::new(0.5, 2.0, 10.0)),
            wall(Vec3::new(0.0, 2.0, 10.5), Vec3::new(10.0, 2.0, 0.5)),
            wall(Vec3::new(0.0, 2.0, -10.5), Vec3::new(10.0, 2.0, 0.5)),
        ])
    }

    fn run_bot(seed: u64, ticks: u32) -> Vec<PlayerState> {
        let world = arena();
        let params = MoveParams::default();
        let mut s = PlayerState::at(Vec3::ZERO, 0.0);
        let mut out = vec![];
        for tick in 0..ticks {
            let seen = sense(&world, &s, &params);
            let cmd = decide(&s, &seen, seed, tick, 64).sanitized().unwrap();
            s = step(&s, &cmd, &world, &params, 1.0 / 64.0);
            out.push(s);
        }
        out
    }

    #[test]
    fn decide_is_a_pure_function() {
        let s = PlayerState::at(Vec3::new(1.0, 0.0, 2.0), 0.4);
        let seen = BotSense {
            ahead: 3.0,
            left: 2.0,
            right: 1.0,
            enemy: None,
            skill: BotSkill::Normal,
            waypoint: None,
            health: 100.0,
            owned: Arsenal::spawned().owned,
        };
        assert_eq!(
            decide(&s, &seen, 7, 100, 128),
            decide(&s, &seen, 7, 100, 128)
        );
        let a: Vec<_> = run_bot(3, 300).iter().map(|s| s.to_bits()).collect();
        let b: Vec<_> = run_bot(3, 300).iter().map(|s| s.to_bits()).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn bots_roam_jump_and_turn_without_leaving_the_arena() {
        let states = run_bot(11, 64 * 30);
        let spread = states
            .iter()
            .map(|s| s.pos.distance(Vec3::ZERO))
            .fold(0.0, f32::max);
        assert!(spread > 4.0, "bot stayed near its spawn ({spread} m)");
        assert!(
            states
                .iter()
                .all(|s| s.pos.x.abs() < 10.0 && s.pos.z.abs() < 10.0)
        );
        assert!(states.iter().any(|s| s.pos.y > 0.5), "never jumped");
        let yaws: Vec<f32> = states.iter().map(|s| s.yaw).collect();
        let turned = yaws
            .windows(2)
            .filter(|w| (w[1] - w[0]).abs() > 1e-4)
            .count();
        assert!(turned > 100, "bot barely turned");
    }

    #[test]
    fn different_seeds_take_different_paths() {
        let a = run_bot(1, 640).last().unwrap().pos;
        let b = run_bot(2, 640).last().unwrap().pos;
        assert!(a.distance(b) > 0.5);
    }

    #[test]
    fn a_wall_ahead_makes_the_bot_turn_toward_space() {
        let s = PlayerState::at(Vec3::ZERO, 0.0);
        let left_open = BotSense {
            ahead: 0.5,
            left: 3.0,
            right: 0.4,
            enemy: None,
            skill: BotSkill::Normal,
            waypoint: None,
            health: 100.0,
            owned: Arsenal::spawned().owned,
        };
        assert!(decide(&s, &left_open, 1, 5, 64).yaw > 0.0);
        let right_open = BotSense {
            ahead: 0.5,
            left: 0.4,
            right: 3.0,
            enemy: None,
            skill: BotSkill::Normal,
            waypoint: None,
            health: 100.0,
            owned: Arsenal::spawned().owned,
        };
        assert!(decide(&s, &right_open, 1, 5, 64).yaw < 0.0);
    }
}

#[cfg(test)]
mod fighting {
    use super::*;

    fn sees(enemy: Vec3, skill: BotSkill) -> BotSense {
        BotSense {
            ahead: SIGHT,
            left: SIGHT,
            right: SIGHT,
            enemy: Some(enemy),
            skill,
            waypoint: None,
            health: 100.0,
            owned: Arsenal::spawned().owned,
        }
    }

    /// Turns a bot toward an enemy to its right for a second; returns how many ticks it fired.
    fn engage(skill: BotSkill) -> (PlayerState, usize) {
        let mut s = PlayerState::at(Vec3::ZERO, 0.0);
        let enemy = Vec3::new(10.0, 0.0, 0.0);
        let mut fired = 0;
        for tick in 0..128 {
            let cmd = decide(&s, &sees(enemy - s.pos, skill), 9, tick, 128);
            s.yaw = cmd.yaw;
            s.pitch = cmd.pitch;
            fired += usize::from(cmd.buttons.contains(Buttons::FIRE));
        }
        (s, fired)
    }

    #[test]
    fn bots_turn_onto_a_visible_enemy_and_fire() {
        for skill in [BotSkill::Easy, BotSkill::Normal, BotSkill::Hard] {
            let (s, fired) = engage(skill);
            let want = -std::f32::consts::FRAC_PI_2; // facing +X
            let off = sightline_sim::wrap_angle(s.yaw - want).abs();
            assert!(off < 0.15, "{skill:?} ended {off} rad off");
            assert!(fired > 20, "{skill:?} fired only {fired} times");
        }
    }

    #[test]
    fn better_bots_get_on_target_sooner() {
        let first_shot = |skill| {
            let mut s = PlayerState::at(Vec3::ZERO, 0.0);
            (0..256)
                .position(|tick| {
                    let cmd = decide(&s, &sees(Vec3::new(0.0, 0.0, 10.0), skill), 3, tick, 128);
                    s.yaw = cmd.yaw;
                    s.pitch = cmd.pitch;
                    cmd.buttons.contains(Buttons::FIRE)
                })
                .unwrap_or(256)
        };
        assert!(first_shot(BotSkill::Hard) < first_shot(BotSkill::Normal));
        assert!(first_shot(BotSkill::Normal) < first_shot(BotSkill::Easy));
    }
}
