//! Rockets drawn like players: each projectile's snapshots kept by server time and
//! sampled at render time, so a rocket flies smoothly, in step with the players around
//! it, and bursts where and when the world it is drawn in says.

use crate::buffer::insert_in_time_order;
use bevy::prelude::*;
use std::collections::{BTreeMap, VecDeque};

/// Projectiles tracked at most; more in a snapshot than this are not drawn.
pub const MAX_TRACKS: usize = 256;
/// Samples kept per projectile.
const TRACK_LEN: usize = 64;
/// Tracks whose newest sample is this much older than the newest snapshot are dropped,
/// seconds.
const KEEP_SECONDS: f64 = 1.0;

/// One projectile's samples: (server time, position, velocity), oldest first.
type Track = VecDeque<(f64, Vec3, Vec3)>;

/// Every projectile's recent snapshots, by projectile number.
#[derive(Resource, Debug, Default, Clone)]
pub struct ProjectileTracks {
    tracks: BTreeMap<u16, Track>,
    /// Server time of the newest snapshot applied.
    newest: Option<f64>,
}

/// Projectiles as drawn this frame: (number, position).
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct DrawnProjectiles(pub Vec<(u16, Vec3)>);

impl ProjectileTracks {
    /// Notes that the snapshot of server time `time` has been applied; call it for every
    /// snapshot, with or without projectiles, before [`ProjectileTracks::push`]ing its
    /// projectiles.
    pub fn note_snapshot(&mut self, time: f64) {
        if !time.is_finite() {
            return;
        }
        let newest = self.newest.map_or(time, |n| n.max(time));
        self.newest = Some(newest);
        self.tracks
            .retain(|_, t| t.back().is_some_and(|s| s.0 >= newest - KEEP_SECONDS));
    }

    /// Adds projectile `id` at `pos` moving at `vel`, at server time `time`.
    pub fn push(&mut self, id: u16, time: f64, pos: Vec3, vel: Vec3) {
        if !time.is_finite() || !pos.is_finite() || !vel.is_finite() {
            return;
        }
        if !self.tracks.contains_key(&id) && self.tracks.len() >= MAX_TRACKS {
            return;
        }
        let track = self.tracks.entry(id).or_default();
        insert_in_time_order(track, (time, pos, vel), |s| s.0);
        while track.len() > TRACK_LEN {
            track.pop_front();
        }
    }

    /// Where every projectile is at render time `t`: interpolated between its samples;
    /// past its newest, moved along its velocity for at most `max_extrapolation` seconds
    /// while the newest snapshot still has it, and gone once it has burst. Not drawn
    /// before its first sample (it was not fired yet at that moment).
    pub fn sample(&self, t: f64, max_extrapolation: f64) -> Vec<(u16, Vec3)> {
        let newest = self.newest.unwrap_or(f64::MIN);
        self.tracks
            .iter()
            .filter_map(|(&id, track)| {
                let next = track.partition_point(|s| s.0 <= t);
                if next == 0 {
                    return None;
                }
                let (t0, p0, v0) = track[next - 1];
                let pos = match track.get(next) {
                    Some(&(t1, p1, _)) => p0.lerp(p1, ((t - t0) / (t1 - t0)) as f32),
                    // Still flying in the newest snapshot: it goes on along its path.
                    None if t0 >= newest => p0 + v0 * (t - t0).min(max_extrapolation) as f32,
                    // Gone from later snapshots: it burst after its last sample.
                    None => return None,
                };
                Some((id, pos))
            })
            .collect()
    }

    /// Projectiles tracked.
    pub fn len(&self) -> usize {
        self.tracks.len()
    }

    /// Whether none is tracked.
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight() -> ProjectileTracks {
        let mut p = ProjectileTracks::default();
        for i in 0..5 {
            let t = 1.0 + i as f64 * 0.1;
            p.note_snapshot(t);
            p.push(
                7,
                t,
                Vec3::new(i as f32 * 2.0, 1.0, 0.0),
                Vec3::new(20.0, 0.0, 0.0),
            );
        }
        p
    }

    #[test]
    fn a_rocket_is_drawn_between_its_snapshots_and_ahead_while_it_flies() {
        let p = flight();
        assert!(p.sample(0.95, 0.1).is_empty(), "not fired yet");
        let mid = p.sample(1.05, 0.1);
        assert_eq!(mid.len(), 1);
        assert!((mid[0].1.x - 1.0).abs() < 1e-5);
        let ahead = p.sample(1.45, 0.1)[0].1.x;
        assert!((ahead - 9.0).abs() < 1e-4, "{ahead}");
        let capped = p.sample(2.0, 0.1)[0].1.x;
        assert!((capped - 10.0).abs() < 1e-4, "{capped}");
    }

    #[test]
    fn a_rocket_missing_from_later_snapshots_has_burst() {
        let mut p = flight();
        p.note_snapshot(1.5);
        assert_eq!(
            p.sample(1.35, 0.1).len(),
            1,
            "still drawn up to its last sample"
        );
        assert!(p.sample(1.45, 0.1).is_empty(), "burst");
        p.note_snapshot(3.0);
        assert!(p.is_empty(), "forgotten a second later");
    }

    #[test]
    fn hostile_numbers_and_counts_stay_bounded() {
        let mut p = ProjectileTracks::default();
        p.note_snapshot(f64::NAN);
        p.note_snapshot(1.0);
        for id in 0..=u16::MAX {
            p.push(id, 1.0, Vec3::ZERO, Vec3::ZERO);
        }
        assert_eq!(p.len(), MAX_TRACKS);
        for i in 0..1000 {
            p.push(0, 1.0 - i as f64 * 1e-6, Vec3::ZERO, Vec3::ZERO);
        }
        p.push(1, f64::INFINITY, Vec3::ZERO, Vec3::ZERO);
        p.push(1, 1.5, Vec3::NAN, Vec3::ZERO);
        assert!(p.tracks.values().all(|t| t.len() <= TRACK_LEN));
        assert!(p.sample(1.0, 0.1).iter().all(|(_, pos)| pos.is_finite()));
    }
}
