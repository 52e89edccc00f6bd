//! Votes: a player calls one (`callvote map NAME | nextmap | kick NAME | restart |
//! fraglimit N | mode dm|tdm|ctf`), the players in the game vote (`vote yes|no`), and it passes on more
//! than half of them, within the host's rules: which kinds are allowed, how long a vote
//! runs, how long a caller waits before calling again. Bots and spectators do not vote.
//! A vote never does what the host forbade (nor what cannot be played: capture the flag
//! on a map without flag bases): a map outside the rotation (where there is
//! one), a limit outside the cvar's range, a kick of a bot or of an admin.

use crate::ServerConfig;
use crate::config::VoteKind;
use crate::connection::Connection;
use crate::outbox::Outgoing;
use crate::rules::{MatchOrder, MatchOrders, playable};
use crate::stats::ServerStats;
use bevy::prelude::*;
use sightline_combat::{GameMode, Team};
use sightline_map::{CurrentMap, MapDef, MapSource, find_map_by_name};
use sightline_net::{ClientId, RenetServer};
use sightline_protocol::{ServerMessage, VoteProposal, VoteTally, clean_text};
use sightline_sim::{BotControlled, PlayerId, PlayerName};
use std::collections::BTreeMap;

/// The highest frag limit a vote may set: the `fraglimit` cvar's own.
pub const MAX_VOTED_FRAGLIMIT: u16 = 1000;

/// A player the host trusts (one who ran a command with the rcon password): no vote
/// kicks it.
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct Admin;

/// A vote asked for, or cast, by a connection in the game.
#[derive(Message, Debug, Clone)]
pub(crate) struct VoteRequest {
    /// The connection's entity.
    pub entity: Entity,
    /// Its client, for the answer.
    pub client: ClientId,
    /// A vote called, or a vote cast.
    pub what: VoteAction,
}

/// What a [`VoteRequest`] does.
#[derive(Debug, Clone)]
pub(crate) enum VoteAction {
    /// Calls this vote.
    Call(VoteProposal),
    /// Votes for (true) or against.
    Cast(bool),
}

/// The vote running.
#[derive(Debug, Clone)]
struct Running {
    /// What passes with it.
    outcome: Outcome,
    /// In words.
    question: String,
    /// Each voter's vote, by player.
    votes: BTreeMap<PlayerId, bool>,
    /// When it fails unless passed, real seconds.
    ends_at: f64,
    /// What the players were last told.
    told: Option<VoteTally>,
}

/// What a vote does when it passes, checked when it was called.
#[derive(Debug, Clone)]
enum Outcome {
    Map(Box<MapSource>),
    NextMap,
    Kick(PlayerId),
    Restart,
    Fraglimit(u16),
    Mode(GameMode),
}

/// The vote running, if any, and when each player last called one.
#[derive(Resource, Debug, Default)]
pub struct Votes {
    running: Option<Running>,
    called_at: BTreeMap<PlayerId, f64>,
}

impl Votes {
    /// Whether a vote is running.
    pub fn running(&self) -> bool {
        self.running.is_some()
    }
}

/// How a vote stands among `voters` players, by [`Running::votes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// More than half said yes.
    Passed,
    /// Half or more said no: it cannot pass.
    Failed,
    /// Neither yet.
    Open,
}

/// The verdict on `yes` and `no` of `voters`.
pub(crate) fn verdict(yes: usize, no: usize, voters: usize) -> Verdict {
    if yes * 2 > voters {
        Verdict::Passed
    } else if no * 2 >= voters {
        Verdict::Failed
    } else {
        Verdict::Open
    }
}

/// The players who vote: people in the game, not bots, not spectators.
type Voters<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static PlayerId,
        &'static PlayerName,
        Has<Admin>,
        Has<BotControlled>,
    ),
    With<Connection>,
>;

/// Calls and casts votes, passes or fails the one running, and tells everyone.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_votes(
    mut requests: MessageReader<VoteRequest>,
    mut votes: ResMut<Votes>,
    players: Voters,
    bots: Query<(&PlayerId, &PlayerName), With<BotControlled>>,
    mut config: ResMut<ServerConfig>,
    mut orders: ResMut<MatchOrders>,
    mut outbox: MessageWriter<Outgoing>,
    mut stats: ResMut<ServerStats>,
    time: Res<Time<Real>>,
    mut kick: KickByVote,
    (mut sides, map): (NewSides, Res<CurrentMap>),
) {
    let now = time.elapsed_secs_f64();
    for request in requests.read() {
        let voter = players.get(request.entity).ok().filter(|p| !p.4);
        let answer = match (&request.what, voter) {
            (_, None) => Err("spectators do not vote".to_string()),
            (VoteAction::Call(proposal), Some((_, &id, name, ..))) => call(
                &mut votes, &config, &map.def, &players, &bots, id, proposal, now,
            )
            .map(|question| {
                let text = format!("{} called a vote: {question}", name.0);
                info!("{text}");
                outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
            }),
            (VoteAction::Cast(yes), Some((_, &id, ..))) => match votes.running.as_mut() {
                Some(running) => {
                    running.votes.insert(id, *yes);
                    Ok(())
                }
                None => Err("no vote is running".to_string()),
            },
        };
        if let Err(why) = answer {
            stats.refused_requests = stats.refused_requests.saturating_add(1);
            outbox.write(Outgoing::To(
                request.client,
                ServerMessage::notice(&format!("vote: {why}")),
            ));
        }
    }
    let Some(running) = votes.running.as_mut() else {
        return;
    };
    // Who may vote now: a player who left takes their vote with them.
    let electorate: Vec<PlayerId> = players.iter().filter(|p| !p.4).map(|p| *p.1).collect();
    running.votes.retain(|id, _| electorate.contains(id));
    let yes = running.votes.values().filter(|v| **v).count();
    let no = running.votes.len() - yes;
    let seconds_left = (running.ends_at - now).max(0.0);
    let decided = match verdict(yes, no, electorate.len()) {
        Verdict::Open if seconds_left <= 0.0 => Verdict::Failed,
        v => v,
    };
    if decided == Verdict::Open {
        let tally = VoteTally {
            question: running.question.clone(),
            yes: yes.min(usize::from(u8::MAX)) as u8,
            no: no.min(usize::from(u8::MAX)) as u8,
            voters: electorate.len().min(usize::from(u8::MAX)) as u8,
            seconds_left: seconds_left.ceil() as u16,
        };
        if running.told.as_ref() != Some(&tally) {
            running.told = Some(tally.clone());
            outbox.write(Outgoing::ToPlaying(ServerMessage::Vote(Some(tally))));
        }
        return;
    }
    let Some(done) = votes.running.take() else {
        return;
    };
    outbox.write(Outgoing::ToPlaying(ServerMessage::Vote(None)));
    let passed = decided == Verdict::Passed;
    let text = format!(
        "vote {} ({yes} yes, {no} no): {}",
        if passed { "passed" } else { "failed" },
        done.question
    );
    info!("{text}");
    outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
    if passed {
        match done.outcome {
            Outcome::Map(source) => orders.0 = Some(MatchOrder::Map(source)),
            Outcome::NextMap => orders.0 = Some(MatchOrder::NextMap),
            Outcome::Restart => orders.0 = Some(MatchOrder::Restart),
            Outcome::Fraglimit(n) => config.rules.fraglimit = i32::from(n),
            Outcome::Mode(mode) => {
                config.rules.mode = mode;
                sides.deal(mode);
                orders.0 = Some(MatchOrder::Restart);
            }
            Outcome::Kick(id) => kick.kick(id, now, &mut stats),
        }
    }
}

/// What a kick by vote reaches: the player's connection.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct KickByVote<'w, 's> {
    server: ResMut<'w, RenetServer>,
    connections: Query<'w, 's, (&'static PlayerId, &'static mut Connection)>,
}

impl KickByVote<'_, '_> {
    /// Kicks the player, if still connected.
    fn kick(&mut self, id: PlayerId, now: f64, stats: &mut ServerStats) {
        for (player, mut conn) in &mut self.connections {
            if *player == id {
                conn.kick(&mut self.server, "kicked by vote".into(), now, stats);
            }
        }
    }
}

/// Everyone's side, dealt afresh when the mode changes.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct NewSides<'w, 's> {
    commands: Commands<'w, 's>,
    players: Query<'w, 's, (Entity, &'static PlayerId)>,
}

impl NewSides<'_, '_> {
    /// Teams for everyone in a team game, red and blue in turn by id; none otherwise.
    fn deal(&mut self, mode: GameMode) {
        let mut players: Vec<(Entity, PlayerId)> =
            self.players.iter().map(|(e, id)| (e, *id)).collect();
        players.sort_by_key(|p| p.1);
        for (n, (entity, _)) in players.into_iter().enumerate() {
            let mut player = self.commands.entity(entity);
            if mode.teams() {
                player.insert(if n % 2 == 0 { Team::Red } else { Team::Blue });
            } else {
                player.remove::<Team>();
            }
        }
    }
}

/// A mode in words.
fn mode_name(mode: GameMode) -> &'static str {
    match mode {
        GameMode::Deathmatch => "deathmatch",
        GameMode::TeamDeathmatch => "team deathmatch",
        GameMode::CaptureTheFlag => "capture the flag",
    }
}

/// Starts the vote `proposal` called by `caller`, or says why not; the question.
#[allow(clippy::too_many_arguments)]
fn call(
    votes: &mut Votes,
    config: &ServerConfig,
    map: &MapDef,
    players: &Voters,
    bots: &Query<(&PlayerId, &PlayerName), With<BotControlled>>,
    caller: PlayerId,
    proposal: &VoteProposal,
    now: f64,
) -> Result<String, String> {
    let rules = &config.votes;
    let kind = VoteKind::of(proposal);
    if rules.allowed.is_empty() {
        return Err("voting is off on this server".into());
    }
    if !rules.allowed.contains(&kind) {
        return Err(format!("{} votes are off on this server", kind.keyword()));
    }
    if votes.running.is_some() {
        return Err("a vote is already running".into());
    }
    if let Some(at) = votes.called_at.get(&caller) {
        let wait = at + f64::from(rules.cooldown) - now;
        if wait > 0.0 {
            return Err(format!("wait {:.0} s before calling another", wait.ceil()));
        }
    }
    let (outcome, question) = match proposal {
        VoteProposal::Map(name) => {
            let allowed = &config.rules.rotation;
            if !allowed.is_empty() && !allowed.iter().any(|m| m.eq_ignore_ascii_case(name)) {
                return Err(format!("{name} is not in this server's map list"));
            }
            let source = find_map_by_name(name)
                .and_then(|path| MapSource::load(&path))
                .map_err(|_| format!("this server has no map {name}"))?;
            playable(config.rules.mode, &source.def)?;
            let question = format!("change the map to {}?", source.def.name);
            (Outcome::Map(Box::new(source)), question)
        }
        VoteProposal::NextMap => (Outcome::NextMap, "go to the next map?".into()),
        VoteProposal::Restart => (Outcome::Restart, "restart the match?".into()),
        VoteProposal::Fraglimit(n) if *n > MAX_VOTED_FRAGLIMIT => {
            return Err(format!("a frag limit is 0 to {MAX_VOTED_FRAGLIMIT}"));
        }
        VoteProposal::Fraglimit(n) => (
            Outcome::Fraglimit(*n),
            format!("set the frag limit to {n}?"),
        ),
        VoteProposal::Mode(mode) if *mode == config.rules.mode => {
            return Err(format!("the mode is already {}", mode.keyword()));
        }
        VoteProposal::Mode(mode) => {
            playable(*mode, map)?;
            (
                Outcome::Mode(*mode),
                format!("play {} from a new match?", mode_name(*mode)),
            )
        }
        VoteProposal::Kick(target) => {
            if bots.iter().any(|(id, _)| id == target) {
                return Err("bots are the host's to remove".into());
            }
            let Some((_, _, name, admin, _)) = players.iter().find(|p| p.1 == target) else {
                return Err("no such player".into());
            };
            if admin {
                return Err(format!("{} is an admin", name.0));
            }
            if *target == caller {
                return Err("you cannot vote to kick yourself".into());
            }
            (Outcome::Kick(*target), format!("kick {}?", name.0))
        }
    };
    votes.called_at.insert(caller, now);
    votes.running = Some(Running {
        outcome,
        question: clean_text(&question, sightline_protocol::MAX_CHAT_LEN),
        votes: BTreeMap::from([(caller, true)]),
        ends_at: now + f64::from(rules.seconds),
        told: None,
    });
    Ok(question)
}

/// Votes: the one running, each player's last call, and the requests of each frame.
pub(crate) struct VotesPlugin;

impl Plugin for VotesPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Votes>()
            .add_message::<VoteRequest>()
            .add_systems(
                PreUpdate,
                run_votes.in_set(crate::sets::ReceiveStep::Requests),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vote_passes_on_more_than_half_and_fails_on_half_against() {
        assert_eq!(
            verdict(1, 0, 1),
            Verdict::Passed,
            "alone, the caller decides"
        );
        assert_eq!(verdict(1, 0, 2), Verdict::Open);
        assert_eq!(verdict(2, 0, 3), Verdict::Passed);
        assert_eq!(verdict(1, 1, 2), Verdict::Failed, "a tie cannot pass");
        assert_eq!(verdict(2, 2, 5), Verdict::Open);
        assert_eq!(verdict(1, 2, 4), Verdict::Failed);
        assert_eq!(verdict(3, 2, 5), Verdict::Passed);
    }
}
