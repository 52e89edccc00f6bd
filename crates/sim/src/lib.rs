//! Sightline's shared simulation: the fixed tick, the order of work inside a tick, the
//! player components and the input command that drives a player.
//!
//! The same [`SimulationPlugin`] runs in the dedicated server and, for prediction, in the
//! client. Other plugins (movement, combat, networking) add their systems to the
//! [`SimSet`]s declared here, so every app runs one tick in the same order.

pub mod hash;
mod input;
mod player;
pub mod quantile;
mod session;
mod tick;

#[doc(hidden)]
pub mod test_support;

pub use input::{
    ANGLE_STEPS, Buttons, InputCmd, MAX_PITCH_DEG, MAX_PITCH_STEPS, SanitizeError, VIEW_FRAC_STEP,
    WEAPON_SLOTS, angle_of_steps, angle_steps, wrap_angle,
};
pub use player::{BotControlled, CurrentCmd, Held, Player, PlayerId, PlayerName};
pub use session::{EndSession, SessionAppExt, despawn_all, end_session};
pub use tick::{MAX_TICK_HZ, MIN_TICK_HZ, Tick, TickConfig, TickConfigError};

use bevy::prelude::*;

/// Version of the simulation: the same commands from the same state play the same way
/// under one version. Raise it with any change that makes them play differently
/// (movement, weapons, damage, items, match rules, their order within a tick): a demo
/// recorded under another version is refused rather than replayed wrong, and
/// `scripts/record-demo` records the demo the tests keep again.
///
/// 2: projectiles stay on the snapshot grid after every tick, so clients can fly
/// anyone's rockets exactly as the server does.
pub const SIMULATION_VERSION: u32 = 2;

/// Commonly used simulation types.
pub mod prelude {
    pub use crate::{
        Buttons, CommandStep, CurrentCmd, InputCmd, Player, PlayerId, SimSet, SimulationPlugin,
        Tick, TickConfig,
    };
}

/// The stages of one simulation tick, run in this order inside [`FixedUpdate`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSet {
    /// Advance the [`Tick`] counter.
    BeginTick,
    /// Decide each player's [`CurrentCmd`]: network buffers, bots, local input.
    ReadInputs,
    /// Run the movement step for every player.
    Move,
    /// Weapons, damage and deaths.
    Combat,
    /// A second command for the players repaying a tick they were held: the
    /// [`CommandStep`] schedule run for them alone.
    CatchUp,
    /// Put what the tick left on the grid snapshots carry (so a client predicting the
    /// same commands, and snapping the same way, holds the same bits).
    Settle,
    /// Remember this tick's state (hitboxes for lag compensation, prediction history).
    RecordHistory,
    /// Build and queue snapshots or input packets for the network.
    BuildSnapshots,
}

/// What one command does to its player: the part of a tick that is the player's own
/// (what its command becomes, its move, its weapons), without what is the world's (rockets
/// flying, items, the match). Movement and combat add the same systems here as to
/// [`FixedUpdate`], in the same [`SimSet`]s, so a second command run in a tick
/// ([`SimSet::CatchUp`]) is stepped by the code that steps the first. Players
/// [`Held`] are left alone, as in a tick.
#[derive(bevy::ecs::schedule::ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommandStep;

/// Sets up the fixed tick from a [`TickConfig`] and orders the [`SimSet`]s.
///
/// Insert a [`TickConfig`] before adding the plugin to choose the rate; the default is
/// 128 Hz with a snapshot every second tick.
#[derive(Default)]
pub struct SimulationPlugin;

impl Plugin for SimulationPlugin {
    fn build(&self, app: &mut App) {
        let config = *app
            .world_mut()
            .get_resource_or_insert_with(TickConfig::default);
        app.insert_resource(Time::<Fixed>::from_hz(config.tick_hz as f64))
            .init_session_resource::<Tick>()
            .configure_sets(
                FixedUpdate,
                (
                    SimSet::BeginTick,
                    SimSet::ReadInputs,
                    SimSet::Move,
                    SimSet::Combat,
                    SimSet::CatchUp,
                    SimSet::Settle,
                    SimSet::RecordHistory,
                    SimSet::BuildSnapshots,
                )
                    .chain(),
            )
            .init_schedule(CommandStep)
            .configure_sets(
                CommandStep,
                (SimSet::ReadInputs, SimSet::Move, SimSet::Combat).chain(),
            )
            .add_systems(FixedUpdate, tick::advance_tick.in_set(SimSet::BeginTick))
            // A client's next session starts with no players and its own tick count.
            .add_systems(EndSession, despawn_all::<Player>);
    }
}
