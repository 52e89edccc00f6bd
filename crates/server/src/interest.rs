//! Interest management: which players and rockets each client is sent, so a hidden
//! enemy's position never reaches a client and a wallhack has nothing to draw.
//!
//! A client is sent its own player, its team-mates, a flag's carrier, every player within earshot
//! ([`HEAR_RADIUS`]) and every player it could see: a clear line from its eye to the
//! target's eye, to the target's middle, or to a point [`SIGHT_MARGIN`] to either side of
//! it, or from where the viewer's eye will be to where the target will be if each runs
//! on for [`SIGHT_LOOKAHEAD`]. The margin and the run ahead cover how far either player
//! moves before the next check and while the snapshot travels, so a player stepping
//! round a corner, or out from cover, is already drawn when it does. Sight lines are checked for a slice of the
//! clients each tick (each client every [`REFRESH_TICKS`]); earshot and teams, which cost
//! nothing, every tick. A player once sent stays sent for [`LINGER_SECONDS`], so nobody
//! flickers at a doorway's edge. Two clients share one
//! check per cycle: whoever's turn comes first looks, and the other uses its answer.
//!
//! A rocket is sent to its owner, to everyone its owner is sent to (they saw it leave),
//! within earshot, and to whoever could see it now, halfway, or where it will be by the
//! check after next ([`rocket_in_view`]); once sent, it too stays sent for the linger.
//!
//! A rocket's burst goes to whoever is sent the rocket, and to whoever could see or hear
//! where it burst ([`hears_explosion`]). An item spot's state (there or taken) changes for
//! a client only when the client could see or hear the spot ([`Interest::items`]): until
//! then it keeps what it last saw.
//!
//! What a wallhack can still see: players within earshot, inside the margin of a sight
//! line or about to come into view by the look-ahead, team-mates, rockets that will come into view before the next check,
//! bursts within [`EXPLOSION_HEAR_RADIUS`], items within earshot, and the shots of the
//! players it is sent: a shot ([`sightline_protocol::ServerMessage::Fired`]) goes only
//! to clients that are sent its shooter, and carries no position.

use crate::connection::{Connection, ConnectionStage};
use bevy::prelude::*;
use sightline_combat::{Flags, ItemSpot, Rocket, Team};
use sightline_map::{CollisionWorld, CurrentMap};
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::ProjectileSnap;
use sightline_sim::{PlayerId, Tick, TickConfig};
use std::collections::HashMap;

/// Players this close are always sent, seen or not: they can be heard, and they may
/// collide with the client's player, which its prediction must know about. Metres.
pub const HEAR_RADIUS: f32 = 12.0;

/// How far to the side of a target a sight line may pass and still count, metres: more
/// than a running player covers between checks and over a 150 ms round trip.
pub const SIGHT_MARGIN: f32 = 1.5;

/// Ticks between two checks of one client's view.
pub const REFRESH_TICKS: u32 = 8;

/// How long a player stays sent after it was last seen, seconds.
pub const LINGER_SECONDS: f32 = 0.5;

/// How far a rocket's burst is heard, metres: an explosion carries further than steps.
pub const EXPLOSION_HEAR_RADIUS: f32 = 2.0 * HEAR_RADIUS;

/// The players one client is sent: by player id, the tick until which it is sent
/// (0: not sent). An array, not a map: every snapshot asks it of every player. And the
/// rockets it is sent, by rocket id, likewise.
#[derive(Component, Debug, Clone)]
pub struct Interest {
    until: Box<[u32; 256]>,
    /// Rocket ids and the tick until which each is sent; few, so a list.
    rockets: Vec<(u16, u32)>,
    /// Whether the client's view has been checked since it joined.
    looked: bool,
    /// The item spots as this client last saw them (a bit per spot, set when the item is
    /// there), which snapshots carry: every item is there until it sees otherwise.
    pub items: u64,
}

impl Default for Interest {
    fn default() -> Self {
        Self {
            until: Box::new([0; 256]),
            rockets: Vec::new(),
            looked: false,
            items: u64::MAX,
        }
    }
}

impl Interest {
    /// Whether player `id` is sent to this client after `tick`.
    pub fn sends(&self, id: PlayerId, tick: u32) -> bool {
        self.until[usize::from(id.0)] >= tick.max(1)
    }

    /// Sends player `id` until `tick`, or longer if it already was.
    fn send_until(&mut self, id: PlayerId, tick: u32) {
        let until = &mut self.until[usize::from(id.0)];
        *until = (*until).max(tick);
    }

    /// Whether `rocket` is sent to this client (whose player is `me`) after `tick`: its
    /// own, fired by someone it is sent, or seen or heard lately.
    pub fn sends_rocket(&self, rocket: &ProjectileSnap, me: Option<PlayerId>, tick: u32) -> bool {
        Some(rocket.owner) == me
            || self.sends(rocket.owner, tick)
            || self
                .rockets
                .iter()
                .any(|&(id, until)| id == rocket.id && until >= tick)
    }

    /// Sends rocket `id` until `tick`, or longer if it already was.
    fn send_rocket_until(&mut self, id: u16, tick: u32) {
        match self.rockets.iter_mut().find(|(r, _)| *r == id) {
            Some((_, until)) => *until = (*until).max(tick),
            None => self.rockets.push((id, tick)),
        }
    }
}

/// How far ahead a rocket's flight is looked along, seconds: past the check after next
/// (two [`REFRESH_TICKS`] at 128 Hz) and a round trip, so a rocket coming round a corner
/// is there when it comes round.
pub const ROCKET_LOOKAHEAD: f32 = 0.25;

/// Whether an eye at `eye` could see `rocket` now, halfway along its next
/// [`ROCKET_LOOKAHEAD`] of flight, or at its end.
pub fn rocket_in_view(world: &CollisionWorld, eye: Vec3, rocket: &Rocket) -> bool {
    let ahead = rocket.vel * ROCKET_LOOKAHEAD;
    [rocket.pos, rocket.pos + ahead * 0.5, rocket.pos + ahead]
        .into_iter()
        .any(|point| world.is_clear(eye, point - eye))
}

/// Whether a client whose eye is at `eye` hears or sees a burst at `at`: within
/// [`EXPLOSION_HEAR_RADIUS`], or in the open. A rocket bursts on the surface it hit, so
/// the sight line ends a little short of it, on the viewer's side.
pub fn hears_explosion(world: &CollisionWorld, eye: Vec3, at: Vec3) -> bool {
    let short = at + (eye - at).normalize_or_zero() * 0.05;
    eye.distance(at) <= EXPLOSION_HEAR_RADIUS || world.is_clear(eye, short - eye)
}

/// How far ahead each player's run is looked along, seconds, as a rocket's flight is
/// (`ROCKET_LOOKAHEAD`): a player about to step out from cover, or a viewer about to
/// round a corner, is sent before it happens, so it is drawn when it does.
pub const SIGHT_LOOKAHEAD: f32 = 0.25;

/// Whether a viewer at `viewer` could see a player at `target` across `world`, or will
/// within the margin or as they run on (see the module docs).
pub fn could_see(
    world: &CollisionWorld,
    viewer: &PlayerState,
    target: &PlayerState,
    params: &MoveParams,
) -> bool {
    let eye = params.eye_position(viewer);
    let target_eye = params.eye_position(target);
    let middle = target.pos + Vec3::Y * params.height(target.crouched()) * 0.5;
    // Sideways, across the line of sight, in the horizontal plane.
    let across = (middle - eye).cross(Vec3::Y).normalize_or_zero() * SIGHT_MARGIN;
    let now = [target_eye, middle, middle + across, middle - across];
    if now
        .into_iter()
        .any(|point| world.is_clear(eye, point - eye))
    {
        return true;
    }
    // Where each will be running on as they run now, across the ground (a jump or a fall
    // is brief), if no wall stops them first.
    let ahead = |from: Vec3, state: &PlayerState| {
        let run = Vec3::new(state.vel.x, 0.0, state.vel.z) * SIGHT_LOOKAHEAD;
        (run.length_squared() > 1e-4 && world.is_clear(from, run)).then_some(from + run)
    };
    let their_ahead = ahead(middle, target);
    if their_ahead.is_some_and(|point| world.is_clear(eye, point - eye)) {
        return true;
    }
    ahead(eye, viewer).is_some_and(|my_eye| {
        [Some(target_eye), Some(middle), their_ahead]
            .into_iter()
            .flatten()
            .any(|point| world.is_clear(my_eye, point - my_eye))
    })
}

/// Sight lines checked lately, by pair of players (lower id first), with the tick they
/// were checked in: a pair of clients is checked once per cycle, not from both ends.
#[derive(Default)]
pub(crate) struct Sightlines(HashMap<(PlayerId, PlayerId), (u32, bool)>);

impl Sightlines {
    /// Whether `a` and `b` see each other, checked now or at most a cycle ago.
    fn see(
        &mut self,
        tick: u32,
        a: (PlayerId, &PlayerState),
        b: (PlayerId, &PlayerState),
        check: impl FnOnce(&PlayerState, &PlayerState) -> bool,
    ) -> bool {
        let key = (a.0.min(b.0), a.0.max(b.0));
        match self.0.get(&key) {
            Some(&(at, seen)) if fresh(at, tick) => seen,
            _ => {
                let seen = check(a.1, b.1);
                self.0.insert(key, (tick, seen));
                seen
            }
        }
    }
}

/// Whether a check made in tick `at` still holds in `tick`.
fn fresh(at: u32, tick: u32) -> bool {
    at <= tick && tick - at < REFRESH_TICKS
}

/// Refreshes the view of this tick's slice of the playing clients.
#[allow(clippy::too_many_arguments)]
pub(crate) fn refresh_interest(
    tick: Res<Tick>,
    config: Res<TickConfig>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    players: Query<(&PlayerId, &PlayerState, Option<&Team>)>,
    rockets: Query<&Rocket>,
    (items, flags): (Query<&ItemSpot>, Res<Flags>),
    mut viewers: Query<(
        &Connection,
        &PlayerId,
        &PlayerState,
        Option<&Team>,
        &mut Interest,
    )>,
    mut sightlines: Local<Sightlines>,
) {
    // Forget pairs checked more than a cycle ago.
    sightlines.0.retain(|_, (at, _)| fresh(*at, tick.0));
    let linger = (LINGER_SECONDS * config.tick_hz as f32).ceil() as u32;
    let until = tick.0.saturating_add(linger);
    for (conn, me, eye, team, mut interest) in &mut viewers {
        if conn.stage != ConnectionStage::Playing {
            continue;
        }
        // Sight lines on the client's own tick of the cycle, so the checks spread
        // evenly, and on odd ticks, which send no snapshots at the server's own pace
        // when that is every second tick or less often, so the two costs fall in one
        // tick only for clients on a faster stream. Itself, team-mates and earshot
        // (cheap) every tick.
        let slot = tick.0.wrapping_add(2 * u32::from(me.0) + 1);
        let look = slot.is_multiple_of(REFRESH_TICKS) || !interest.looked;
        interest.looked |= look;
        for (id, state, their_team) in &players {
            // A flag's carrier is everyone's business, as a flag on the HUD is.
            let sent = id == me
                || (team.is_some() && team == their_team)
                || flags.carried_by(*id).is_some()
                || eye.pos.distance(state.pos) <= HEAR_RADIUS
                || (look
                    && sightlines.see(tick.0, (*me, eye), (*id, state), |a, b| {
                        could_see(&map.world, a, b, &params)
                    }));
            if sent {
                interest.send_until(*id, until);
            }
        }
        interest.rockets.retain(|&(_, until)| until >= tick.0);
        let eye_at = params.eye_position(eye);
        for rocket in &rockets {
            let sent = rocket.pos.distance(eye.pos) <= HEAR_RADIUS
                || (look && rocket_in_view(&map.world, eye_at, rocket));
            if sent {
                interest.send_rocket_until(rocket.id, until);
            }
        }
        // Only spots whose state differs from what the client last saw cost a look.
        for spot in &items {
            let bit = 1u64 << spot.index;
            let there = spot.respawn_in <= 0.0;
            if (interest.items & bit != 0) == there {
                continue;
            }
            let seen = spot.pos.distance(eye.pos) <= HEAR_RADIUS
                || (look && map.world.is_clear(eye_at, spot.pos + ITEM_LOOK_AT - eye_at));
            if seen {
                interest.items = if there {
                    interest.items | bit
                } else {
                    interest.items & !bit
                };
            }
        }
    }
}

/// Where on an item a sight line aims: above the floor it lies on.
const ITEM_LOOK_AT: Vec3 = Vec3::new(0.0, 0.5, 0.0);

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_combat::ProjectileKind;
    use sightline_map::test_support::floor_box;
    use sightline_movement::MoveFlags;

    fn standing(x: f32, z: f32) -> PlayerState {
        PlayerState {
            pos: Vec3::new(x, 0.0, z),
            flags: MoveFlags(MoveFlags::ON_GROUND),
            ..Default::default()
        }
    }

    /// A floor, and a wall 4 m wide and 4 m tall across x = 0, from z = -2 to z = 2.
    fn wall() -> CollisionWorld {
        CollisionWorld::from_boxes([
            floor_box(50.0),
            (
                Vec3::new(0.0, 2.0, 0.0),
                Vec3::new(0.25, 2.0, 2.0),
                Quat::IDENTITY,
            ),
        ])
    }

    #[test]
    fn a_wall_hides_a_player_and_its_edge_does_not() {
        let (world, params) = (wall(), MoveParams::default());
        let viewer = standing(-20.0, 0.0);
        assert!(!could_see(&world, &viewer, &standing(2.0, 0.0), &params));
        assert!(
            could_see(&world, &viewer, &standing(2.0, 3.0), &params),
            "in the open"
        );
        assert!(!could_see(&world, &viewer, &standing(2.0, 0.3), &params));
        assert!(
            could_see(&world, &viewer, &standing(2.0, 1.5), &params),
            "behind the wall, but within the margin of its edge"
        );
        assert!(could_see(
            &world,
            &standing(-20.0, 10.0),
            &standing(2.0, 0.0),
            &params
        ));
    }

    fn running(x: f32, z: f32, vel: Vec3) -> PlayerState {
        PlayerState {
            vel,
            ..standing(x, z)
        }
    }

    #[test]
    fn a_player_about_to_step_out_or_a_viewer_about_to_round_the_corner_is_seen_early() {
        let (world, params) = (wall(), MoveParams::default());
        let viewer = standing(-20.0, 0.0);
        // Behind the wall, 1.7 m from its end: hidden standing or running along it, seen
        // running out (2.5 m in the look-ahead at 10 m/s).
        assert!(!could_see(&world, &viewer, &standing(2.0, 0.3), &params));
        let along = running(2.0, 0.3, Vec3::new(0.0, 0.0, -10.0));
        assert!(!could_see(&world, &viewer, &along, &params));
        let out = running(2.0, 0.3, Vec3::new(0.0, 0.0, 10.0));
        assert!(could_see(&world, &viewer, &out, &params));
        // Running into the wall does not see through it.
        let into = running(2.0, 0.0, Vec3::new(-8.0, 0.0, 0.0));
        assert!(!could_see(&world, &viewer, &into, &params));
        // A viewer close behind the wall's end, hidden from a player far beyond it, sees
        // them early only when running round the end.
        let target = standing(8.0, 0.0);
        let near_end = standing(-0.5, 1.8);
        assert!(!could_see(&world, &near_end, &target, &params));
        let rounding = running(-0.5, 1.8, Vec3::new(0.0, 0.0, 8.0));
        assert!(could_see(&world, &rounding, &target, &params));
        let backing = running(-0.5, 1.8, Vec3::new(0.0, 0.0, -8.0));
        assert!(!could_see(&world, &backing, &target, &params));
    }

    #[test]
    fn a_higher_wall_point_still_shows_a_head_above_cover() {
        // A low crate hides a crouched player's middle but not a standing player's eyes.
        let world = CollisionWorld::from_boxes([(
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.25, 0.5, 10.0),
            Quat::IDENTITY,
        )]);
        let params = MoveParams::default();
        assert!(could_see(
            &world,
            &standing(-10.0, 0.0),
            &standing(1.0, 0.0),
            &params
        ));
    }

    #[test]
    fn a_wall_hides_a_rocket_until_its_flight_comes_round() {
        let world = wall();
        let eye = Vec3::new(-20.0, 1.6, 0.0);
        let rocket = |x: f32, z: f32, vel: Vec3| Rocket {
            id: 1,
            kind: ProjectileKind::Rocket,
            owner: PlayerId(9),
            pos: Vec3::new(x, 1.5, z),
            vel,
            age: 0.0,
            detonate: false,
        };
        assert!(!rocket_in_view(&world, eye, &rocket(3.0, 0.0, Vec3::ZERO)));
        assert!(rocket_in_view(&world, eye, &rocket(3.0, 4.0, Vec3::ZERO)));
        // Behind the wall now, out beside it within the look-ahead (28 m/s: 7 m).
        let out = rocket(3.0, 0.0, Vec3::new(0.0, 0.0, 28.0));
        assert!(rocket_in_view(&world, eye, &out));
        // Across the middle of its path only.
        let across = rocket(3.0, 3.5, Vec3::new(0.0, 0.0, -28.0));
        assert!(rocket_in_view(&world, eye, &across));
    }

    #[test]
    fn a_burst_on_a_wall_is_seen_from_its_side_and_heard_nearby() {
        let world = wall();
        // On the wall's face toward x < 0, 30 m from a viewer on that side.
        let on_face = Vec3::new(-0.25, 1.0, 0.0);
        assert!(hears_explosion(&world, Vec3::new(-30.0, 1.6, 0.0), on_face));
        assert!(!hears_explosion(&world, Vec3::new(30.0, 1.6, 0.0), on_face));
        assert!(hears_explosion(&world, Vec3::new(10.0, 1.6, 0.0), on_face));
    }

    #[test]
    fn rockets_are_sent_to_their_owner_and_whoever_sees_the_owner() {
        let mut interest = Interest::default();
        let rocket = ProjectileSnap {
            id: 7,
            kind: ProjectileKind::Plasma,
            owner: PlayerId(2),
            pos: [0.0; 3],
            vel: [0.0; 3],
        };
        assert!(!interest.sends_rocket(&rocket, Some(PlayerId(1)), 10));
        assert!(
            interest.sends_rocket(&rocket, Some(PlayerId(2)), 10),
            "its owner"
        );
        interest.send_until(PlayerId(2), 12);
        assert!(
            interest.sends_rocket(&rocket, Some(PlayerId(1)), 10),
            "its shooter seen"
        );
        assert!(!interest.sends_rocket(&rocket, Some(PlayerId(1)), 13));
        interest.send_rocket_until(7, 20);
        interest.send_rocket_until(7, 15);
        assert!(interest.sends_rocket(&rocket, Some(PlayerId(1)), 20));
        assert!(!interest.sends_rocket(&rocket, Some(PlayerId(1)), 21));
    }

    #[test]
    fn interest_lingers_then_lapses() {
        let mut interest = Interest::default();
        assert!(!interest.sends(PlayerId(3), 0), "nobody until looked at");
        interest.send_until(PlayerId(3), 100);
        assert!(interest.sends(PlayerId(3), 100));
        assert!(!interest.sends(PlayerId(3), 101));
        assert!(!interest.sends(PlayerId(4), 0));
    }
}
