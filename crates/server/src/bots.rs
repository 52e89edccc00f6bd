//! Bots play as ordinary players whose commands come from the bot brain.

use crate::ServerConfig;
use crate::connection::PlayerSlots;
use crate::spawn::choose_spawn;
use crate::teams::team_for_newcomer;
use bevy::prelude::*;
use sightline_bots::{decide, hash, sense};
use sightline_combat::{Score, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_sim::{BotControlled, CurrentCmd, Player, PlayerId, PlayerName, Tick, TickConfig};

/// Adds the configured number of bots at start-up.
pub(crate) fn spawn_bots(
    mut commands: Commands,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    mut slots: ResMut<PlayerSlots>,
) {
    let mut occupied = Vec::new();
    let mut teams = Vec::new();
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
        let team = team_for_newcomer(&config.rules, teams.iter().copied());
        teams.extend(team);
        let mut bot = commands.spawn((
            Player,
            id,
            PlayerName(format!("Bot {}", i + 1)),
            sightline_combat::respawned(spawn),
            BotControlled {
                seed: hash(0x5167_4854, i as u64, 0),
            },
            Score::default(),
            BotMemory::default(),
        ));
        if let Some(team) = team {
            bot.insert(team);
        }
    }
}

/// What a bot remembers between ticks: which enemy it has in view, and since when.
#[derive(Component, Debug, Default, Clone, Copy)]
pub(crate) struct BotMemory {
    target: Option<PlayerId>,
    since: u32,
}

/// How far bots see enemies, m.
const ENEMY_SIGHT: f32 = 50.0;

/// Each bot looks around (walls, and the nearest enemy in clear view it has had time to
/// react to) and decides its command for this tick.
pub(crate) fn drive_bots(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    server: Res<ServerConfig>,
    mut bots: Query<(
        &PlayerId,
        &PlayerState,
        &BotControlled,
        &Vitals,
        &mut BotMemory,
        &mut CurrentCmd,
    )>,
    everyone: Query<(&PlayerId, &PlayerState, &Vitals)>,
) {
    for (id, state, bot, vitals, mut memory, mut current) in &mut bots {
        if !vitals.alive() {
            continue;
        }
        let mut seen = sense(&map.world, state, &params);
        seen.skill = server.bot_skill;
        let eye = params.eye_position(state);
        // Nearest first, so usually one ray decides.
        let mut candidates: Vec<(PlayerId, Vec3)> = everyone
            .iter()
            .filter(|(other, _, v)| *other != id && v.alive())
            .map(|(other, s, _)| {
                (
                    *other,
                    s.pos + Vec3::Y * params.eye(s.crouched()) * 0.6 - eye,
                )
            })
            .filter(|(_, to)| to.length_squared() < ENEMY_SIGHT * ENEMY_SIGHT)
            .collect();
        candidates.sort_by(|a, b| a.1.length_squared().total_cmp(&b.1.length_squared()));
        let nearest = candidates
            .into_iter()
            .find(|(_, to)| map.world.is_clear(eye, *to));
        match nearest {
            Some((target, to)) => {
                if memory.target != Some(target) {
                    *memory = BotMemory {
                        target: Some(target),
                        since: tick.0,
                    };
                }
                let in_view = tick.0.wrapping_sub(memory.since) as f32 * config.dt();
                if in_view >= seen.skill.reaction() {
                    seen.enemy = Some(to);
                }
            }
            None => *memory = BotMemory::default(),
        }
        let mut cmd = decide(state, &seen, bot.seed, tick.0, config.tick_hz);
        cmd.seq = tick.0;
        cmd.client_tick = tick.0;
        if let Ok(cmd) = cmd.sanitized() {
            current.0 = cmd;
        }
    }
}
