//! Bots play as ordinary players whose commands come from the bot brain.

use crate::{PlayerSlots, ServerConfig, choose_spawn};
use bevy::prelude::*;
use sightline_bots::{decide, hash, sense};
use sightline_combat::{Arsenal, Score, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_sim::{BotControlled, CurrentCmd, Player, PlayerName, Tick, TickConfig};

/// Adds the configured number of bots at start-up.
pub(crate) fn spawn_bots(
    mut commands: Commands,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    mut slots: ResMut<PlayerSlots>,
) {
    let mut occupied = Vec::new();
    for i in 0..config.bots {
        let Some(id) = slots.take() else {
            warn!(
                "no room for bot {}: the server holds {} players",
                i + 1,
                config.max_players
            );
            break;
        };
        let spawn = choose_spawn(&map.def.spawns, &occupied);
        occupied.push(spawn.pos);
        commands.spawn((
            Player,
            id,
            PlayerName(format!("Bot {}", i + 1)),
            PlayerState::at(spawn.pos, spawn.yaw),
            BotControlled {
                seed: hash(0x5167_4854, i as u64, 0),
            },
            Vitals::spawned(),
            Arsenal::default(),
            Score::default(),
        ));
    }
}

/// Each bot looks around and decides its command for this tick.
pub(crate) fn drive_bots(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    mut bots: Query<(&PlayerState, &BotControlled, &mut CurrentCmd)>,
) {
    for (state, bot, mut current) in &mut bots {
        let seen = sense(&map.world, state, &params);
        let mut cmd = decide(state, &seen, bot.seed, tick.0, config.tick_hz);
        cmd.seq = tick.0;
        cmd.client_tick = tick.0;
        if let Ok(cmd) = cmd.sanitized() {
            current.0 = cmd;
        }
    }
}
