//! Match rules: free-for-all or team deathmatch, frag and time limits, an intermission with
//! the final scores, then the next map of the rotation with everything reset.

use crate::ServerConfig;
use crate::catch_up::CatchUp;
use crate::interest::Interest;
use crate::outbox::Outgoing;
use crate::spawn::{choose_spawn, spawns_of};
use crate::spectators::{SpectatorFeed, tell_match};
use bevy::prelude::*;
use sightline_combat::{
    Arsenal, DroppedWeapon, Flags, FriendlyFire, GameMode, ItemSpot, Rocket, Score, SpawnCount,
    Team, Vitals, spawn_items_for,
};
use sightline_combat::{CombatSystems, silenced};
use sightline_map::{CurrentMap, MapDef, MapSource, find_map_by_name};
use sightline_movement::PlayerState;
use sightline_protocol::{ServerMessage, Warmup};
use sightline_sim::SimSet;
use sightline_sim::{BotControlled, CurrentCmd, PlayerId, PlayerName, Tick, TickConfig};

/// Seconds between the end of a match and the start of the next.
pub const INTERMISSION: f32 = 8.0;

/// Where the match stands.
#[derive(Resource, Debug, Clone, PartialEq, Default)]
pub struct MatchState {
    /// Seconds played in this match.
    pub elapsed: f32,
    /// While over: seconds until the next match, and who won.
    pub intermission: Option<(f32, String)>,
    /// Position in the rotation.
    pub rotation_index: usize,
    /// Matches finished since the server started.
    pub finished: u32,
    /// Whether the match is in overtime: its time ran out on a tie.
    pub overtime: bool,
    /// While warming up: seconds left of the warmup.
    pub warmup: Option<f32>,
    /// While counting down to the start: seconds left.
    pub countdown: Option<f32>,
}

impl MatchState {
    /// Whether the match proper has not begun: a warmup or a countdown.
    pub fn before_start(&self) -> bool {
        self.warmup.is_some() || self.countdown.is_some()
    }
}

/// One player's standing: name, points (frags, or captures when flags are played), side.
type Standing = (String, i32, Option<Team>);

/// What a match is won by: frags, or captures where capture the flag is played.
fn points(flags: bool, score: &Score) -> i32 {
    if flags {
        score.captures.min(i32::MAX as u32) as i32
    } else {
        score.frags
    }
}

/// Who leads: (name, points) of the best player, or of the best team.
fn leader(mode: GameMode, players: &[Standing]) -> Option<(String, i32)> {
    if !mode.teams() {
        return players
            .iter()
            .max_by_key(|(_, points, _)| *points)
            .map(|(name, points, _)| (name.clone(), *points));
    }
    let (red, blue) = (
        team_total(players, Team::Red),
        team_total(players, Team::Blue),
    );
    Some(if blue > red {
        ("Blue team".into(), blue)
    } else {
        ("Red team".into(), red)
    })
}

/// A team's points.
fn team_total(players: &[Standing], team: Team) -> i32 {
    players
        .iter()
        .filter(|p| p.2 == Some(team))
        .fold(0i32, |sum, p| sum.saturating_add(p.1))
}

/// Whether the lead is shared: two players (or both teams) on the most points.
fn tied(mode: GameMode, players: &[Standing]) -> bool {
    if mode.teams() {
        return team_total(players, Team::Red) == team_total(players, Team::Blue);
    }
    let best = players.iter().map(|p| p.1).max();
    players.iter().filter(|p| Some(p.1) == best).count() >= 2
}

/// The flags a match of `mode` on `map` is played with: on its bases for capture the
/// flag, none otherwise (and none on a map without bases, which is then played as team
/// deathmatch: [`playable`] keeps votes from choosing it).
pub(crate) fn flags_for(mode: GameMode, map: &MapDef) -> Flags {
    Flags::on(map.flags.filter(|_| mode.flags()))
}

/// Whether `mode` can be played on `map`, or why not.
pub(crate) fn playable(mode: GameMode, map: &MapDef) -> Result<(), String> {
    if mode.flags() && map.flags.is_none() {
        return Err(format!(
            "{} has no flag bases for capture the flag",
            map.name
        ));
    }
    Ok(())
}

/// The flags of the match the server starts with; a capture the flag server on a map
/// without bases says it plays team deathmatch there.
pub(crate) fn place_flags(
    config: Res<ServerConfig>,
    map: Option<Res<CurrentMap>>,
    mut flags: ResMut<Flags>,
) {
    let Some(map) = map else {
        return;
    };
    if let Err(why) = playable(config.rules.mode, &map.def) {
        warn!("{why}: playing team deathmatch on it");
    }
    *flags = flags_for(config.rules.mode, &map.def);
}

/// What the host asked of the match (the console's `restart`, `nextmap`, `map` and
/// `endmatch`), carried out at the next tick.
pub enum MatchOrder {
    /// Start the match again on this map.
    Restart,
    /// Start the next match of the rotation now.
    NextMap,
    /// Start a match on this map now (boxed: a map is large beside the other orders).
    Map(Box<MapSource>),
    /// End the match now: the intermission, then the next match.
    End,
    /// End the warmup now (enough players are ready): the countdown, then the match.
    Countdown,
}

/// The host's order for the match, if any.
#[derive(Resource, Default)]
pub struct MatchOrders(pub Option<MatchOrder>);

/// Which map the next match is played on.
enum NextMatch {
    Same,
    Rotation,
    Map(Box<MapSource>),
    /// The match proper after its warmup: this map, no warmup again.
    Start,
}

/// Seconds of the countdown between the warmup and the match.
pub const COUNTDOWN: f32 = 5.0;

/// Ends the match when a limit is reached (or the host says so); starts the next after
/// the intermission (or at once, when the host says so).
pub(crate) fn run_match(
    mut commands: Commands,
    config: Res<ServerConfig>,
    tick: Res<TickConfig>,
    mut state: ResMut<MatchState>,
    mut orders: ResMut<MatchOrders>,
    mut map: ResMut<CurrentMap>,
    mut outbox: MessageWriter<Outgoing>,
    mut feed: ResMut<SpectatorFeed>,
    now: Res<Tick>,
    mut players: Query<(
        &PlayerId,
        &PlayerName,
        &mut Score,
        Option<&Team>,
        &mut PlayerState,
        &mut Vitals,
        &mut Arsenal,
        &mut SpawnCount,
    )>,
    leftovers: Query<Entity, Or<(With<ItemSpot>, With<Rocket>, With<DroppedWeapon>)>>,
    (mut views, mut flags): (Query<&mut Interest>, ResMut<Flags>),
) {
    let rules = &config.rules;
    let dt = tick.dt();
    let mut end_now = false;
    let mut next = match orders.0.take() {
        Some(MatchOrder::Restart) => Some(NextMatch::Same),
        Some(MatchOrder::NextMap) => Some(NextMatch::Rotation),
        Some(MatchOrder::Map(source)) => Some(NextMatch::Map(source)),
        Some(MatchOrder::Countdown) => {
            if state.warmup.take().is_some() {
                state.countdown = Some(COUNTDOWN);
            }
            None
        }
        Some(MatchOrder::End) => {
            end_now = state.intermission.is_none();
            None
        }
        None => None,
    };
    if next.is_none()
        && let Some((left, _)) = state.intermission.as_mut()
    {
        *left -= dt;
        if *left > 0.0 {
            return;
        }
        next = Some(NextMatch::Rotation);
    }
    // Before the match: the warmup runs out into the countdown, the countdown into the
    // match; neither counts toward a limit.
    if next.is_none()
        && let Some(left) = state.warmup.as_mut()
    {
        *left -= dt;
        if *left <= 0.0 {
            state.warmup = None;
            state.countdown = Some(COUNTDOWN);
        }
        return;
    }
    if next.is_none()
        && let Some(left) = state.countdown.as_mut()
    {
        *left -= dt;
        if *left > 0.0 {
            return;
        }
        next = Some(NextMatch::Start);
    }
    if let Some(next) = next {
        // The next match: perhaps another map; everyone back at a spawn, scores zeroed;
        // first a warmup where the host wants one.
        state.intermission = None;
        state.elapsed = 0.0;
        state.overtime = false;
        state.countdown = None;
        state.warmup = match next {
            NextMatch::Start => None,
            _ => (rules.warmup > 0.0).then_some(rules.warmup),
        };
        let source = match next {
            NextMatch::Same | NextMatch::Start => None,
            NextMatch::Map(source) => Some(*source),
            NextMatch::Rotation if rules.rotation.is_empty() => None,
            NextMatch::Rotation => {
                state.rotation_index = (state.rotation_index + 1) % rules.rotation.len();
                let name = &rules.rotation[state.rotation_index];
                // Names only (ServerConfig checks them): the list may come over rcon.
                find_map_by_name(name)
                    .and_then(|path| MapSource::load(&path))
                    .inspect_err(|e| error!("cannot load the next map, staying: {e}"))
                    .ok()
            }
        };
        if let Some(source) = source
            && (source.def.name != map.def.name || source.hash != map.hash)
        {
            *map = CurrentMap::new(source);
            info!("next map: {}", map.def.name);
            let msg = ServerMessage::MapChange {
                map_name: map.def.name.clone(),
                map_hash: map.hash,
            };
            outbox.write(Outgoing::ToPlaying(msg));
        }
        for e in &leftovers {
            commands.entity(e).despawn();
        }
        spawn_items_for(&mut commands, &map);
        if let Err(why) = playable(rules.mode, &map.def) {
            let notice = ServerMessage::notice(&format!("{why}: team deathmatch it is"));
            tell_match(&mut outbox, &mut feed, now.0, notice);
        }
        *flags = flags_for(rules.mode, &map.def);
        // Every item is back, and everyone knows it.
        for mut view in &mut views {
            view.items = u64::MAX;
        }
        let mut placed = Vec::new();
        // In id order: each takes the spawn furthest from those placed before it, so the
        // order must not depend on where the players are stored.
        let mut order: Vec<_> = players.iter_mut().collect();
        order.sort_by_key(|(id, ..)| **id);
        for (_, _, mut score, team, mut player, mut vitals, mut arsenal, mut spawns) in order {
            let spawn = choose_spawn(&spawns_of(&map.def.spawns, &flags, team.copied()), &placed);
            placed.push(spawn.pos);
            *score = Score::default();
            (*player, *vitals, *arsenal) = sightline_combat::respawned(spawn);
            spawns.bump();
        }
        return;
    }
    if state.intermission.is_some() {
        return;
    }
    state.elapsed += dt;
    // In id order, so a tie names the same winner wherever the players are stored.
    let mut ranked: Vec<_> = players.iter().collect();
    ranked.sort_by_key(|(id, ..)| **id);
    let ctf = flags.active();
    let standings: Vec<Standing> = ranked
        .into_iter()
        .map(|(_, name, score, team, ..)| (name.0.clone(), points(ctf, score), team.copied()))
        .collect();
    let (name, best) = leader(rules.mode, &standings).unwrap_or(("Nobody".into(), 0));
    let by_score = if ctf {
        rules.capturelimit > 0 && best >= i32::from(rules.capturelimit)
    } else {
        rules.fraglimit > 0 && best >= rules.fraglimit
    };
    let by_time = rules.timelimit > 0.0 && state.elapsed >= rules.timelimit;
    if !(by_score || by_time || end_now) || standings.is_empty() && !end_now {
        return;
    }
    // Time is up on a tie: sudden death, the next frag decides (the host may say no).
    if by_time && !by_score && !end_now && rules.overtime && tied(rules.mode, &standings) {
        if !state.overtime {
            state.overtime = true;
            info!("overtime: the scores are tied at the time limit");
            let notice = ServerMessage::notice(if ctf {
                "Overtime: the scores are tied; the next capture wins"
            } else {
                "Overtime: the scores are tied; the next frag wins"
            });
            tell_match(&mut outbox, &mut feed, now.0, notice);
        }
        return;
    }
    let winner = format!(
        "{name} wins with {best} {}",
        if ctf { "captures" } else { "frags" }
    );
    info!("match over: {winner}");
    state.overtime = false;
    state.intermission = Some((INTERMISSION, winner.clone()));
    state.finished += 1;
    let ended = ServerMessage::MatchEnded { winner };
    tell_match(&mut outbox, &mut feed, now.0, ended);
}

/// During the intermission nobody moves or fires (nor in a second command of the tick):
/// every command only looks around, as a dead player's does.
pub(crate) fn freeze_during_intermission(
    state: Res<MatchState>,
    mut players: Query<(&mut CurrentCmd, Option<&mut CatchUp>)>,
) {
    if state.intermission.is_none() && state.countdown.is_none() {
        return;
    }
    for (mut cmd, catch_up) in &mut players {
        cmd.0 = silenced(&cmd.0);
        if let Some(mut catch_up) = catch_up
            && let Some((second, _)) = &mut catch_up.0
        {
            *second = silenced(second);
        }
    }
}

/// Tells everyone the rules and the time left, once a second (spectators as their late
/// world reaches it).
pub(crate) fn broadcast_match(
    time: Res<Time<Real>>,
    mut last: Local<f64>,
    config: Res<ServerConfig>,
    state: Res<MatchState>,
    mut outbox: MessageWriter<Outgoing>,
    mut feed: ResMut<SpectatorFeed>,
    tick: Res<Tick>,
    ready: Query<(), (With<Ready>, Without<BotControlled>)>,
    flags: Res<Flags>,
) {
    let now = time.elapsed_secs_f64();
    if now - *last < 1.0 {
        return;
    }
    *last = now;
    let rules = &config.rules;
    let left = if rules.timelimit > 0.0 {
        (rules.timelimit - state.elapsed).max(0.0)
    } else {
        0.0
    };
    let seconds = |s: f32| s.max(0.0).ceil().min(u16::MAX as f32) as u16;
    let warmup = match (state.warmup, state.countdown) {
        (Some(left), _) => Some((false, left)),
        (None, Some(left)) => Some((true, left)),
        (None, None) => None,
    };
    // Capture the flag on a map without bases is played, and told, as team deathmatch.
    let mode = match rules.mode {
        GameMode::CaptureTheFlag if !flags.active() => GameMode::TeamDeathmatch,
        mode => mode,
    };
    let msg = ServerMessage::Match {
        mode,
        fraglimit: rules.fraglimit.clamp(0, u16::MAX as i32) as u16,
        capturelimit: rules.capturelimit,
        time_left_s: seconds(left),
        intermission: state.intermission.is_some(),
        warmup: warmup.map(|(countdown, left)| Warmup {
            countdown,
            seconds_left: seconds(left),
            ready: ready.iter().count().min(usize::from(u8::MAX)) as u8,
            needed: rules.min_ready,
        }),
    };
    tell_match(&mut outbox, &mut feed, tick.0, msg);
}

/// A player who said it is ready to start (`ready`), in the warmup.
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct Ready;

/// The warmup the host wants, from the server's first tick.
pub(crate) fn begin_warmup(config: Res<ServerConfig>, mut state: ResMut<MatchState>) {
    if config.rules.warmup > 0.0 && state.elapsed == 0.0 && !state.before_start() {
        state.warmup = Some(config.rules.warmup);
    }
}

/// Ends the warmup when enough people are ready (`sv_minplayers`); forgets who was ready
/// once the match has begun.
pub(crate) fn start_when_ready(
    mut commands: Commands,
    config: Res<ServerConfig>,
    state: Res<MatchState>,
    mut orders: ResMut<MatchOrders>,
    ready: Query<(Entity, Has<BotControlled>), With<Ready>>,
) {
    if !state.before_start() {
        for (entity, _) in &ready {
            commands.entity(entity).remove::<Ready>();
        }
        return;
    }
    let needed = usize::from(config.rules.min_ready);
    let people = ready.iter().filter(|(_, bot)| !bot).count();
    if state.warmup.is_some() && needed > 0 && people >= needed && orders.0.is_none() {
        info!("{people} players are ready: the countdown starts");
        orders.0 = Some(MatchOrder::Countdown);
    }
}

/// Hands the host's friendly fire to combat, where it changed (`g_friendlyfire`, or a
/// demo's recorded change).
pub(crate) fn apply_friendly_fire(config: Res<ServerConfig>, mut ff: ResMut<FriendlyFire>) {
    if config.is_changed() {
        ff.set_if_neq(config.rules.friendly_fire);
    }
}

/// Match rules: the match run after combat each tick, everyone frozen in the
/// intermission, and the match told to clients.
pub(crate) struct RulesPlugin;

impl Plugin for RulesPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<MatchState>()
            .init_resource::<MatchOrders>()
            .add_systems(Startup, (begin_warmup, place_flags))
            .add_systems(
                FixedUpdate,
                (
                    run_match.in_set(SimSet::Combat).after(CombatSystems),
                    freeze_during_intermission
                        .after(SimSet::ReadInputs)
                        .before(SimSet::Move),
                    apply_friendly_fire.before(SimSet::Combat),
                    start_when_ready.before(SimSet::ReadInputs),
                ),
            )
            .add_systems(Update, broadcast_match);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_lead_is_a_tie() {
        let p = |frags, team| ("p".to_string(), frags, team);
        let dm = GameMode::Deathmatch;
        assert!(tied(dm, &[p(3, None), p(3, None), p(1, None)]));
        assert!(!tied(dm, &[p(4, None), p(3, None)]));
        assert!(!tied(dm, &[p(0, None)]), "alone");
        let tdm = GameMode::TeamDeathmatch;
        let (red, blue) = (Some(Team::Red), Some(Team::Blue));
        assert!(tied(tdm, &[p(2, red), p(1, red), p(3, blue)]));
        assert!(!tied(tdm, &[p(2, red), p(3, blue)]));
    }

    #[test]
    fn the_leader_is_the_best_player_or_team() {
        let players = vec![
            ("a".to_string(), 5, Some(Team::Red)),
            ("b".to_string(), 7, Some(Team::Blue)),
            ("c".to_string(), 4, Some(Team::Red)),
        ];
        assert_eq!(
            leader(GameMode::Deathmatch, &players),
            Some(("b".into(), 7))
        );
        assert_eq!(
            leader(GameMode::TeamDeathmatch, &players),
            Some(("Red team".into(), 9))
        );
    }
}
