//! A remote player's recent states and how to sample them at any moment.

use bevy::prelude::*;
use sightline_movement::{MoveFlags, PlayerState};
use sightline_sim::InputCmd;
use std::collections::VecDeque;
use std::f32::consts::{PI, TAU};

/// States older than this behind the newest are forgotten, seconds.
const KEEP_SECONDS: f64 = 1.0;
/// Most states held, whatever their times: a second of snapshots at the highest tick rate
/// with room to spare. Times come from the server, which could otherwise pack a second
/// with millions of distinct stamps.
pub const MAX_STATES: usize = 2 * sightline_sim::MAX_TICK_HZ as usize;

/// How a drawn position was found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum DrawMode {
    /// Between two snapshots.
    #[default]
    Interpolated,
    /// Past the newest snapshot, along its velocity.
    Extrapolated,
    /// Held: past the extrapolation limit.
    Held,
    /// Before the oldest snapshot: the player had not come into view at the drawn time
    /// (it has just joined, or the server has just begun to send it), so it is not drawn.
    Unseen,
}

/// Where an interpolated player is drawn this frame.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct Drawn {
    /// Feet position.
    pub pos: Vec3,
    /// View yaw.
    pub yaw: f32,
    /// View pitch.
    pub pitch: f32,
    /// Movement bits of the nearer state.
    pub flags: MoveFlags,
    /// How the position was found.
    pub mode: DrawMode,
    /// The server time it represents, seconds.
    pub time: f64,
}

/// A remote player's states keyed by server time (seconds), oldest first, each with the
/// player's spawn count: two states of different counts have a teleport (a respawn)
/// between them, which is never interpolated across.
#[derive(Component, Debug, Default, Clone)]
pub struct SnapshotBuffer {
    states: VecDeque<(f64, PlayerState, u8)>,
    /// The movement part of the newest state's command: what extrapolation steers by.
    newest_intent: InputCmd,
}

impl SnapshotBuffer {
    /// Adds the state at server time `time`; ignores a time already held, and a time that
    /// is not finite (it would break the order everything here relies on). Holds at most
    /// [`MAX_STATES`], the oldest going first.
    pub fn push(&mut self, time: f64, state: PlayerState) {
        let spawn = self.states.back().map_or(0, |s| s.2);
        self.push_spawned(time, state, spawn);
    }

    /// As [`SnapshotBuffer::push`], with the player's spawn count at that moment (see
    /// `PlayerSnap::spawn_count`).
    pub fn push_spawned(&mut self, time: f64, state: PlayerState, spawn: u8) {
        if !insert_in_time_order(&mut self.states, (time, state, spawn), |e| e.0) {
            return;
        }
        let newest = self.states.back().map_or(time, |(t, ..)| *t);
        while self.states.len() > 2 && self.states[0].0 < newest - KEEP_SECONDS {
            self.states.pop_front();
        }
        while self.states.len() > MAX_STATES {
            self.states.pop_front();
        }
    }

    /// As [`SnapshotBuffer::push_spawned`], with the movement part of the command the
    /// player last ran (see `PlayerSnap::intent_cmd`), kept when this state is the newest.
    pub fn push_steered(&mut self, time: f64, state: PlayerState, spawn: u8, intent: InputCmd) {
        let newest = self.newest_time().is_none_or(|n| time > n);
        self.push_spawned(time, state, spawn);
        if newest && self.newest_time() == Some(time) {
            self.newest_intent = intent;
        }
    }

    /// The newest state, its server time and the movement it was steering by.
    pub fn newest(&self) -> Option<(f64, PlayerState, InputCmd)> {
        self.states
            .back()
            .map(|(t, s, _)| (*t, *s, self.newest_intent))
    }

    /// Server time of the newest state.
    pub fn newest_time(&self) -> Option<f64> {
        self.states.back().map(|(t, ..)| *t)
    }

    /// States held.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether no state is held.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

/// Inserts `entry` into `entries` (kept in order of `time_of`) where its time belongs.
/// Refuses, returning false, a time that is not finite (it would break the order) or
/// one already held (a duplicate snapshot).
pub(crate) fn insert_in_time_order<E>(
    entries: &mut VecDeque<E>,
    entry: E,
    time_of: impl Fn(&E) -> f64,
) -> bool {
    let time = time_of(&entry);
    if !time.is_finite() {
        return false;
    }
    let at = entries.partition_point(|e| time_of(e) < time);
    if entries.get(at).is_some_and(|e| time_of(e) == time) {
        return false;
    }
    entries.insert(at, entry);
    true
}

/// Interpolates angles the short way round.
pub fn lerp_angle(a: f32, b: f32, t: f32) -> f32 {
    let mut d = (b - a) % TAU;
    if d > PI {
        d -= TAU;
    } else if d < -PI {
        d += TAU;
    }
    sightline_sim::wrap_angle(a + d * t)
}

/// The state a fraction `f` (0 to 1) of the way from `a` to `b`: position, velocity and
/// view in between (yaw the short way round), the movement bits of the nearer. Drawing
/// between snapshots, live or replayed, goes through it.
pub fn between(a: &PlayerState, b: &PlayerState, f: f32) -> PlayerState {
    PlayerState {
        pos: a.pos.lerp(b.pos, f),
        vel: a.vel.lerp(b.vel, f),
        yaw: lerp_angle(a.yaw, b.yaw, f),
        pitch: a.pitch + (b.pitch - a.pitch) * f,
        flags: if f < 0.5 { a.flags } else { b.flags },
    }
}

/// Where the player stood at server time `t`: interpolated between the states around it,
/// extrapolated along the newest velocity (with gravity when airborne) for at most
/// `max_extrapolation` seconds past the newest, then held; before the oldest, unseen.
pub fn sample(
    buffer: &SnapshotBuffer,
    t: f64,
    max_extrapolation: f64,
    gravity: f32,
) -> Option<Drawn> {
    let states = &buffer.states;
    let next = states.partition_point(|(time, ..)| *time <= t);
    let drawn = |s: &PlayerState, pos: Vec3, mode: DrawMode| Drawn {
        pos,
        yaw: s.yaw,
        pitch: s.pitch,
        flags: s.flags,
        mode,
        time: t,
    };
    if next == 0 {
        let (_, first, _) = states.front()?;
        return Some(drawn(first, first.pos, DrawMode::Unseen));
    }
    let (t0, a, spawn_a) = &states[next - 1];
    // A respawn lies between: stay where the player fell until the new life begins.
    if let Some((_, _, spawn_b)) = states.get(next)
        && spawn_b != spawn_a
    {
        return Some(drawn(a, a.pos, DrawMode::Interpolated));
    }
    let Some((t1, b, _)) = states.get(next) else {
        let ahead = t - t0;
        let (dt, mode) = if ahead <= max_extrapolation {
            (
                ahead as f32,
                if ahead > 0.0 {
                    DrawMode::Extrapolated
                } else {
                    DrawMode::Interpolated
                },
            )
        } else {
            (max_extrapolation as f32, DrawMode::Held)
        };
        let fall = if a.on_ground() {
            0.0
        } else {
            0.5 * gravity * dt * dt
        };
        return Some(drawn(a, a.pos + a.vel * dt - Vec3::Y * fall, mode));
    };
    let s = between(a, b, ((t - t0) / (t1 - t0)) as f32);
    Some(drawn(&s, s.pos, DrawMode::Interpolated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(x: f32, vx: f32, yaw: f32) -> PlayerState {
        PlayerState {
            pos: Vec3::new(x, 0.0, 0.0),
            vel: Vec3::new(vx, 0.0, 0.0),
            yaw,
            flags: MoveFlags(MoveFlags::ON_GROUND),
            ..Default::default()
        }
    }

    fn buffer() -> SnapshotBuffer {
        let mut b = SnapshotBuffer::default();
        b.push(1.0, state(0.0, 10.0, 0.0));
        b.push(1.1, state(1.0, 10.0, 0.0));
        b.push(1.2, state(2.0, 10.0, 0.0));
        b
    }

    #[test]
    fn samples_between_snapshots_linearly() {
        let d = sample(&buffer(), 1.15, 0.1, 20.0).unwrap();
        assert!((d.pos.x - 1.5).abs() < 1e-5);
        assert_eq!(d.mode, DrawMode::Interpolated);
        let exact = sample(&buffer(), 1.1, 0.1, 20.0).unwrap();
        assert!((exact.pos.x - 1.0).abs() < 1e-6);
    }

    #[test]
    fn extrapolates_for_a_while_then_holds() {
        let b = buffer();
        let d = sample(&b, 1.25, 0.1, 20.0).unwrap();
        assert_eq!(d.mode, DrawMode::Extrapolated);
        assert!((d.pos.x - 2.5).abs() < 1e-4);
        let held = sample(&b, 2.0, 0.1, 20.0).unwrap();
        assert_eq!(held.mode, DrawMode::Held);
        assert!(
            (held.pos.x - 3.0).abs() < 1e-4,
            "held at the extrapolation cap"
        );
        let early = sample(&b, 0.5, 0.1, 20.0).unwrap();
        assert_eq!((early.mode, early.pos.x), (DrawMode::Unseen, 0.0));
        assert!(sample(&SnapshotBuffer::default(), 1.0, 0.1, 20.0).is_none());
    }

    #[test]
    fn airborne_extrapolation_follows_gravity() {
        let mut b = SnapshotBuffer::default();
        let mut s = state(0.0, 0.0, 0.0);
        s.flags = MoveFlags(0);
        b.push(1.0, s);
        let d = sample(&b, 1.1, 0.1, 20.0).unwrap();
        assert!((d.pos.y + 0.1).abs() < 1e-5, "{}", d.pos.y);
    }

    #[test]
    fn a_respawn_is_never_interpolated_across() {
        let mut b = SnapshotBuffer::default();
        b.push_spawned(1.0, state(0.0, 0.0, 0.0), 3);
        b.push_spawned(1.1, state(50.0, 0.0, 0.0), 4);
        let between = sample(&b, 1.09, 0.1, 20.0).unwrap();
        assert_eq!(between.pos.x, 0.0, "where the player fell");
        let after = sample(&b, 1.1, 0.1, 20.0).unwrap();
        assert_eq!(after.pos.x, 50.0, "then at the spawn point");
    }

    #[test]
    fn angles_take_the_short_way_round() {
        let a = 3.0;
        let b = -3.0;
        let mid = lerp_angle(a, b, 0.5);
        assert!((mid.abs() - PI).abs() < 1e-5, "{mid}");
        assert!((lerp_angle(0.1, 0.3, 0.5) - 0.2).abs() < 1e-6);
        assert!((lerp_angle(-3.1, 3.1, 0.5).abs() - PI).abs() < 1e-3);
    }

    #[test]
    fn out_of_order_and_duplicate_states_keep_the_buffer_sorted() {
        let mut b = SnapshotBuffer::default();
        b.push(1.2, state(2.0, 0.0, 0.0));
        b.push(1.0, state(0.0, 0.0, 0.0));
        b.push(1.1, state(1.0, 0.0, 0.0));
        b.push(1.1, state(9.0, 0.0, 0.0));
        assert_eq!(b.len(), 3);
        assert!((sample(&b, 1.05, 0.1, 20.0).unwrap().pos.x - 0.5).abs() < 1e-5);
        b.push(5.0, state(5.0, 0.0, 0.0));
        assert_eq!(
            b.len(),
            2,
            "states a second older than the newest are dropped"
        );
    }

    fn is_sorted(b: &SnapshotBuffer) -> bool {
        b.states
            .iter()
            .zip(b.states.iter().skip(1))
            .all(|(a, b)| a.0 < b.0)
    }

    #[test]
    fn a_second_packed_with_stamps_stays_bounded() {
        let mut b = SnapshotBuffer::default();
        // A microsecond apart, as a hostile server's stamps could be.
        for i in 0..100_000 {
            b.push(1.0 + i as f64 * 1e-6, state(i as f32, 0.0, 0.0));
        }
        assert_eq!(b.len(), MAX_STATES);
        assert!(is_sorted(&b));
        assert_eq!(b.newest_time(), Some(1.0 + 99_999.0 * 1e-6));
    }

    #[test]
    fn odd_times_neither_panic_nor_grow_the_buffer() {
        let mut b = SnapshotBuffer::default();
        let odd = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            -1e300,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            3.0,
            3.0,
            2.0,
            1e18,
            1.0,
        ];
        for (i, t) in odd.iter().cycle().take(10_000).enumerate() {
            // Backwards runs and duplicates around the odd values.
            b.push(*t - (i % 7) as f64, state(i as f32, 0.0, 0.0));
            assert!(b.len() <= MAX_STATES);
            assert!(is_sorted(&b), "after {t}");
        }
        assert!(b.states.iter().all(|(t, ..)| t.is_finite()));
        for t in [f64::NAN, -1e300, 0.0, 1e300, f64::INFINITY] {
            // Sampling anywhere in or around such a buffer still answers.
            assert!(sample(&b, t, 0.1, 20.0).is_some());
        }
    }
}
