//! Bots play as ordinary players whose commands come from the bot brain.

use crate::ServerConfig;
use crate::connection::PlayerSlots;
use crate::outbox::Outgoing;
use crate::spawn::choose_spawn;
use crate::teams::team_for_newcomer;
use bevy::prelude::*;
use sightline_bots::{decide, hash, sense};
use sightline_combat::{Score, Team, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::ServerMessage;
use sightline_sim::{BotControlled, CurrentCmd, Player, PlayerId, PlayerName, Tick, TickConfig};

/// A bot the host kicked: the first to go when [`keep_bot_count`] trims the bots.
#[derive(Component, Debug)]
pub(crate) struct LeavingBot;

/// Keeps as many bots as the `bots` setting asks (within the free slots): adds the
/// missing ones, and takes away the kicked ones first, then the last added.
pub(crate) fn keep_bot_count(
    mut commands: Commands,
    config: Res<ServerConfig>,
    map: Res<CurrentMap>,
    mut slots: ResMut<PlayerSlots>,
    mut outbox: MessageWriter<Outgoing>,
    bots: Query<(Entity, &PlayerId, &PlayerName, Has<LeavingBot>), With<BotControlled>>,
    everyone: Query<(&PlayerState, Option<&Team>)>,
    mut warned: Local<bool>,
) {
    let wanted = usize::from(config.bots);
    let mut present: Vec<(Entity, PlayerId, u32, bool)> = bots
        .iter()
        .map(|(e, id, name, leaving)| (e, *id, bot_number(&name.0), leaving))
        .collect();
    // Kicked first, then the highest numbers.
    present.sort_by_key(|(_, _, number, leaving)| (!leaving, std::cmp::Reverse(*number)));
    let excess = present.len().saturating_sub(wanted);
    let kicked = present.iter().filter(|p| p.3).count();
    for (entity, id, _, _) in present.iter().take(excess.max(kicked)) {
        commands.entity(*entity).despawn();
        slots.release(*id);
        outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerLeft {
            id: *id,
            reason: "removed by the server".into(),
        }));
    }
    let staying = present.len() - excess.max(kicked);
    let mut occupied: Vec<Vec3> = everyone.iter().map(|(s, _)| s.pos).collect();
    let mut teams: Vec<Team> = everyone.iter().filter_map(|(_, t)| t.copied()).collect();
    let mut numbers: Vec<u32> = present
        .iter()
        .skip(excess.max(kicked))
        .map(|p| p.2)
        .collect();
    for _ in staying..wanted {
        let Some(id) = slots.take() else {
            if !*warned {
                *warned = true;
                warn!(
                    "no room for {} bots: the server holds {} players",
                    wanted, config.max_players
                );
            }
            break;
        };
        let number = (1..).find(|n| !numbers.contains(n)).unwrap_or(1);
        numbers.push(number);
        let spawn = choose_spawn(&map.def.spawns, &occupied);
        occupied.push(spawn.pos);
        let team = team_for_newcomer(&config.rules, teams.iter().copied());
        teams.extend(team);
        let name = format!("Bot {number}");
        let mut bot = commands.spawn((
            Player,
            id,
            PlayerName(name.clone()),
            sightline_combat::respawned(spawn),
            BotControlled {
                seed: hash(0x5167_4854, u64::from(number - 1), 0),
            },
            Score::default(),
            BotMemory::default(),
        ));
        if let Some(team) = team {
            bot.insert(team);
        }
        outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerJoined {
            id,
            name,
            bot: true,
        }));
    }
}

/// The number in a bot's name ("Bot 3"), 0 if none.
fn bot_number(name: &str) -> u32 {
    name.strip_prefix("Bot ")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
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
