//! The movement step, split the way `bg_pmove.c` is: one small function per rule.

use crate::bodies::{Contact, MoveWorld};
use crate::{MoveFlags, MoveParams, PlayerState};
use bevy::math::Vec3;
use sightline_map::{CollisionWorld, SKIN};
use sightline_sim::{Buttons, InputCmd};

/// How far below the feet the ground is looked for, m.
const GROUND_PROBE: f32 = 0.05;
/// Slide iterations per move; four planes are enough for any corner of boxes.
const MAX_BUMPS: usize = 4;
/// Most contact planes remembered in one slide.
const MAX_PLANES: usize = 5;
/// Height at which a grounded player's capsule rests above the ground, m.
const REST_GAP: f32 = 2.0 * SKIN;
/// Speed away from the ground plane above which a player is airborne, m/s.
const LEAVE_GROUND_SPEED: f32 = 0.25;
/// How far past an edge contact the surface is sampled, m.
const EDGE_REACH: f32 = 0.02;
/// Clip a little more than needed so the next cast does not start on the plane.
const OVERCLIP: f32 = 1.001;

/// Unit vectors pointing forward and right on the ground plane for a view yaw.
/// Yaw 0 looks down -Z; positive yaw turns left (counter-clockwise seen from above).
pub fn view_vectors(yaw: f32) -> (Vec3, Vec3) {
    let (s, c) = (libm::sinf(yaw), libm::cosf(yaw));
    (Vec3::new(-s, 0.0, -c), Vec3::new(c, 0.0, -s))
}

/// Advances one player by one command over `dt` seconds, alone on the map: [`step_among`]
/// with no other players.
pub fn step(
    state: &PlayerState,
    cmd: &InputCmd,
    world: &CollisionWorld,
    params: &MoveParams,
    dt: f32,
) -> PlayerState {
    step_among(state, cmd, &MoveWorld::map(world), params, dt)
}

/// Whether the other players' bodies in `world` changed `moved`, the move [`step_among`]
/// made of `cmd` from `state`: the same command without them goes elsewhere. The server
/// counts these as contacts ([`crate::Contacts`]), and prediction tells its own the same
/// way.
pub fn moved_by_bodies(
    state: &PlayerState,
    cmd: &InputCmd,
    world: &MoveWorld,
    moved: &PlayerState,
    params: &MoveParams,
    dt: f32,
) -> bool {
    // Only near another body is the move worth taking again without it.
    !world.bodies.is_empty() && *moved != step(state, cmd, world.map, params, dt)
}

/// Advances one player by one command over `dt` seconds, blocked by the map and by the
/// other players' capsules in `world` (which stand still while this one moves).
///
/// Pure: the result depends only on the arguments, so server and client agree bit for bit
/// when given the same ones. `cmd` must already have passed [`InputCmd::sanitized`].
pub fn step_among(
    state: &PlayerState,
    cmd: &InputCmd,
    world: &MoveWorld,
    params: &MoveParams,
    dt: f32,
) -> PlayerState {
    let mut s = *state;
    s.yaw = cmd.yaw;
    s.pitch = cmd.pitch;

    check_crouch(&mut s, cmd, world, params);
    let mut ground = ground_trace(&s, world, params).map(|(n, _)| n);
    if check_jump_pad(&mut s, world) || check_jump(&mut s, cmd, ground.is_some(), params) {
        ground = None;
    }

    let was_on_ground = ground.is_some();
    match ground {
        Some(normal) => walk_move(&mut s, cmd, normal, world, params, dt),
        None => air_move(&mut s, cmd, world, params, dt),
    }

    let mut landed = ground_trace(&s, world, params).map(|(normal, gap)| {
        // Rest a fixed gap above the ground: close enough to look grounded, far enough
        // that sideways casts do not report the floor as an obstacle.
        s.pos.y -= gap + SKIN - REST_GAP;
        normal
    });
    if landed.is_none() && was_on_ground && s.vel.y <= 0.0 {
        landed = snap_to_ground(&mut s, world, params);
    }
    s.flags.set(MoveFlags::ON_GROUND, landed.is_some());
    if let Some(normal) = landed
        && s.vel.dot(normal) < 0.0
    {
        s.vel = clip(s.vel, normal);
    }
    s
}

/// Crouch when asked; stand up only when the standing hull fits.
fn check_crouch(s: &mut PlayerState, cmd: &InputCmd, world: &MoveWorld, p: &MoveParams) {
    if cmd.buttons.contains(Buttons::CROUCH) {
        s.flags.set(MoveFlags::CROUCHED, true);
    } else if s.crouched() && !world.capsule_overlaps(s.pos, p.radius, p.stand_height) {
        s.flags.set(MoveFlags::CROUCHED, false);
    }
}

/// Looks just below the feet for walkable ground; returns its normal and the distance
/// down to it.
fn ground_trace(s: &PlayerState, world: &MoveWorld, p: &MoveParams) -> Option<(Vec3, f32)> {
    let height = p.height(s.crouched());
    let hit = world.cast_capsule(s.pos, p.radius, height, Vec3::NEG_Y * GROUND_PROBE)?;
    let normal = walkable(world, &hit, p)?;
    // Moving up and away from the ground (a jump, a ramp launch) is not standing on it.
    if s.vel.y > 0.0 && s.vel.dot(normal) > LEAVE_GROUND_SPEED {
        return None;
    }
    Some((normal, GROUND_PROBE * hit.fraction))
}

/// The walkable surface a downward contact rests on, if any, and its exact normal.
///
/// The contact normal of a shape cast is approximate, and where a capsule rests on the
/// edge of a step its rounded bottom makes the normal lean sideways although the step's
/// top is flat. So the surface is sampled with a short ray straight down just beyond the
/// contact: a walkable face there is ground (a Quake box would stand on that edge too);
/// a steep face is a slope to slide off. Another player's capsule is exact and round: its
/// top is ground within 45 degrees of the crown, so players stand on heads as in Quake 3
/// and slide off shoulders.
fn walkable(world: &MoveWorld, hit: &Contact, p: &MoveParams) -> Option<Vec3> {
    if hit.normal.y <= 0.0 {
        return None;
    }
    if hit.body {
        return (hit.normal.y >= p.min_ground_normal_y).then_some(hit.normal);
    }
    let away = Vec3::new(-hit.normal.x, 0.0, -hit.normal.z).normalize_or_zero();
    let origin = hit.point + away * EDGE_REACH + Vec3::Y * EDGE_REACH * 2.5;
    match world.map.cast_ray(origin, Vec3::NEG_Y, EDGE_REACH * 5.0) {
        Some((_, face)) => (face.y >= p.min_ground_normal_y).then_some(face),
        None => (hit.normal.y >= p.min_ground_normal_y).then_some(hit.normal),
    }
}

/// Starts a jump on a fresh press while on the ground. Holding jump does not repeat it.
/// A jump pad under the feet throws the player: its launch velocity replaces theirs.
fn check_jump_pad(s: &mut PlayerState, world: &MoveWorld) -> bool {
    let Some(launch) = world.map.pad_at(s.pos) else {
        return false;
    };
    s.vel = launch;
    s.flags.set(MoveFlags::ON_GROUND, false);
    true
}

fn check_jump(s: &mut PlayerState, cmd: &InputCmd, on_ground: bool, p: &MoveParams) -> bool {
    if !cmd.buttons.contains(Buttons::JUMP) {
        s.flags.set(MoveFlags::JUMP_HELD, false);
        return false;
    }
    if !on_ground || s.flags.has(MoveFlags::JUMP_HELD) {
        return false;
    }
    s.flags.set(MoveFlags::JUMP_HELD, true);
    s.flags.set(MoveFlags::ON_GROUND, false);
    s.vel.y = p.jump_speed;
    true
}

/// Direction and speed the player asks for, on the horizontal plane.
fn wish(s: &PlayerState, cmd: &InputCmd, p: &MoveParams) -> (Vec3, f32) {
    let (forward, right) = view_vectors(s.yaw);
    let dir = forward * cmd.forward + right * cmd.right;
    let len = dir.length();
    if len < 1e-6 {
        return (Vec3::ZERO, 0.0);
    }
    let scale = if s.crouched() {
        p.crouch_speed_scale
    } else {
        1.0
    };
    (dir / len, len.min(1.0) * p.run_speed * scale)
}

/// Ground friction: speed falls by `friction * max(speed, stop_speed) * dt`.
fn apply_friction(vel: &mut Vec3, p: &MoveParams, dt: f32) {
    let speed = vel.length();
    if speed < 1e-4 {
        *vel = Vec3::ZERO;
        return;
    }
    let drop = speed.max(p.stop_speed) * p.friction * dt;
    let new_speed = (speed - drop).max(0.0);
    *vel *= new_speed / speed;
}

/// Quake's accelerate: add speed along `dir` until the speed *along `dir`* reaches
/// `wish_speed`. Turning while airborne therefore gains speed (strafe control).
fn accelerate(vel: &mut Vec3, dir: Vec3, wish_speed: f32, accel: f32, dt: f32) {
    let current = vel.dot(dir);
    let add = wish_speed - current;
    if add <= 0.0 {
        return;
    }
    *vel += dir * (accel * dt * wish_speed).min(add);
}

fn walk_move(
    s: &mut PlayerState,
    cmd: &InputCmd,
    ground: Vec3,
    world: &MoveWorld,
    p: &MoveParams,
    dt: f32,
) {
    apply_friction(&mut s.vel, p, dt);
    let (dir, wish_speed) = wish(s, cmd, p);
    // Push along the ground plane so slopes neither slow nor launch the player.
    let dir = clip(dir, ground).normalize_or_zero();
    accelerate(&mut s.vel, dir, wish_speed, p.ground_accel, dt);
    let speed = s.vel.length();
    s.vel = clip(s.vel, ground).normalize_or_zero() * speed;
    if s.vel == Vec3::ZERO {
        return;
    }
    let vel = s.vel;
    step_slide_move(s, vel, vel, world, p, dt, true);
}

fn air_move(s: &mut PlayerState, cmd: &InputCmd, world: &MoveWorld, p: &MoveParams, dt: f32) {
    let (dir, wish_speed) = wish(s, cmd, p);
    accelerate(&mut s.vel, dir, wish_speed, p.air_accel, dt);
    // Trapezoidal gravity: move with the mean of start and end velocity, so a jump traces
    // the same parabola at any tick rate.
    let end_y = (s.vel.y - p.gravity * dt).max(-p.max_fall_speed);
    let mut move_vel = s.vel;
    move_vel.y = 0.5 * (s.vel.y + end_y);
    let mut end_vel = s.vel;
    end_vel.y = end_y;
    step_slide_move(s, move_vel, end_vel, world, p, dt, false);
}

/// Slides, and if something blocked the player while walking, also tries the move from
/// `step_height` higher and keeps whichever went further: that is how stairs are climbed.
fn step_slide_move(
    s: &mut PlayerState,
    move_vel: Vec3,
    end_vel: Vec3,
    world: &MoveWorld,
    p: &MoveParams,
    dt: f32,
    on_ground: bool,
) {
    let height = p.height(s.crouched());
    let start = s.pos;
    // While walking, anything too steep to stand on acts as a vertical wall: a capsule
    // sliding along a ledge's rounded contact would otherwise ride up over it.
    let walls = on_ground.then_some(p.min_ground_normal_y);
    let low = slide_move(world, p.radius, height, start, move_vel, end_vel, dt, walls);
    if !low.blocked || !on_ground {
        s.pos = low.pos;
        s.vel = low.end_vel;
        return;
    }

    let rise = world
        .cast_capsule(start, p.radius, height, Vec3::Y * p.step_height)
        .map_or(p.step_height, |hit| p.step_height * hit.fraction);
    let high = slide_move(
        world,
        p.radius,
        height,
        start + Vec3::Y * rise,
        move_vel,
        end_vel,
        dt,
        walls,
    );
    let down = Vec3::NEG_Y * (rise + GROUND_PROBE);
    let landing = world.cast_capsule(high.pos, p.radius, height, down);
    let stepped = high.pos + down * landing.map_or(1.0, |hit| hit.fraction);
    // A capsule can land on the rim of a ledge taller than the step height with its feet
    // still below it; what counts is how high the supporting point is.
    let steep = landing.is_some_and(|hit| {
        walkable(world, &hit, p).is_none() || hit.point.y - start.y > p.step_height
    });

    let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z).length_squared();
    if steep || landing.is_none() || flat(stepped - start) <= flat(low.pos - start) {
        s.pos = low.pos;
        s.vel = low.end_vel;
    } else {
        s.pos = stepped;
        s.vel = high.end_vel;
    }
}

/// Keeps a walking player on the ground over stair edges and ramp crests.
fn snap_to_ground(s: &mut PlayerState, world: &MoveWorld, p: &MoveParams) -> Option<Vec3> {
    let height = p.height(s.crouched());
    let down = Vec3::NEG_Y * p.step_height;
    let hit = world.cast_capsule(s.pos, p.radius, height, down)?;
    let normal = walkable(world, &hit, p)?;
    s.pos += down * hit.fraction;
    Some(normal)
}

struct Slide {
    pos: Vec3,
    end_vel: Vec3,
    blocked: bool,
}

/// Moves a capsule along `move_vel` for `dt`, sliding along whatever it touches.
/// `end_vel` (the velocity to keep afterwards) is clipped against the same planes.
/// With `walls` set, contacts whose normal Y is below it are treated as vertical.
fn slide_move(
    world: &MoveWorld,
    radius: f32,
    height: f32,
    mut pos: Vec3,
    mut vel: Vec3,
    mut end_vel: Vec3,
    dt: f32,
    walls: Option<f32>,
) -> Slide {
    let mut planes = [Vec3::ZERO; MAX_PLANES];
    let mut count = 0;
    let mut time_left = dt;
    let mut blocked = false;

    for _ in 0..MAX_BUMPS {
        let motion = vel * time_left;
        if motion.length_squared() < 1e-12 {
            break;
        }
        let Some(hit) = world.cast_capsule(pos, radius, height, motion) else {
            pos += motion;
            break;
        };
        blocked = true;
        let mut normal = hit.normal;
        if let Some(min_y) = walls
            && normal.y < min_y
        {
            normal = Vec3::new(normal.x, 0.0, normal.z)
                .try_normalize()
                .unwrap_or(normal);
        }
        pos += motion * hit.fraction;
        time_left -= time_left * hit.fraction;

        if count == MAX_PLANES {
            end_vel = Vec3::ZERO;
            break;
        }
        // Touching the same plane again: nudge off it instead of recording it twice.
        if planes[..count].iter().any(|p| p.dot(normal) > 0.99) {
            vel += normal * 0.01;
            continue;
        }
        planes[count] = normal;
        count += 1;

        match clip_against_planes(&planes[..count], vel, end_vel) {
            Some((v, e)) => {
                vel = v;
                end_vel = e;
            }
            None => {
                // Boxed into a corner: stop.
                end_vel = Vec3::ZERO;
                break;
            }
        }
    }
    Slide {
        pos,
        end_vel,
        blocked,
    }
}

/// Finds a velocity that enters none of `planes`: clip against each plane the player
/// moves into, slide along the crease of two, or stop dead in a corner of three.
fn clip_against_planes(planes: &[Vec3], vel: Vec3, end_vel: Vec3) -> Option<(Vec3, Vec3)> {
    for (i, &pi) in planes.iter().enumerate() {
        if vel.dot(pi) >= 0.0 {
            continue;
        }
        let mut v = clip(vel, pi);
        let mut e = clip(end_vel, pi);
        for (j, &pj) in planes.iter().enumerate() {
            if j == i || v.dot(pj) >= 0.0 {
                continue;
            }
            v = clip(v, pj);
            e = clip(e, pj);
            if v.dot(pi) >= 0.0 {
                continue;
            }
            // Wedged between two planes: move along their crease.
            let crease = pi.cross(pj).normalize_or_zero();
            v = crease * crease.dot(vel);
            e = crease * crease.dot(end_vel);
            let third = planes
                .iter()
                .enumerate()
                .any(|(k, &pk)| k != i && k != j && v.dot(pk) < 0.0);
            if third {
                return None;
            }
        }
        return Some((v, e));
    }
    Some((vel, end_vel))
}

/// Removes the part of `v` going into a surface with normal `n` (slightly more, see
/// [`OVERCLIP`]), leaving the part that slides along it.
fn clip(v: Vec3, n: Vec3) -> Vec3 {
    let into = v.dot(n);
    let backoff = if into < 0.0 {
        into * OVERCLIP
    } else {
        into / OVERCLIP
    };
    v - n * backoff
}
