//! What a player changes about itself while connected: its name (`name NEW`, with the
//! checks of joining) and its side (`team red|blue|auto`, or to watch: `roles`), each at
//! most once per [`CHANGE_INTERVAL`]; and teams that a departure left two apart, evened.
//!
//! Changes are made between ticks, so a demo records each as the player's changed state.

use crate::ServerConfig;
use crate::names::new_name;
use crate::outbox::Outgoing;
use crate::rules::{MatchState, Ready};
use crate::spawn::{choose_spawn, spawns_of};
use crate::spectators::Spectator;
use crate::stats::ServerStats;
use crate::teams::{head_count, overfull_team, switch_team};
use bevy::ecs::query::QueryData;
use bevy::prelude::*;
use sightline_combat::{Arsenal, Flags, Score, SpawnCount, Team, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::PlayerState;
use sightline_net::ClientId;
use sightline_protocol::{ServerMessage, TeamChoice};
use sightline_sim::{BotControlled, PlayerId, PlayerName};

/// Seconds a player waits between two renames, and between two changes of side: enough
/// to stop a name or a side flickering every tick, short enough for a typo.
pub const CHANGE_INTERVAL: f64 = 5.0;

/// What a connection asked to change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// Its name.
    Name(String),
    /// Its side.
    Team(TeamChoice),
    /// From playing to watching (`Spectator`) or back (a side): see `roles`. It waits
    /// with changes of side: both start the player afresh.
    Role(TeamChoice),
    /// Whether it is ready to start, in the warmup (a toggle).
    Ready,
}

/// A change asked for by a connection in the game.
#[derive(Message, Debug, Clone)]
pub(crate) struct ChangeRequest {
    /// The connection's entity (its player's, or its spectator's).
    pub entity: Entity,
    /// Its client, for the answer.
    pub client: ClientId,
    /// What.
    pub change: Change,
}

/// When a player last changed its name and its side, real seconds.
#[derive(Component, Debug, Default, Clone, Copy)]
pub(crate) struct LastChanges {
    name: Option<f64>,
    team: Option<f64>,
    ready: Option<f64>,
}

/// Seconds a player waits between two toggles of its readiness: a slip is undone at once,
/// a flood of announcements is not.
pub const READY_INTERVAL: f64 = 1.0;

impl LastChanges {
    /// Seconds until `change` may be made again (0: now).
    pub(crate) fn wait(&self, change: &Change, now: f64) -> f64 {
        let (last, interval) = match change {
            Change::Name(_) => (self.name, CHANGE_INTERVAL),
            Change::Team(_) | Change::Role(_) => (self.team, CHANGE_INTERVAL),
            Change::Ready => (self.ready, READY_INTERVAL),
        };
        last.map_or(0.0, |at| (at + interval - now).max(0.0))
    }

    /// Notes on `entity`'s record (`last`, which it has from joining or watching) that
    /// `change` was made at `now`, giving it a record if it has none.
    pub(crate) fn note(
        last: Option<Mut<LastChanges>>,
        commands: &mut Commands,
        entity: Entity,
        change: &Change,
        now: f64,
    ) {
        match last {
            Some(mut last) => last.made(change, now),
            None => {
                let mut made = LastChanges::default();
                made.made(change, now);
                commands.entity(entity).insert(made);
            }
        }
    }

    /// `change` was made at `now`.
    pub(crate) fn made(&mut self, change: &Change, now: f64) {
        match change {
            Change::Name(_) => self.name = Some(now),
            Change::Team(_) | Change::Role(_) => self.team = Some(now),
            Change::Ready => self.ready = Some(now),
        }
    }
}

/// What a change reads and writes of a player.
#[derive(QueryData)]
#[query_data(mutable)]
pub(crate) struct Changing {
    entity: Entity,
    id: &'static PlayerId,
    name: &'static mut PlayerName,
    team: Option<&'static mut Team>,
    state: &'static mut PlayerState,
    vitals: &'static mut Vitals,
    arsenal: &'static mut Arsenal,
    score: &'static mut Score,
    spawns: &'static mut SpawnCount,
    last: Option<&'static mut LastChanges>,
    bot: Has<BotControlled>,
    ready: Has<Ready>,
}

/// Carries out the renames and changes of side asked for this frame, or tells the asker
/// why not.
pub(crate) fn apply_changes(
    mut requests: MessageReader<ChangeRequest>,
    mut players: Query<Changing>,
    mut spectators: Query<(&mut Spectator, Option<&mut LastChanges>), Without<PlayerId>>,
    mut commands: Commands,
    mut stats: ResMut<ServerStats>,
    mut outbox: MessageWriter<Outgoing>,
    config: Res<ServerConfig>,
    (map, flags): (Res<CurrentMap>, Res<Flags>),
    time: Res<Time<Real>>,
    state: Res<MatchState>,
) {
    let now = time.elapsed_secs_f64();
    for request in requests.read() {
        if matches!(request.change, Change::Role(_)) {
            continue; // `roles::switch_roles`
        }
        let answer = match players.get(request.entity) {
            Ok(_) => change_player(
                request,
                &mut players,
                &mut commands,
                &mut outbox,
                (&config, &map, &flags, &state),
                now,
            ),
            Err(_) => match (&request.change, spectators.get_mut(request.entity)) {
                // A spectator is named only to the host and the other spectators, at
                // most once per interval as a player is.
                (Change::Name(wanted), Ok((mut spectator, last))) => {
                    let wait = last
                        .as_deref()
                        .map_or(0.0, |l| l.wait(&request.change, now));
                    match new_name(wanted, &spectator.name, &[]) {
                        _ if wait > 0.0 => Err(format!("wait {:.0} s", wait.ceil())),
                        Ok(name) => {
                            info!("spectator {} is now {name}", spectator.name);
                            spectator.name = name;
                            let (entity, change) = (request.entity, &request.change);
                            LastChanges::note(last, &mut commands, entity, change, now);
                            Ok(())
                        }
                        Err(why) => Err(why),
                    }
                }
                (Change::Team(_), Ok(_)) => Err("you are watching already".into()),
                (Change::Ready, Ok(_)) => Err("spectators do not play".into()),
                // Gone since it asked, or a change of role (above).
                (Change::Role(_), _) | (_, Err(_)) => continue,
            },
        };
        if let Err(why) = answer {
            refuse(request, &why, &mut stats, &mut outbox);
        }
    }
}

/// Tells the asker why its change was not made, and counts the refusal.
pub(crate) fn refuse(
    request: &ChangeRequest,
    why: &str,
    stats: &mut ServerStats,
    outbox: &mut MessageWriter<Outgoing>,
) {
    stats.refused_requests = stats.refused_requests.saturating_add(1);
    let text = match &request.change {
        Change::Name(_) => format!("name not changed: {why}"),
        Change::Team(_) | Change::Role(_) => format!("team not changed: {why}"),
        Change::Ready => format!("ready: {why}"),
    };
    outbox.write(Outgoing::To(request.client, ServerMessage::notice(&text)));
}

/// One player's change, made, or why not.
fn change_player(
    request: &ChangeRequest,
    players: &mut Query<Changing>,
    commands: &mut Commands,
    outbox: &mut MessageWriter<Outgoing>,
    (config, map, flags, state): (&ServerConfig, &CurrentMap, &Flags, &MatchState),
    now: f64,
) -> Result<(), String> {
    // What the others are: their names, sides and places.
    let mut names = Vec::new();
    let mut sides = Vec::new();
    let mut places = Vec::new();
    for other in players.iter().filter(|p| p.entity != request.entity) {
        names.push(other.name.0.clone());
        sides.extend(other.team.copied());
        places.push(other.state.pos);
    }
    let mut player = players
        .get_mut(request.entity)
        .map_err(|_| "not playing".to_string())?;
    let wait = (player.last.as_deref()).map_or(0.0, |l| l.wait(&request.change, now));
    if wait > 0.0 {
        return Err(format!("wait {:.0} s", wait.ceil()));
    }
    match &request.change {
        Change::Name(wanted) => {
            let others: Vec<&str> = names.iter().map(String::as_str).collect();
            let name = new_name(wanted, &player.name.0, &others)?;
            let text = format!("{} is now known as {name}", player.name.0);
            info!("{text}");
            player.name.0 = name.clone();
            outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerRenamed {
                id: *player.id,
                name,
            }));
            outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
        }
        Change::Team(choice) => {
            let current = player.team.as_deref().copied();
            let team = switch_team(&config.rules, current, *choice, head_count(sides))
                .map_err(|refusal| refusal.describe())?;
            // A new side starts afresh: frags count for the team they were made for,
            // as though the player had left and joined again.
            let spawn = choose_spawn(&spawns_of(&map.def.spawns, flags, Some(team)), &places);
            let (state, vitals, arsenal) = sightline_combat::respawned(spawn);
            (*player.state, *player.vitals, *player.arsenal) = (state, vitals, arsenal);
            *player.score = Score::default();
            player.spawns.bump();
            match player.team.as_deref_mut() {
                Some(side) => *side = team,
                None => {
                    commands.entity(request.entity).insert(team);
                }
            }
            let text = format!("{} joined the {} team", player.name.0, team.name());
            info!("{text}");
            outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
        }
        // Never here: `apply_changes` leaves changes of role to `roles::switch_roles`.
        Change::Role(_) => return Ok(()),
        Change::Ready => {
            if !state.before_start() {
                return Err("the match has begun".into());
            }
            let text = if player.ready {
                commands.entity(request.entity).remove::<Ready>();
                format!("{} is not ready", player.name.0)
            } else {
                commands.entity(request.entity).insert(Ready);
                format!("{} is ready", player.name.0)
            };
            outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
        }
    }
    LastChanges::note(player.last, commands, request.entity, &request.change, now);
    Ok(())
}

/// Evens teams two or more apart (`g_autobalance`): a player of the larger team who is
/// dead moves to the other, a bot before a person, and respawns there as it would have;
/// nobody is moved mid-fight.
pub(crate) fn even_teams(
    config: Res<ServerConfig>,
    mut players: Query<Changing>,
    mut outbox: MessageWriter<Outgoing>,
) {
    if !(config.rules.auto_balance && config.rules.mode.teams()) {
        return;
    }
    let Some(crowded) = overfull_team(head_count(players.iter().filter_map(|p| p.team.copied())))
    else {
        return;
    };
    // A bot first, then the fewest frags, then the highest id: whoever loses least.
    let mover = players
        .iter()
        .filter(|p| p.team == Some(&crowded) && !p.vitals.alive())
        .min_by_key(|p| (!p.bot, p.score.frags, std::cmp::Reverse(*p.id)))
        .map(|p| p.entity);
    let Some(mut player) = mover.and_then(|e| players.get_mut(e).ok()) else {
        return;
    };
    if let Some(mut side) = player.team {
        *side = crowded.other();
    }
    *player.score = Score::default();
    let text = format!(
        "{} moved to the {} team to even the teams",
        player.name.0,
        crowded.other().name()
    );
    info!("{text}");
    outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
}

/// Renames, changes of side and between watching and playing, made between ticks, and
/// teams evened.
pub(crate) struct ChangesPlugin;

impl Plugin for ChangesPlugin {
    fn build(&self, app: &mut App) {
        app.add_message::<ChangeRequest>().add_systems(
            PreUpdate,
            (apply_changes, even_teams)
                .chain()
                .in_set(crate::sets::ReceiveStep::Requests),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A player on `team`, alive or dead, with `frags`.
    fn player(id: u8, team: Team, alive: bool, frags: i32) -> impl Bundle {
        let mut vitals = Vitals::default();
        if !alive {
            vitals.health = 0.0;
        }
        (
            (PlayerId(id), PlayerName(format!("p{id}")), team, vitals),
            (
                PlayerState::default(),
                Arsenal::default(),
                Score {
                    frags,
                    ..Score::default()
                },
                SpawnCount::default(),
            ),
        )
    }

    fn teams_after(players: Vec<(u8, Team, bool, bool, i32)>, balance: bool) -> Vec<(u8, Team)> {
        let mut app = App::new();
        let mut config = ServerConfig::default();
        config.rules.mode = sightline_combat::GameMode::TeamDeathmatch;
        config.rules.auto_balance = balance;
        app.insert_resource(config)
            .add_message::<Outgoing>()
            .add_systems(Update, even_teams);
        for (id, team, alive, bot, frags) in players {
            let mut spawned = app.world_mut().spawn(player(id, team, alive, frags));
            if bot {
                spawned.insert(BotControlled { seed: 1 });
            }
        }
        app.update();
        let mut sides: Vec<(u8, Team)> = app
            .world_mut()
            .query::<(&PlayerId, &Team)>()
            .iter(app.world())
            .map(|(id, t)| (id.0, *t))
            .collect();
        sides.sort_by_key(|s| s.0);
        sides
    }

    #[test]
    fn teams_two_apart_are_evened_by_the_dead_bot_or_the_dead_player_with_fewest_frags() {
        use Team::{Blue, Red};
        // Three red against one blue: the dead bot goes, not the dead person.
        let moved = teams_after(
            vec![
                (0, Red, false, false, 1),
                (1, Red, false, true, 9),
                (2, Red, true, true, 0),
                (3, Blue, true, false, 0),
            ],
            true,
        );
        assert_eq!(moved, [(0, Red), (1, Blue), (2, Red), (3, Blue)]);
        // Nobody dead: nobody is moved mid-fight.
        let still = vec![(0, Red, true, false, 0), (1, Red, true, false, 0)];
        assert_eq!(teams_after(still.clone(), true), [(0, Red), (1, Red)]);
        // Two dead people: the one with fewer frags.
        let dead = vec![(0, Red, false, false, 4), (1, Red, false, false, 2)];
        assert_eq!(teams_after(dead.clone(), true), [(0, Red), (1, Blue)]);
        // The host's choice: no balancing at all.
        assert_eq!(teams_after(dead, false), [(0, Red), (1, Red)]);
    }

    #[test]
    fn a_change_waits_its_interval_and_each_kind_its_own() {
        let mut last = LastChanges::default();
        let name = Change::Name("x".into());
        let side = Change::Team(TeamChoice::Auto);
        assert_eq!(last.wait(&name, 100.0), 0.0);
        last.made(&name, 100.0);
        assert_eq!(last.wait(&name, 101.0), CHANGE_INTERVAL - 1.0);
        assert_eq!(
            last.wait(&side, 101.0),
            0.0,
            "a rename does not hold a side"
        );
        assert_eq!(last.wait(&name, 100.0 + CHANGE_INTERVAL), 0.0);
    }
}
