//! How much of a long frame the fixed tick catches up on: enough that a slowly drawing
//! client still makes a command per server tick, not so much that a hitch comes back as a
//! burst of late commands.

use bevy::prelude::*;
use sightline_sim::quantile;

/// Longest frame whose time the fixed tick catches up on in full (Bevy's default is a
/// quarter second). A client must make one command per server tick however slowly it
/// draws, or the server runs short; half a second is what an input packet can carry
/// ([`sightline_protocol::MAX_PACKET_CMDS`]) and half what the server buffers, so down to
/// about 2 frames a second the commands still keep pace. Slower than that, time is lost.
pub const MAX_FRAME_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(500);

/// The least time a long frame catches up on, whatever the frame rate.
pub const MIN_FRAME_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(100);

pub(crate) fn keep_up_with_slow_frames(mut time: ResMut<Time<Virtual>>) {
    time.set_max_delta(MAX_FRAME_CATCH_UP);
}

/// Real frame times of the last frames, newest last.
#[derive(Resource, Debug, Default)]
pub(crate) struct RecentFrames(std::collections::VecDeque<f64>);

/// Frames [`RecentFrames`] keeps.
const RECENT_FRAMES: usize = 32;

/// What the next frame may catch up on: four of this client's usual frames, within
/// [`MIN_FRAME_CATCH_UP`] and [`MAX_FRAME_CATCH_UP`], so a client that always draws
/// slowly still makes a command per server tick, but a hitch (a frame far longer than
/// usual: the process paused, the disk stalled) is not caught up in a burst of commands
/// the server would then run half a second late, each one pulling prediction back. The
/// hitch costs the commands of its time instead, which the server covers as it covers
/// any gap, and one correction.
pub(crate) fn limit_catch_up_to_the_frame_rate(
    real: Res<Time<Real>>,
    mut frames: ResMut<RecentFrames>,
    mut virt: ResMut<Time<Virtual>>,
) {
    frames.0.push_back(real.delta_secs_f64());
    if frames.0.len() > RECENT_FRAMES {
        frames.0.pop_front();
    }
    virt.set_max_delta(catch_up_limit(&frames.0));
}

/// Four of the usual (median) frames of `frames`, within [`MIN_FRAME_CATCH_UP`] and
/// [`MAX_FRAME_CATCH_UP`].
fn catch_up_limit(frames: &std::collections::VecDeque<f64>) -> std::time::Duration {
    let sorted = quantile::sorted(frames.iter().copied());
    let usual = quantile::quantile(&sorted, 0.5).unwrap_or(0.0);
    let limit = (4.0 * usual).clamp(
        MIN_FRAME_CATCH_UP.as_secs_f64(),
        MAX_FRAME_CATCH_UP.as_secs_f64(),
    );
    std::time::Duration::from_secs_f64(limit)
}

/// How many ticks a slow frame may catch up on.
pub(crate) struct CatchUpPlugin;

impl Plugin for CatchUpPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<RecentFrames>()
            .add_systems(Startup, keep_up_with_slow_frames)
            .add_systems(Last, limit_catch_up_to_the_frame_rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hitch_is_not_caught_up_but_a_slow_client_is() {
        let ms = |frames: &[f64]| catch_up_limit(&frames.iter().copied().collect()).as_millis();
        let mut steady = vec![1.0 / 60.0; 31];
        steady.push(1.0);
        assert_eq!(
            ms(&steady),
            100,
            "a second's hitch at 60 fps catches up 0.1 s"
        );
        assert_eq!(ms(&[0.3; 32]), 500, "3 fps catches up what it must");
        assert_eq!(ms(&[0.1; 32]), 400);
        assert_eq!(ms(&[]), 100);
    }
}
