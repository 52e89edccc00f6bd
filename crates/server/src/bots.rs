//! Bots play as ordinary players whose commands come from the bot brain.

use crate::ServerConfig;
use crate::connection::PlayerSlots;
use crate::outbox::Outgoing;
use crate::sets::CommandSource;
use crate::spawn::{choose_spawn, spawns_of};
use crate::teams::team_for_newcomer;
use bevy::prelude::*;
use sightline_bots::{
    FlagWhere, FlagsSeen, ItemSeen, Itinerary, LinkKind, NavGraph, Needs, WINDOW_SECONDS, Waypoint,
    decide, flag_goal, flag_role, goals, hash, sense,
};
use sightline_combat::{Arsenal, FLAG_REACH, FlagAt, Flags, ItemSpot, Score, Team, Vitals};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_protocol::ServerMessage;
use sightline_sim::{BotControlled, CurrentCmd, Player, PlayerId, PlayerName, Tick, TickConfig};

/// A bot the host kicked: the first to go when the bot count is trimmed the bots.
#[derive(Component, Debug)]
pub struct LeavingBot;

/// Keeps as many bots as the `bots` setting asks (within the free slots): adds the
/// missing ones, and takes away the kicked ones first, then the last added.
#[allow(clippy::too_many_arguments)]
pub(crate) fn keep_bot_count(
    mut commands: Commands,
    config: Res<ServerConfig>,
    (map, flags): (Res<CurrentMap>, Res<Flags>),
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
        let team = team_for_newcomer(&config.rules, teams.iter().copied());
        teams.extend(team);
        let spawn = choose_spawn(&spawns_of(&map.def.spawns, &flags, team), &occupied);
        occupied.push(spawn.pos);
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

/// What a bot remembers between ticks: which enemy it has in view, and since when; and
/// the route it is following.
#[derive(Component, Debug, Default, Clone)]
pub(crate) struct BotMemory {
    target: Option<PlayerId>,
    since: u32,
    itinerary: Itinerary,
}

/// The current map's navigation graph, which bots route through.
#[derive(Resource, Debug, Default)]
pub(crate) struct BotNav(NavGraph);

/// Builds the navigation graph for the map being played (at start and on a map change).
pub(crate) fn build_nav_graph(
    mut commands: Commands,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
) {
    commands.insert_resource(BotNav(NavGraph::build(&map.def, &map.world, &params)));
}

/// Seconds a bot follows a route before choosing again (what it wants changes).
const REPLAN_SECONDS: f32 = 4.0;

/// How far bots see enemies, m.
const ENEMY_SIGHT: f32 = 50.0;

/// What a bot of `team` (player `me`) knows of the flags, while capture the flag is
/// played; `place_of` finds a player.
fn flags_seen(
    flags: &Flags,
    team: Team,
    me: PlayerId,
    place_of: impl Fn(PlayerId) -> Option<Vec3>,
) -> Option<FlagsSeen> {
    let (own_base, enemy_base) = (flags.base(team)?, flags.base(team.other())?);
    let at = |t: Team| match flags.at[t.index()] {
        FlagAt::Home => FlagWhere::Home,
        FlagAt::Carried(by) => FlagWhere::Carried(place_of(by).unwrap_or(own_base)),
        FlagAt::Dropped { pos, .. } => FlagWhere::Lying(pos),
    };
    Some(FlagsSeen {
        own_base,
        enemy_base,
        own_flag: at(team),
        enemy_flag: at(team.other()),
        carrying: flags.carried_by(me).is_some(),
    })
}

/// Each bot looks around (walls, and the nearest enemy in clear view it has had time to
/// react to) and decides its command for this tick. In capture the flag it goes where
/// its part takes it, and a carrier runs home rather than fight.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive_bots(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    tick: Res<Tick>,
    config: Res<TickConfig>,
    server: Res<ServerConfig>,
    nav: Option<Res<BotNav>>,
    (items, flags): (Query<&ItemSpot>, Res<Flags>),
    mut bots: Query<(
        &PlayerId,
        &PlayerState,
        &BotControlled,
        &Vitals,
        &Arsenal,
        Option<&Team>,
        &mut BotMemory,
        &mut CurrentCmd,
    )>,
    everyone: Query<(&PlayerId, &PlayerState, &Vitals, Option<&Team>)>,
) {
    let items: Vec<ItemSeen> = items
        .iter()
        .map(|i| ItemSeen {
            kind: i.kind,
            pos: i.pos,
            present: i.respawn_in <= 0.0,
        })
        .collect();
    let place_of = |id: PlayerId| {
        everyone
            .iter()
            .find(|p| *p.0 == id)
            .map(|(_, state, ..)| state.pos)
    };
    // Each bot's place among its team's bots, for its part in capture the flag.
    let mut ranked: Vec<(Option<Team>, PlayerId)> = bots
        .iter()
        .map(|(id, .., team, _, _)| (team.copied(), *id))
        .collect();
    ranked.sort_by_key(|(team, id)| (team.map(Team::index), *id));
    let rank = |me: PlayerId, team: Option<Team>| {
        ranked
            .iter()
            .filter(|(t, _)| *t == team)
            .position(|(_, id)| *id == me)
            .unwrap_or(0)
    };
    for (id, state, bot, vitals, arsenal, team, mut memory, mut current) in &mut bots {
        if !vitals.alive() {
            memory.itinerary = Itinerary::default();
            continue;
        }
        let mut seen = sense(&map.world, state, &params);
        seen.skill = server.bot_skill;
        seen.health = vitals.health;
        seen.owned = arsenal.owned;
        let eye = params.eye_position(state);
        // Nearest first, so usually one ray decides; team mates are no targets.
        let mut candidates: Vec<(PlayerId, Vec3)> = everyone
            .iter()
            .filter(|(other, _, v, their_team)| {
                *other != id && v.alive() && (team.is_none() || team != *their_team)
            })
            .map(|(other, s, ..)| {
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
                    memory.target = Some(target);
                    memory.since = tick.0;
                }
                let in_view = tick.0.wrapping_sub(memory.since) as f32 * config.dt();
                if in_view >= seen.skill.reaction() {
                    seen.enemy = Some(to);
                }
            }
            None => memory.target = None,
        }
        // In capture the flag the game is the flags: a carrier runs home rather than
        // fight, and the others fight only who is near or who carries their flag, and
        // otherwise go about their part.
        let on_flags = team.and_then(|t| flags_seen(&flags, *t, *id, place_of));
        if let Some(f) = on_flags
            && let (Some(to), Some(target)) = (seen.enemy, memory.target)
        {
            let thief = flags.carried_by(target).is_some();
            if f.carrying || (to.length() > FLAG_ENGAGE && !thief) {
                seen.enemy = None;
            }
        }
        let flag_goal = on_flags.map(|f| flag_goal(flag_role(rank(*id, team.copied())), &f));
        if let Some(nav) = &nav
            && seen.enemy.is_none()
        {
            let needs = Needs {
                pos: state.pos,
                health: vitals.health,
                armor: vitals.armor,
                owned: arsenal.owned,
            };
            let route = Route {
                nav: &nav.0,
                needs: &needs,
                items: &items,
                flag_goal,
            };
            seen.waypoint = route.follow(
                &mut memory.itinerary,
                bot.seed,
                &seen,
                tick.0,
                config.tick_hz,
            );
        }
        let mut cmd = decide(state, &seen, bot.seed, tick.0, config.tick_hz);
        cmd.seq = tick.0;
        cmd.client_tick = tick.0;
        if let Ok(cmd) = cmd.sanitized() {
            current.0 = cmd;
        }
    }
}

/// Where a bot's route may go: the graph, what it needs and the items about, and in
/// capture the flag its goal there.
struct Route<'a> {
    nav: &'a NavGraph,
    needs: &'a Needs,
    items: &'a [ItemSeen],
    flag_goal: Option<Vec3>,
}

/// Farthest a bot in capture the flag stops to fight an enemy who does not carry its
/// flag, m.
const FLAG_ENGAGE: f32 = 15.0;

/// How far a flag goal may move from the route's end before the route is planned again,
/// m: a carrier runs, a flag is taken.
const FLAG_GOAL_SLACK: f32 = 4.0;

impl Route<'_> {
    /// The next spot of a bot's route, planning a new route to what it wants now when
    /// the old one is done or stale, or its flag goal has moved. The last step onto a
    /// flag goal is taken straight, as the graph's spots may lie beyond a touch of it.
    fn follow(
        &self,
        itinerary: &mut Itinerary,
        seed: u64,
        seen: &sightline_bots::BotSense,
        tick: u32,
        tick_hz: u32,
    ) -> Option<Waypoint> {
        let pos = self.needs.pos;
        let age = tick.wrapping_sub(itinerary.planned) as f32 / tick_hz as f32;
        let done = itinerary.ahead.is_empty();
        let moved = self.flag_goal.is_some_and(|g| {
            itinerary
                .goal
                .is_none_or(|planned| planned.distance(g) > FLAG_GOAL_SLACK)
        });
        // An empty plan waits a second before the next try, so a bot with nowhere to go
        // does not search every tick.
        if (done && (itinerary.goal.is_some() || age >= 1.0))
            || age >= REPLAN_SECONDS
            || (moved && age >= 0.5)
        {
            let window = (tick as f32 / tick_hz as f32 / WINDOW_SECONDS) as u64;
            let mut wanted: Vec<Vec3> = self.flag_goal.into_iter().collect();
            wanted.extend(goals(self.needs, self.items, seen.skill, seed, window));
            *itinerary = Itinerary::plan(self.nav, pos, &wanted, tick);
        }
        let next = itinerary.next(pos);
        match self.flag_goal {
            Some(goal) if next.is_none() || horizontal(goal - pos) < FLAG_REACH * 2.0 => {
                (horizontal(goal - pos) < FLAG_REACH * 3.0).then_some(Waypoint {
                    pos: goal,
                    kind: LinkKind::Walk,
                })
            }
            _ => next,
        }
    }
}

/// Length of `v` along the ground.
fn horizontal(v: Vec3) -> f32 {
    Vec3::new(v.x, 0.0, v.z).length()
}

/// Bots: as many as `bots` asks (from start-up, so the first tick has them), routed
/// through the map being played, deciding in their own command source.
pub(crate) struct BotsPlugin;

impl Plugin for BotsPlugin {
    fn build(&self, app: &mut App) {
        // The first bots spawn by their base where capture the flag is played.
        app.add_systems(Startup, keep_bot_count.after(crate::rules::place_flags))
            .add_systems(
                PreUpdate,
                build_nav_graph.run_if(resource_exists_and_changed::<CurrentMap>),
            )
            .add_systems(FixedUpdate, drive_bots.in_set(CommandSource::Bots))
            .add_systems(Update, keep_bot_count);
    }
}
