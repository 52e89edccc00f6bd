//! Drawing remote players and rockets at render time: sampling each buffer, carrying a
//! player on past the newest snapshot, and fading out what a newer snapshot corrects.

use crate::{
    Coast, DrawMode, Drawn, DrawnProjectiles, InterpolationSettings, ProjectileTracks, RenderTime,
    SnapshotBuffer, sample,
};
use bevy::prelude::*;
use sightline_movement::MoveParams;

/// Marks a player drawn by interpolation.
#[derive(Component, Debug, Default, Clone, Copy)]
#[require(SnapshotBuffer, Drawn, DrawBlend, Coast)]
pub struct Interpolated;

/// How long a jump in what is drawn takes to fade (exponential time constant), seconds.
pub const BLEND_SECONDS: f32 = 0.1;
/// Jumps at least this long (metres) are drawn at once: a teleport, not an error.
pub const BLEND_MAX: f32 = 2.0;

/// What smooths a remote player's drawn path: when newer snapshots show that what was
/// drawn last frame was wrong (an extrapolation that overshot, a late snapshot), the
/// difference is kept as an offset that fades, instead of a pop.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct DrawBlend {
    /// Added to the sampled position, fading with [`BLEND_SECONDS`].
    pub offset: Vec3,
    /// Whether this player has been drawn before.
    started: bool,
}

impl DrawBlend {
    /// `sampled` as drawn: plus the difference between what was drawn last frame
    /// (`previous`) and what the buffer now says of that moment (`resample`), faded by
    /// `fade`. Differences of [`BLEND_MAX`] or more are dropped (teleports).
    pub fn apply(
        &mut self,
        previous: &Drawn,
        sampled: Drawn,
        fade: f32,
        resample: impl FnOnce(f64) -> Option<Vec3>,
    ) -> Drawn {
        if self.started
            && let Some(known) = resample(previous.time)
        {
            let jump = previous.pos - known;
            self.offset = if jump.is_finite() && jump.length() < BLEND_MAX {
                jump * fade
            } else {
                Vec3::ZERO
            };
        }
        self.started = true;
        Drawn {
            pos: sampled.pos + self.offset,
            ..sampled
        }
    }
}

/// Counters for the netgraph and the netcode report.
#[derive(Resource, Debug, Default, Clone)]
pub struct InterpolationStats {
    /// Player-frames drawn between two snapshots.
    pub interpolated: u64,
    /// Player-frames drawn past the newest snapshot.
    pub extrapolated: u64,
    /// Player-frames held at the end of extrapolation.
    pub held: u64,
    /// Player-frames not drawn: before the player's first snapshot since it came into
    /// view.
    pub unseen: u64,
    /// Frames in which any remote player was extrapolated or held.
    pub frames_extrapolating: u64,
    /// Frames drawn.
    pub frames: u64,
}

/// Places every projectile at the render time.
pub(crate) fn sample_projectiles(
    render: Res<RenderTime>,
    settings: Res<InterpolationSettings>,
    tracks: Res<ProjectileTracks>,
    mut drawn: ResMut<DrawnProjectiles>,
) {
    if let Some(t) = render.server_time {
        drawn.0 = tracks.sample(t, settings.max_extrapolation as f64);
    }
}

/// Samples every remote player's buffer at the render time, blending out any jump.
pub(crate) fn sample_remote_players(
    time: Res<crate::StreamTime>,
    render: Res<RenderTime>,
    settings: Res<InterpolationSettings>,
    params: Res<MoveParams>,
    mut stats: ResMut<InterpolationStats>,
    map: Option<Res<sightline_map::CurrentMap>>,
    tick: Option<Res<sightline_sim::TickConfig>>,
    mut players: Query<
        (&SnapshotBuffer, &mut Drawn, &mut DrawBlend, &mut Coast),
        With<Interpolated>,
    >,
) {
    let Some(t) = render.server_time else {
        return;
    };
    let fade = (-time.delta() as f32 / BLEND_SECONDS).exp();
    let limit = settings.max_extrapolation as f64;
    let mut any_late = false;
    let dt = tick.map_or(1.0 / 128.0, |c| c.dt());
    for (buffer, mut drawn, mut blend, mut coast) in &mut players {
        let Some(mut d) = sample(buffer, t, limit, params.gravity) else {
            continue;
        };
        // Past the newest snapshot: the movement step, steering as the player last did.
        let drawn_at = |at: f64, coast: &mut Coast| -> Option<Vec3> {
            match (map.as_ref(), buffer.newest()) {
                (Some(map), Some((from, newest, intent))) if at > from => Some(coast.at(
                    from,
                    &newest,
                    &intent,
                    at - from,
                    limit,
                    &map.world,
                    &params,
                    dt,
                )),
                _ => sample(buffer, at, limit, params.gravity).map(|s| s.pos),
            }
        };
        if let Some(pos) = drawn_at(t, &mut coast) {
            d.pos = pos;
        }
        // Where the last frame's time is drawn now, the same way (coasting past the
        // newest snapshot): what it was drawn at less this is the jump to fade. Sampled
        // without the coast, a held player's jump was the coast itself, which the fade
        // fed back into the next frame's, so a player held still drifted and wobbled.
        let known = drawn_at(drawn.time, &mut coast);
        let d = blend.apply(&drawn, d, fade, |_| known);
        match d.mode {
            DrawMode::Interpolated => stats.interpolated += 1,
            DrawMode::Extrapolated => stats.extrapolated += 1,
            DrawMode::Held => stats.held += 1,
            DrawMode::Unseen => stats.unseen += 1,
        }
        any_late |= matches!(d.mode, DrawMode::Extrapolated | DrawMode::Held);
        *drawn = d;
    }
    stats.frames += 1;
    stats.frames_extrapolating += u64::from(any_late);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(x: f32, time: f64, mode: DrawMode) -> Drawn {
        Drawn {
            pos: Vec3::new(x, 0.0, 0.0),
            time,
            mode,
            ..Default::default()
        }
    }

    #[test]
    fn an_overshooting_extrapolation_fades_instead_of_popping() {
        let mut blend = DrawBlend::default();
        let fade = (-(1.0f32 / 60.0) / BLEND_SECONDS).exp();
        // Drawn extrapolated to x = 1.0, then a snapshot shows the player stopped at 0.5.
        let mut shown = blend.apply(
            &drawn(0.0, 0.0, DrawMode::Held),
            drawn(1.0, 1.0, DrawMode::Extrapolated),
            fade,
            |_| None,
        );
        assert_eq!(shown.pos.x, 1.0);
        let mut xs = vec![shown.pos.x];
        for frame in 1..60 {
            let time = 1.0 + frame as f64 / 60.0;
            shown = blend.apply(
                &shown,
                drawn(0.5, time, DrawMode::Interpolated),
                fade,
                |_| Some(Vec3::new(0.5, 0.0, 0.0)),
            );
            xs.push(shown.pos.x);
        }
        let largest_step = xs
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f32::max);
        assert!(largest_step < 0.1, "no pop: largest step {largest_step} m");
        assert!(
            (xs[59] - 0.5).abs() < 0.01,
            "settles where the server had it: {}",
            xs[59]
        );
        // A teleport is drawn at once.
        let far = blend.apply(
            &shown,
            drawn(30.0, 2.0, DrawMode::Interpolated),
            fade,
            |_| Some(Vec3::new(30.0, 0.0, 0.0)),
        );
        let after = blend.apply(&far, drawn(30.0, 2.1, DrawMode::Interpolated), fade, |_| {
            Some(Vec3::new(30.0, 0.0, 0.0))
        });
        assert!((after.pos.x - 30.0).abs() < 0.01);
    }
}
