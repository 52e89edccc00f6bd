//! The autopilot: the one bot that plays a client (the headless client, the game's
//! `--auto`, the harness's soak, load and measured players). Once a frame, before the
//! frame's ticks (when the game reads the keyboard and mouse), it looks at what the
//! client draws (its own predicted player, the others where interpolation put them), runs
//! the brain the server's bots use and writes the result into [`LocalInput`], as the
//! keyboard and mouse do: its commands are sampled, gated, predicted and sent exactly as
//! a person's. So it turns at the brain's rate per frame of its own and aims at drawn
//! bodies, not at the server's truth. Its clock is the time its frames cover: the brain's
//! choices come in windows of seconds, which a frame rate that wanders does not reshuffle.

use crate::sets::RemotePlayer;
use crate::{ClientSet, LatestSnapshot, LocalInput, dead_in};
use bevy::prelude::*;
use sightline_bots::{BotSkill, WINDOW_SECONDS, decide, hash, sense};
use sightline_interpolation::Drawn;
use sightline_map::CurrentMap;
use sightline_movement::{MoveFlags, MoveParams, PlayerState};
use sightline_prediction::{Predicted, PredictionSet};
use sightline_sim::PlayerId;

/// How far the autopilot sees enemies, m (as the server's bots).
const ENEMY_SIGHT: f32 = 50.0;
/// Frames over which the frame rate its rates assume is averaged.
const RATE_FRAMES: f32 = 32.0;
/// The longest frame counted at its length, s: one hitch does not make the brain think
/// the client runs at a frame a second.
const LONGEST_FRAME: f32 = 0.25;

/// The bot at this client's controls, and what it remembers between frames. Present as
/// a resource, it drives [`LocalInput`]; removed, the controls are someone else's.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct Autopilot {
    /// Makes its choices its own.
    pub seed: u64,
    /// How well it fights; `None`: it only moves about (it sees no enemy, so never fires).
    pub fights: Option<BotSkill>,
    /// Time its frames have covered, s.
    clock: f64,
    /// Its frame rate, which its per-frame turning is counted in (0: not measured yet).
    fps: u32,
    /// Running mean of its frames' lengths, s.
    mean_frame: f32,
    /// The enemy it has in view, and when (on its clock) it first saw it.
    target: Option<(PlayerId, f64)>,
    /// Whether it has taken its view from its player yet.
    looking: bool,
}

impl Autopilot {
    /// An autopilot that moves about as `seed` chooses, and never fights.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            fights: None,
            clock: 0.0,
            fps: 0,
            mean_frame: 0.0,
            target: None,
            looking: false,
        }
    }

    /// An autopilot that also fights, at `skill`: it aims at the nearest enemy it can
    /// see, fires when on target, and sometimes takes the rocket launcher instead of the
    /// rifle, for splash and knockback.
    pub fn fighting(seed: u64, skill: BotSkill) -> Self {
        Self {
            fights: Some(skill),
            ..Self::new(seed)
        }
    }

    /// Its frame rate: from a running mean of its frame times.
    pub fn fps(&self) -> u32 {
        self.fps
    }

    /// Notes a frame of `seconds`.
    fn note_frame(&mut self, seconds: f32) {
        if seconds <= 0.0 {
            // The first frame, which has no length.
            return;
        }
        self.clock += f64::from(seconds);
        let counted = seconds.min(LONGEST_FRAME);
        self.mean_frame = match self.mean_frame {
            0.0 => counted,
            mean => mean + (counted - mean) / RATE_FRAMES,
        };
        self.fps = (1.0 / self.mean_frame).round().max(1.0) as u32;
    }

    /// Its clock as the brain's frame count at its frame rate: the brain's windows (a
    /// count of frames at a rate) then fall on its clock's seconds whatever the rate.
    fn brain_frame(&self) -> u32 {
        (self.clock * f64::from(self.fps)).round() as u32
    }
}

/// One frame of the autopilot's play.
#[allow(clippy::too_many_arguments)]
fn drive(
    time: Res<Time<Real>>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    latest: Res<LatestSnapshot>,
    mut pilot: ResMut<Autopilot>,
    mut input: ResMut<LocalInput>,
    own: Query<(&PlayerId, &PlayerState), With<Predicted>>,
    remotes: Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
) {
    pilot.note_frame(time.delta_secs());
    let Ok((me, state)) = own.single() else {
        return;
    };
    let fps = pilot.fps;
    if fps == 0 {
        return;
    }
    if !pilot.looking {
        input.yaw = state.yaw;
        input.pitch = state.pitch;
        pilot.looking = true;
    }
    let now = pilot.clock;
    let mut view = *state;
    view.yaw = input.yaw;
    view.pitch = input.pitch;
    let mut seen = sense(&map.world, &view, &params);
    if let Some(skill) = pilot.fights {
        seen.skill = skill;
        let enemy = nearest_enemy(&map, &params, &latest, *me, state, &remotes);
        match enemy {
            Some((id, to)) => {
                let since = match pilot.target {
                    Some((t, since)) if t == id => since,
                    _ => now,
                };
                pilot.target = Some((id, since));
                if now - since >= f64::from(skill.reaction()) {
                    seen.enemy = Some(to);
                }
            }
            None => pilot.target = None,
        }
    }
    let mut cmd = decide(&view, &seen, pilot.seed, pilot.brain_frame(), fps);
    // The rifle at range; a third of the time the rocket launcher instead.
    let window = (now / f64::from(WINDOW_SECONDS)) as u64;
    if seen.enemy.is_some()
        && cmd.weapon_slot == 1
        && hash(pilot.seed, window, 11).is_multiple_of(3)
    {
        cmd.weapon_slot = 3;
    }
    input.forward = cmd.forward;
    input.right = cmd.right;
    input.yaw = cmd.yaw;
    input.pitch = cmd.pitch;
    input.buttons = cmd.buttons;
    input.weapon_slot = cmd.weapon_slot;
    // A jump decided on a frame that runs no tick still reaches the next command, as a
    // key press does.
    input.press(cmd.buttons, 0);
}

/// The nearest living enemy in clear view within [`ENEMY_SIGHT`], and the way from our
/// eye to its chest, where it is drawn; none while we are dead.
fn nearest_enemy(
    map: &CurrentMap,
    params: &MoveParams,
    latest: &LatestSnapshot,
    me: PlayerId,
    state: &PlayerState,
    remotes: &Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
) -> Option<(PlayerId, Vec3)> {
    let alive = |id: PlayerId| !dead_in(latest, id);
    if !alive(me) {
        return None;
    }
    let eye = params.eye_position(state);
    let mut candidates: Vec<(PlayerId, Vec3)> = remotes
        .iter()
        // A client may also hold its own player as a remote one (a snapshot that came
        // before its Welcome): that is not an enemy.
        .filter(|(id, d)| **id != me && d.time > 0.0 && alive(**id))
        .map(|(id, d)| {
            let crouched = d.flags.has(MoveFlags::CROUCHED);
            (*id, d.pos + Vec3::Y * params.eye(crouched) * 0.6 - eye)
        })
        .filter(|(_, to)| to.length_squared() < ENEMY_SIGHT * ENEMY_SIGHT)
        .collect();
    candidates.sort_by(|a, b| a.1.length_squared().total_cmp(&b.1.length_squared()));
    candidates
        .into_iter()
        .find(|(_, to)| map.world.is_clear(eye, *to))
}

/// The autopilot's frame, wherever an [`Autopilot`] is at the controls: after the
/// frame's snapshots and the reconciliation (so it sees the freshest drawn world and its
/// own corrected player), before the frame's ticks sample [`LocalInput`].
pub(crate) struct AutopilotPlugin;

impl Plugin for AutopilotPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            PreUpdate,
            drive
                .after(ClientSet::Receive)
                .after(PredictionSet::Reconcile)
                .run_if(resource_exists::<Autopilot>)
                .run_if(resource_exists::<CurrentMap>),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_rate_is_the_frame_rate_through_jitter_a_hitch_and_a_change() {
        let mut pilot = Autopilot::new(1);
        pilot.note_frame(0.0);
        assert_eq!(pilot.fps(), 0, "no rate before a frame with a length");
        for i in 0..200 {
            // 60 fps, each frame 20 % long or short in turn.
            pilot.note_frame(if i % 2 == 0 { 0.8 / 60.0 } else { 1.2 / 60.0 });
        }
        assert!(pilot.fps().abs_diff(60) <= 1, "{}", pilot.fps());
        // A two-second hitch counts as a quarter of a second toward the rate, and the
        // rate recovers; the clock counts all of it.
        let before = pilot.clock;
        pilot.note_frame(2.0);
        assert!((pilot.clock - before - 2.0).abs() < 1e-6);
        assert!(pilot.fps() > 10, "{}", pilot.fps());
        for _ in 0..200 {
            pilot.note_frame(1.0 / 60.0);
        }
        assert!(pilot.fps().abs_diff(60) <= 1, "{}", pilot.fps());
        for _ in 0..300 {
            pilot.note_frame(1.0 / 144.0);
        }
        assert!(pilot.fps().abs_diff(144) <= 2, "{}", pilot.fps());
    }

    #[test]
    fn its_windows_follow_its_clock_not_its_frame_rate() {
        // Ten seconds in, at 59, 60 or 61 fps, the brain counts the same 1.5 s window.
        for fps in [59.0f32, 60.0, 61.0] {
            let mut pilot = Autopilot::new(1);
            for _ in 0..(fps as usize * 10) {
                pilot.note_frame(1.0 / fps);
            }
            let window_frames = (WINDOW_SECONDS * pilot.fps() as f32) as u32;
            assert_eq!(pilot.brain_frame() / window_frames, 6, "at {fps} fps");
        }
    }
}
