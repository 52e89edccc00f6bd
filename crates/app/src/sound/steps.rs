//! Footsteps, jumps and landings from how a player moves: a step every stride while
//! running on the ground (none when crouched or walking slowly), a jump when it leaves the
//! ground pushing off, a landing by how fast it came down, and the surface underfoot from
//! the brush it stands on, as the world draws it.

use crate::scene::materials::{Surface as Look, surface_for};
use bevy::prelude::*;
use sightline_map::{Brush, MapDef};

/// What a surface sounds like underfoot and under fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// Concrete: a dull tap.
    Concrete,
    /// Steel plates, trim and light strips: a ring.
    Metal,
    /// Painted panels and planks: a hollow knock.
    Hollow,
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 3] = [Surface::Concrete, Surface::Metal, Surface::Hollow];

    /// How a brush sounds: by the surface it is drawn with
    /// ([`crate::scene::materials::surface_for`]), so what is heard matches what is seen.
    pub fn of_brush(brush: &Brush) -> Self {
        let (_, half, _) = brush.oriented_box();
        match surface_for(brush.color().0, half) {
            Look::Concrete => Surface::Concrete,
            Look::Metal | Look::Trim | Look::Glow => Surface::Metal,
            Look::Painted => Surface::Hollow,
        }
    }
}

/// How far below the feet the ground is looked for, m.
const GROUND_PROBE: f32 = 0.1;

/// A brush containing `point`, or failing that one within `margin` of it sideways.
pub fn brush_at(map: &MapDef, point: Vec3, margin: f32) -> Option<&Brush> {
    let within = |brush: &&Brush, margin: f32| {
        let (center, half, rotation) = brush.oriented_box();
        let local = rotation.inverse() * (point - center);
        local
            .abs()
            .cmple(half + Vec3::new(margin, 0.0, margin))
            .all()
    };
    map.brushes
        .iter()
        .find(|b| within(b, 0.0))
        .or_else(|| map.brushes.iter().find(|b| within(b, margin)))
}

/// The surface of the brush containing `point` (a shot's impact, nudged into the
/// surface; the ground under feet of a body of `radius`, which may stand over an edge);
/// concrete where nothing is found.
pub fn surface_at(map: &MapDef, point: Vec3, margin: f32) -> Surface {
    brush_at(map, point, margin).map_or(Surface::Concrete, Surface::of_brush)
}

/// The surface under feet at `feet`, for a body of `radius`.
pub fn surface_under(map: &MapDef, feet: Vec3, radius: f32) -> Surface {
    surface_at(map, feet - Vec3::Y * GROUND_PROBE, radius)
}

/// Metres between footsteps.
pub const STRIDE: f32 = 2.0;
/// Below this share of the running speed a player walks silently (as Quake's walk key).
pub const QUIET_SHARE: f32 = 0.55;
/// Slowest fall that makes a landing heard, m/s (a step down a stair is silent).
pub const QUIETEST_LANDING: f32 = 3.0;
/// Fall speed of the loudest landing, m/s.
pub const LOUDEST_LANDING: f32 = 14.0;
/// A move between two frames both this long (m) and this fast (m/s) is a teleport (a
/// respawn), not movement: by distance alone a slow frame's running would be one, and by
/// speed alone a fast frame holding a whole tick's move.
const TELEPORT_DISTANCE: f32 = 3.0;
const TELEPORT_SPEED: f32 = 40.0;

/// How a player moves this frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gait {
    /// Feet position.
    pub pos: Vec3,
    /// Velocity where known (our own, predicted); `None` to measure it from positions
    /// (others, as interpolation draws them).
    pub vel: Option<Vec3>,
    /// On walkable ground.
    pub on_ground: bool,
    /// Crouched.
    pub crouched: bool,
    /// Holding jump: with leaving the ground, a jump rather than a step off a ledge.
    pub jump_held: bool,
}

/// A sound a player's feet make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Footfall {
    /// A footstep, loudness 0..=1 by speed.
    Step(f32),
    /// Pushing off for a jump.
    Jump,
    /// Coming down, loudness 0..=1 by fall speed.
    Land(f32),
}

/// Follows one player's movement frame by frame and says when its feet make a sound.
#[derive(Component, Debug, Default, Clone)]
pub struct Feet {
    /// The previous frame's position, on the ground or not.
    last: Option<(Vec3, bool)>,
    /// Metres covered towards the next step.
    travelled: f32,
    /// Fastest downward speed since leaving the ground, m/s.
    falling: f32,
    /// Vertical speed measured last frame, for players whose velocity is not known.
    measured_vy: f32,
    /// The jump pad the feet were in last frame, by index.
    pad: Option<usize>,
}

impl Feet {
    /// Takes this frame's movement, `dt` seconds after the last; returns what the feet
    /// did, if anything.
    pub fn update(&mut self, gait: Gait, dt: f32, run_speed: f32) -> Option<Footfall> {
        let (last_pos, was_on_ground) = self.last.replace((gait.pos, gait.on_ground))?;
        if dt <= 0.0 {
            return None;
        }
        let moved = gait.pos - last_pos;
        let jumped = moved.length() > TELEPORT_DISTANCE && moved.length() / dt > TELEPORT_SPEED;
        if !moved.is_finite() || jumped {
            // A respawn: start afresh where the player now is.
            *self = Self {
                last: Some((gait.pos, gait.on_ground)),
                ..default()
            };
            return None;
        }
        let vel = gait.vel.unwrap_or(moved / dt);
        let vy = if gait.vel.is_some() {
            vel.y
        } else {
            // Measured from positions the landing frame shows no fall: keep the last one.
            let vy = self.measured_vy;
            self.measured_vy = moved.y / dt;
            if gait.on_ground { vy } else { self.measured_vy }
        };
        match (was_on_ground, gait.on_ground) {
            (true, false) => {
                self.falling = 0.0;
                self.travelled = 0.0;
                (gait.jump_held || vel.y > 1.0).then_some(Footfall::Jump)
            }
            (false, false) => {
                self.falling = self.falling.max(-vy);
                None
            }
            (false, true) => {
                let fall = self.falling.max(-vy);
                self.falling = 0.0;
                // The next step comes a stride after the landing.
                self.travelled = 0.0;
                landing_loudness(fall).map(Footfall::Land)
            }
            (true, true) => {
                let speed = Vec2::new(vel.x, vel.z).length();
                self.step(speed, moved.xz().length(), gait.crouched, run_speed)
            }
        }
    }

    /// On the ground: a step each [`STRIDE`] covered fast enough, standing up.
    fn step(
        &mut self,
        speed: f32,
        distance: f32,
        crouched: bool,
        run_speed: f32,
    ) -> Option<Footfall> {
        let loudness = step_loudness(speed, crouched, run_speed)?;
        self.travelled += distance;
        if self.travelled < STRIDE {
            return None;
        }
        self.travelled %= STRIDE;
        Some(Footfall::Step(loudness))
    }
}

impl Feet {
    /// Notes the jump pad the feet are in now (by index, from [`pad_under`]); returns it
    /// when they have just stepped into it: the moment it launches them.
    pub fn step_on_pad(&mut self, pad: Option<usize>) -> Option<usize> {
        let before = std::mem::replace(&mut self.pad, pad);
        pad.filter(|_| pad != before)
    }
}

/// The jump pad holding feet at `feet`, by index in the map's list.
pub fn pad_under(map: &MapDef, feet: Vec3) -> Option<usize> {
    map.jump_pads.iter().position(|pad| pad.holds(feet))
}

/// How loud a step is at `speed`, or `None` when silent: crouched, or slower than
/// [`QUIET_SHARE`] of the running speed.
pub fn step_loudness(speed: f32, crouched: bool, run_speed: f32) -> Option<f32> {
    let quiet = run_speed * QUIET_SHARE;
    if crouched || speed.is_nan() || speed < quiet {
        return None;
    }
    Some((0.6 + 0.4 * (speed - quiet) / (run_speed - quiet).max(0.1)).min(1.0))
}

/// How loud a landing after falling at `fall` m/s is, or `None` below
/// [`QUIETEST_LANDING`].
pub fn landing_loudness(fall: f32) -> Option<f32> {
    (fall >= QUIETEST_LANDING).then(|| {
        (0.3 + 0.7 * (fall - QUIETEST_LANDING) / (LOUDEST_LANDING - QUIETEST_LANDING)).min(1.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: f32 = 7.0;
    const DT: f32 = 1.0 / 60.0;

    fn ground(pos: Vec3, vel: Vec3, crouched: bool) -> Gait {
        Gait {
            pos,
            vel: Some(vel),
            on_ground: true,
            crouched,
            jump_held: false,
        }
    }

    /// Steps taken running along X at `speed` for `seconds`.
    fn steps_at(speed: f32, crouched: bool, seconds: f32) -> Vec<f32> {
        let mut feet = Feet::default();
        let vel = Vec3::X * speed;
        let frames = (seconds / DT) as usize;
        (0..=frames)
            .filter_map(|i| {
                let pos = vel * i as f32 * DT;
                match feet.update(ground(pos, vel, crouched), DT, RUN) {
                    Some(Footfall::Step(l)) => Some(l),
                    Some(other) => panic!("{other:?} while running"),
                    None => None,
                }
            })
            .collect()
    }

    #[test]
    fn footsteps_follow_the_running_speed() {
        // Full speed: 7 m/s over 4 s is 28 m, 14 strides.
        let fast = steps_at(RUN, false, 4.0);
        assert!((13..=14).contains(&fast.len()), "{}", fast.len());
        assert!(fast.iter().all(|&l| l == 1.0));
        // Just above the quiet speed: fewer, softer steps.
        let slower = steps_at(RUN * 0.6, false, 4.0);
        assert!((7..=9).contains(&slower.len()), "{}", slower.len());
        assert!(slower.iter().all(|&l| (0.6..0.8).contains(&l)));
    }

    #[test]
    fn slow_frames_still_step() {
        // Two frames a second: 3.5 m a frame is running, not a teleport.
        let mut feet = Feet::default();
        let vel = Vec3::X * RUN;
        let steps = (0..=8)
            .filter(|&i| {
                let pos = vel * i as f32 * 0.5;
                feet.update(ground(pos, vel, false), 0.5, RUN).is_some()
            })
            .count();
        assert_eq!(steps, 8, "one a frame: a frame's 3.5 m holds one stride");
    }

    #[test]
    fn crouching_and_walking_slowly_are_silent() {
        assert!(steps_at(RUN * 0.45, true, 4.0).is_empty(), "crouch-walking");
        assert!(steps_at(RUN, true, 4.0).is_empty(), "crouched at any speed");
        assert!(steps_at(RUN * 0.5, false, 4.0).is_empty(), "walking slowly");
        assert!(steps_at(0.0, false, 4.0).is_empty(), "standing");
        assert_eq!(step_loudness(f32::NAN, false, RUN), None);
    }

    #[test]
    fn jumps_and_landings_are_heard_by_how_hard_they_are() {
        let mut feet = Feet::default();
        let run = Vec3::X * RUN;
        assert_eq!(feet.update(ground(Vec3::ZERO, run, false), DT, RUN), None);
        let air = |pos, vy, jump_held| Gait {
            pos,
            vel: Some(Vec3::new(RUN, vy, 0.0)),
            on_ground: false,
            crouched: false,
            jump_held,
        };
        assert_eq!(
            feet.update(air(Vec3::new(0.1, 0.1, 0.0), 6.5, true), DT, RUN),
            Some(Footfall::Jump)
        );
        assert_eq!(
            feet.update(air(Vec3::new(0.2, 0.2, 0.0), 3.0, false), DT, RUN),
            None
        );
        assert_eq!(
            feet.update(air(Vec3::new(0.3, 0.1, 0.0), -6.5, false), DT, RUN),
            None
        );
        match feet.update(ground(Vec3::new(0.4, 0.0, 0.0), run, false), DT, RUN) {
            Some(Footfall::Land(l)) => assert!((0.4..0.7).contains(&l), "{l}"),
            other => panic!("no landing: {other:?}"),
        }
        // Walking off a ledge is no jump; a small drop lands silently.
        assert_eq!(
            feet.update(air(Vec3::new(0.5, -0.01, 0.0), -0.5, false), DT, RUN),
            None
        );
        assert_eq!(
            feet.update(ground(Vec3::new(0.6, -0.3, 0.0), run, false), DT, RUN),
            None
        );
        assert_eq!(landing_loudness(LOUDEST_LANDING * 3.0), Some(1.0));
    }

    #[test]
    fn others_are_measured_from_where_they_are_drawn() {
        let mut feet = Feet::default();
        let drawn = |pos, on_ground, jump_held| Gait {
            pos,
            vel: None,
            on_ground,
            crouched: false,
            jump_held,
        };
        let mut steps = 0;
        let mut pos = Vec3::ZERO;
        for _ in 0..120 {
            pos.x += RUN * DT;
            steps += usize::from(feet.update(drawn(pos, true, false), DT, RUN).is_some());
        }
        assert_eq!(
            steps, 6,
            "13.9 m once the first frame has placed them: six strides"
        );
        // A jump and its fall, then the landing by the speed seen before touching down.
        assert_eq!(
            feet.update(drawn(pos + Vec3::Y * 0.1, false, true), DT, RUN),
            Some(Footfall::Jump)
        );
        let mut y = 0.1;
        for _ in 0..30 {
            y -= 0.12;
            assert_eq!(
                feet.update(drawn(pos + Vec3::Y * y, false, false), DT, RUN),
                None
            );
        }
        // Down on a lower floor, having fallen at 7.2 m/s.
        match feet.update(drawn(pos + Vec3::Y * (y - 0.12), true, false), DT, RUN) {
            Some(Footfall::Land(l)) => assert!((0.5..0.7).contains(&l), "{l}"),
            other => panic!("no landing: {other:?}"),
        }
        // A respawn across the map is no movement.
        let far = pos + Vec3::new(40.0, 0.0, 0.0);
        assert_eq!(feet.update(drawn(far, true, false), DT, RUN), None);
        assert_eq!(feet.update(drawn(far, true, false), DT, RUN), None);
    }

    #[test]
    fn a_jump_pad_is_heard_once_as_it_is_stepped_on() {
        let mut feet = Feet::default();
        let launches: Vec<_> = [None, Some(2), Some(2), None, Some(2), Some(0), None]
            .into_iter()
            .map(|pad| feet.step_on_pad(pad))
            .collect();
        assert_eq!(
            launches,
            [None, Some(2), None, None, Some(2), Some(0), None]
        );
        let path = sightline_map::find_map_by_name("spire").expect("the spire map");
        let map = sightline_map::MapSource::load(&path)
            .expect("spire loads")
            .def;
        let pad = map.jump_pads.first().expect("spire has jump pads");
        assert_eq!(pad_under(&map, (pad.min + pad.max) * 0.5), Some(0));
        assert_eq!(pad_under(&map, pad.max + Vec3::ONE), None);
    }

    #[test]
    fn surfaces_come_from_the_brush_underfoot() {
        let path = sightline_map::find_map_by_name("depot").expect("the depot map");
        let map = sightline_map::MapSource::load(&path)
            .expect("depot loads")
            .def;
        // The yard's floor, a crate's top, the mezzanine's painted deck, a crate's edge.
        assert_eq!(
            surface_under(&map, Vec3::new(10.0, 0.0, 0.0), 0.4),
            Surface::Concrete
        );
        assert_eq!(
            surface_under(&map, Vec3::new(-15.0, 1.0, 8.0), 0.4),
            Surface::Metal
        );
        assert_eq!(
            surface_under(&map, Vec3::new(0.0, 3.0, -26.0), 0.4),
            Surface::Hollow
        );
        assert_eq!(
            surface_under(&map, Vec3::new(-14.0, 1.0, 8.0), 0.4),
            Surface::Metal,
            "over the crate's edge by less than the body's radius"
        );
        assert_eq!(
            surface_under(&map, Vec3::new(0.0, 50.0, 0.0), 0.4),
            Surface::Concrete
        );
        // Halfway down the steel ramp from the mezzanine.
        assert_eq!(
            surface_under(&map, Vec3::new(23.4, 1.5, -26.0), 0.4),
            Surface::Metal
        );
    }
}
