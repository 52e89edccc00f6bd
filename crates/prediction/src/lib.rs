//! Client-side prediction. The local player's commands run through the shared movement
//! step the moment they are sampled, so the player's own movement answers at once. Each
//! snapshot says which command the server simulated last and where that left the player;
//! if the prediction for that command agrees, nothing happens. Otherwise the client takes
//! the server's state and replays every command the server has not simulated yet, and the
//! visible jump is carried as a [`VisualOffset`] that decays, so the camera never pops.
//!
//! Determinism, not smoothing, is what keeps corrections at zero: the server and the
//! replay call the same pure function with the same commands.

mod history;
mod reconcile;

pub use history::{PredictedStep, PredictionHistory};
pub use reconcile::{Reconciliation, reconcile};

use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState, step};
use sightline_sim::{CurrentCmd, SessionAppExt, SimSet, TickConfig};

/// Marks the entity whose movement this client predicts (its own player).
#[derive(Component, Debug, Default, Clone, Copy)]
#[require(VisualOffset)]
pub struct Predicted;

/// How far the drawn player is from its predicted position after a correction; decays to
/// zero. Add it to the predicted position when drawing.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct VisualOffset(pub Vec3);

/// Tuning for reconciliation and smoothing.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct PredictionSettings {
    /// States closer than this (metres, m/s) count as agreeing. Snapshots carry exact
    /// floats, so the default is 0: agreement means the same bits, and any difference,
    /// however small, is replayed away before movement can amplify it.
    pub epsilon: f32,
    /// Corrections smaller than this (metres) are invisible: they are applied without a
    /// visual offset and not counted as corrections.
    pub visible: f32,
    /// Time constant of the visual offset's exponential decay, seconds.
    pub decay_seconds: f32,
    /// Corrections larger than this (metres) snap at once: a teleport or a respawn.
    pub snap_distance: f32,
    /// Unacknowledged commands beyond what the round trip explains: more than this many
    /// seconds' worth means the server is not answering, and the client adopts the
    /// server's state and starts over.
    pub max_unacked_seconds: f32,
}

impl Default for PredictionSettings {
    fn default() -> Self {
        Self {
            epsilon: 0.0,
            visible: 1e-4,
            decay_seconds: 0.075,
            snap_distance: 2.0,
            max_unacked_seconds: 0.25,
        }
    }
}

/// The current round trip, including the time commands wait in the server's buffer,
/// seconds: how long a command normally goes unacknowledged. The client keeps it up to
/// date from clock sync.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct RoundTrip(pub f32);

/// A server state for the predicted player, with the sequence of the last command the
/// server simulated to reach it. The client's snapshot handling fills it in.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct ServerUpdate(pub Option<(u32, PlayerState)>);

/// What prediction has done, for the netgraph and the netcode report.
#[derive(Resource, Debug, Default, Clone)]
pub struct PredictionStats {
    /// Commands predicted.
    pub predicted: u64,
    /// Server states that matched the prediction (no replay).
    pub agreed: u64,
    /// Server states that did not: reset and replay (most are invisibly small).
    pub reconciliations: u64,
    /// Size of each visible correction, metres.
    pub corrections: Vec<f32>,
    /// Size of the latest correction, metres.
    pub last_correction: f32,
    /// Commands replayed in all.
    pub replayed: u64,
    /// Times the server stopped answering and prediction started over.
    pub resets: u64,
}

/// Where prediction runs in the client's frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PredictionSet {
    /// Compare with the server and replay (after snapshots are received).
    Reconcile,
}

/// Predicts the [`Predicted`] player and reconciles it with [`ServerUpdate`]s.
pub struct PredictionPlugin;

impl Plugin for PredictionPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PredictionSettings>()
            .init_resource::<PredictionHistory>()
            .init_resource::<PredictionStats>()
            .init_resource::<ServerUpdate>()
            .init_resource::<RoundTrip>()
            .init_resource::<MoveParams>()
            .reset_on_session_end::<PredictionHistory>()
            .reset_on_session_end::<PredictionStats>()
            .reset_on_session_end::<ServerUpdate>()
            .reset_on_session_end::<RoundTrip>()
            .add_systems(
                FixedUpdate,
                predict_local_player
                    .in_set(SimSet::Move)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(
                PreUpdate,
                apply_server_update
                    .in_set(PredictionSet::Reconcile)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(Update, decay_visual_offset);
    }
}

/// Runs this tick's command on the predicted player at once and remembers the result.
fn predict_local_player(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    mut history: ResMut<PredictionHistory>,
    mut stats: ResMut<PredictionStats>,
    mut player: Query<(&CurrentCmd, &mut PlayerState), With<Predicted>>,
) {
    let Ok((cmd, mut state)) = player.single_mut() else {
        return;
    };
    // No new command this tick (not yet sampled): nothing to predict.
    if history.newest_seq().is_some_and(|s| s >= cmd.0.seq) || cmd.0.seq == 0 {
        return;
    }
    *state = step(&state, &cmd.0, &map.world, &params, config.dt());
    history.push(cmd.0, *state);
    stats.predicted += 1;
}

/// Reconciles the predicted player with the newest server state, if one arrived.
fn apply_server_update(
    mut update: ResMut<ServerUpdate>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    settings: Res<PredictionSettings>,
    round_trip: Res<RoundTrip>,
    mut history: ResMut<PredictionHistory>,
    mut stats: ResMut<PredictionStats>,
    mut player: Query<(&mut PlayerState, &mut VisualOffset), With<Predicted>>,
) {
    let Some((ack, server)) = update.0.take() else {
        return;
    };
    let Ok((mut state, mut offset)) = player.single_mut() else {
        return;
    };
    let patience = settings.max_unacked_seconds + round_trip.0;
    let max_unacked = (patience * config.tick_hz as f32).ceil() as usize;
    let outcome = reconcile(
        &mut history,
        ack,
        &server,
        *state,
        max_unacked,
        settings.epsilon,
        |s, cmd| step(s, cmd, &map.world, &params, config.dt()),
    );
    match outcome {
        Reconciliation::Agreed => stats.agreed += 1,
        Reconciliation::Replayed {
            state: new,
            replayed,
        } => {
            stats.reconciliations += 1;
            stats.replayed += replayed as u64;
            let jump = state.pos - new.pos;
            let size = jump.length();
            if size > settings.visible {
                stats.corrections.push(size);
                stats.last_correction = size;
                offset.0 = if size > settings.snap_distance {
                    Vec3::ZERO
                } else {
                    offset.0 + jump
                };
            }
            *state = new;
        }
        Reconciliation::Reset { state: new } => {
            stats.resets += 1;
            warn!("the server has not acknowledged {max_unacked} commands; taking its state");
            offset.0 = Vec3::ZERO;
            *state = new;
        }
    }
}

/// Lets the visual offset fade, frame-rate independently.
fn decay_visual_offset(
    time: Res<Time>,
    settings: Res<PredictionSettings>,
    mut offsets: Query<&mut VisualOffset>,
) {
    let keep = (-time.delta_secs() / settings.decay_seconds).exp();
    for mut offset in &mut offsets {
        offset.0 *= keep;
        if offset.0.length_squared() < 1e-10 {
            offset.0 = Vec3::ZERO;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::time::TimeUpdateStrategy;
    use std::time::Duration;

    #[test]
    fn the_visual_offset_decays_smoothly_to_nothing() {
        let mut app = App::new();
        app.add_plugins(bevy::time::TimePlugin)
            .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(5)))
            .init_resource::<PredictionSettings>()
            .add_systems(Update, decay_visual_offset);
        let player = app.world_mut().spawn(VisualOffset(Vec3::X)).id();
        app.update(); // the first frame has no elapsed time
        let mut last = 1.0;
        let mut frames = 0;
        while app.world().get::<VisualOffset>(player).unwrap().0.x > 1.0 / std::f32::consts::E {
            app.update();
            frames += 1;
            let x = app.world().get::<VisualOffset>(player).unwrap().0.x;
            assert!(x < last, "the offset must shrink every frame");
            last = x;
        }
        // One time constant (75 ms) of 5 ms frames, give or take a frame.
        assert!((14..=16).contains(&frames), "{frames} frames");
        for _ in 0..200 {
            app.update();
        }
        assert_eq!(
            app.world().get::<VisualOffset>(player).unwrap().0,
            Vec3::ZERO
        );
    }
}
