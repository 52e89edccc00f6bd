//! A bot at a client's keyboard and mouse, for measurements in combat.
//!
//! A client's own bot input (`InputSource::Bot`) never fires: the bot brain fights only
//! when told where an enemy is, and the client core senses walls, not players. A
//! [`PlayerBot`] plays the way a person does instead: once a frame, before the frame's
//! ticks (as the game reads the keyboard and mouse), it looks at what the client *draws*
//! (remote players where interpolation put them, its own predicted player), runs the same
//! bot brain the server's bots use with the nearest enemy in clear view, and writes the
//! result into the client's `LocalInput` (`InputSource::Local`). So it turns at the
//! brain's rate per frame of its own, aims at drawn bodies, fires when on target, and
//! sometimes takes the rocket launcher instead of the rifle, for splash and knockback.

use crate::stepper::FrameClock;
use bevy::prelude::*;
use sightline_bots::{BotSkill, WINDOW_SECONDS, decide, hash, sense};
use sightline_client::{ClientSet, InputSource, LatestSnapshot, LocalInput, RemotePlayer};
use sightline_interpolation::Drawn;
use sightline_map::CurrentMap;
use sightline_movement::{MoveFlags, MoveParams, PlayerState};
use sightline_prediction::{Predicted, PredictionSet};
use sightline_sim::PlayerId;

/// How far the bot sees enemies, m (as the server's bots).
const ENEMY_SIGHT: f32 = 50.0;

/// The bot at this client's controls, and what it remembers between frames.
#[derive(Resource, Debug, Clone)]
pub struct PlayerBot {
    /// Makes its choices its own.
    pub seed: u64,
    /// How well it fights.
    pub skill: BotSkill,
    /// The enemy it has in view, and the frame it first saw it.
    target: Option<(PlayerId, u64)>,
    /// Whether it has taken its view from its player yet.
    looking: bool,
}

impl PlayerBot {
    /// A bot of `skill`, its choices from `seed`.
    pub fn new(seed: u64, skill: BotSkill) -> Self {
        Self {
            seed,
            skill,
            target: None,
            looking: false,
        }
    }
}

/// Puts a [`PlayerBot`] at client `app`'s controls.
pub fn drive_with_bot(app: &mut App, bot: PlayerBot) {
    app.insert_resource(InputSource::Local)
        .insert_resource(bot)
        .add_systems(
            PreUpdate,
            play.after(ClientSet::Receive)
                .after(PredictionSet::Reconcile)
                .run_if(resource_exists::<CurrentMap>),
        );
}

/// One frame of the bot's play.
#[allow(clippy::too_many_arguments)]
fn play(
    clock: Res<FrameClock>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    latest: Res<LatestSnapshot>,
    mut bot: ResMut<PlayerBot>,
    mut input: ResMut<LocalInput>,
    own: Query<(&PlayerId, &PlayerState), With<Predicted>>,
    remotes: Query<(&PlayerId, &Drawn), With<RemotePlayer>>,
) {
    let Ok((me, state)) = own.single() else {
        return;
    };
    if !bot.looking {
        input.yaw = state.yaw;
        input.pitch = state.pitch;
        bot.looking = true;
    }
    // The brain runs once per frame of ours: its rates are per second of frames.
    let fps = clock.frames.fps.round().max(1.0) as u32;
    let frame = clock.count;
    let alive = |id: PlayerId| !sightline_client::dead_in(&latest, id);
    let mut view = *state;
    view.yaw = input.yaw;
    view.pitch = input.pitch;
    let mut seen = sense(&map.world, &view, &params);
    seen.skill = bot.skill;
    let eye = params.eye_position(state);
    let mut candidates: Vec<(PlayerId, Vec3)> = remotes
        .iter()
        // A client may also hold its own player as a remote one (a snapshot that came
        // before its Welcome): that is not an enemy.
        .filter(|(id, d)| *id != me && d.time > 0.0 && alive(**id))
        .map(|(id, d)| {
            let crouched = d.flags.has(MoveFlags::CROUCHED);
            (*id, d.pos + Vec3::Y * params.eye(crouched) * 0.6 - eye)
        })
        .filter(|(_, to)| to.length_squared() < ENEMY_SIGHT * ENEMY_SIGHT)
        .collect();
    candidates.sort_by(|a, b| a.1.length_squared().total_cmp(&b.1.length_squared()));
    let nearest = alive(*me)
        .then(|| {
            candidates
                .into_iter()
                .find(|(_, to)| map.world.is_clear(eye, *to))
        })
        .flatten();
    match nearest {
        Some((id, to)) => {
            let since = match bot.target {
                Some((t, since)) if t == id => since,
                _ => frame,
            };
            bot.target = Some((id, since));
            if (frame - since) as f32 / fps as f32 >= bot.skill.reaction() {
                seen.enemy = Some(to);
            }
        }
        None => bot.target = None,
    }
    let frame32 = frame as u32;
    let mut cmd = decide(&view, &seen, bot.seed, frame32, fps);
    // The rifle at range; a third of the time the rocket launcher instead.
    let window = (frame as f32 / (WINDOW_SECONDS * fps as f32)) as u64;
    if seen.enemy.is_some() && cmd.weapon_slot == 1 && hash(bot.seed, window, 11).is_multiple_of(3)
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
