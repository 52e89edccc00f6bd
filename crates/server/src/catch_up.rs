//! Catching up: after holding a player for want of its command, the server runs two of
//! its commands in a tick until the held ticks are repaid (Source replays a backlog of
//! commands the same way). The second command is stepped by the same systems as the first
//! ([`CommandStep`]), for that player alone, after the tick's combat and before the tick
//! settles; rockets fly and items are taken once a tick, as the world's part.

use crate::stats::ServerStats;
use bevy::prelude::*;
use sightline_combat::ViewWindow;
use sightline_sim::{CommandStep, CurrentCmd, Held, InputCmd, SimSet};

/// A second command this player runs in the current tick, repaying a tick it was held,
/// with the view window its shots are judged in. Chosen with the first in
/// [`SimSet::ReadInputs`] (by the input buffer, or a demo's replay), taken by the step
/// in [`SimSet::CatchUp`].
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct CatchUp(pub Option<(InputCmd, ViewWindow)>);

/// Runs the second commands of the tick.
pub(crate) struct CatchUpPlugin;

impl Plugin for CatchUpPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(FixedUpdate, run_second_commands.in_set(SimSet::CatchUp));
    }
}

/// Makes each player's second command its current one and steps [`CommandStep`] with
/// everyone else held, as if for a tick of its own; then gives the others their held
/// flags back.
/// The queries are the system's own, kept between ticks rather than built anew in each.
pub(crate) fn run_second_commands(
    world: &mut World,
    seconds: &mut QueryState<(
        Entity,
        &mut CatchUp,
        &mut CurrentCmd,
        Option<&mut ViewWindow>,
    )>,
    held: &mut QueryState<(Entity, &mut Held)>,
) {
    let mut stepping = Vec::new();
    for (entity, mut catch_up, mut current, window) in seconds.iter_mut(world) {
        // Read, and written only where there is one: most ticks nobody has.
        let Some((cmd, second_window)) = catch_up.0 else {
            continue;
        };
        catch_up.0 = None;
        current.0 = cmd;
        if let Some(mut window) = window {
            *window = second_window;
        }
        stepping.push(entity);
    }
    if stepping.is_empty() {
        return;
    }
    let before: Vec<(Entity, Held)> = held.iter(world).map(|(e, h)| (e, *h)).collect();
    for (entity, mut h) in held.iter_mut(world) {
        h.0 = !stepping.contains(&entity);
    }
    world.run_schedule(CommandStep);
    for (entity, h) in before {
        if let Ok((_, mut now)) = held.get_mut(world, entity) {
            *now = h;
        }
    }
    let mut stats = world.resource_mut::<ServerStats>();
    stats.catch_ups = stats.catch_ups.saturating_add(stepping.len() as u64);
}
