//! The feeds the HUD shows, as the server tells them: the kill feed, chat, flags' news,
//! and the match's state (limits, time left, the winner at intermission).

use crate::events::ShownEvent;
use crate::sets::ReceiveStep;
use crate::{FromServer, Roster};
use bevy::prelude::*;
use sightline_combat::{FlagNews, Team};
use sightline_protocol::{
    Lifetime, MatchReport, PlayerEvent, ServerMessage, ServerTextKind, VoteTally, Warmup, name_key,
};
use sightline_sim::{PlayerId, SessionAppExt};
use std::collections::{BTreeSet, VecDeque};

/// One line of the kill feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillFeedEntry {
    /// Who killed.
    pub killer: String,
    /// Who died.
    pub victim: String,
    /// With which weapon.
    pub weapon: sightline_combat::WeaponKind,
}

/// The match as the server last described it.
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct MatchInfo {
    /// Teams (red and blue) rather than everyone for themselves.
    pub team_game: bool,
    /// Frags that win; 0 for none.
    pub fraglimit: u16,
    /// Capture the flag: captures, not frags, score.
    pub ctf: bool,
    /// Captures that win, in capture the flag; 0 for none.
    pub capturelimit: u16,
    /// Seconds left; 0 for no limit.
    pub time_left_s: u16,
    /// Whether the match is over and the next about to start.
    pub intermission: bool,
    /// Who won the match just ended.
    pub winner: Option<String>,
    /// Its awards: the title, who won it, and with what.
    pub awards: Vec<(String, String, String)>,
    /// How it went for this player.
    pub report: Option<MatchReport>,
    /// Before the match: the warmup or the countdown.
    pub warmup: Option<Warmup>,
    /// This player's lifetime kills and deaths as the match began (or as the server
    /// first told them in it), where the server keeps statistics: the intermission shows
    /// the change from there.
    pub lifetime_before: Option<Lifetime>,
}

impl MatchInfo {
    /// The change in the lifetime record over this match, from `now` (kills, deaths).
    pub fn lifetime_change(&self, now: Lifetime) -> Option<(i64, i64)> {
        let before = self.lifetime_before?;
        Some((
            i64::from(now.kills) - i64::from(before.kills),
            i64::from(now.deaths) - i64::from(before.deaths),
        ))
    }
}

/// The vote running, as the server last told it, and when that was (real seconds):
/// the HUD counts its time down from there.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct VoteInfo {
    /// The tally; `None` when no vote runs.
    pub tally: Option<VoteTally>,
    /// When it was told.
    pub told_at: f64,
}

impl VoteInfo {
    /// Seconds the vote has left at `now`.
    pub fn seconds_left(&self, now: f64) -> f64 {
        self.tally.as_ref().map_or(0.0, |t| {
            (f64::from(t.seconds_left) - (now - self.told_at)).max(0.0)
        })
    }
}

/// The vote running, from what the server says.
pub(crate) fn follow_votes(
    mut inbound: MessageReader<FromServer>,
    mut vote: ResMut<VoteInfo>,
    time: Res<Time<Real>>,
) {
    for FromServer(msg) in inbound.read() {
        if let ServerMessage::Vote(tally) = msg {
            *vote = VoteInfo {
                tally: tally.clone(),
                told_at: time.elapsed_secs_f64(),
            };
        }
    }
}

/// Kill feed lines kept; the HUD shows the newest few.
pub const MAX_KILL_FEED: usize = 32;
/// Chat lines kept; the HUD shows the newest few.
pub const MAX_CHAT_LOG: usize = 64;

/// Appends to a queue of at most `cap` items, dropping the oldest to make room: every
/// queue the server fills must stay bounded, whatever it sends.
fn push_bounded<T>(queue: &mut VecDeque<T>, cap: usize, item: T) {
    while queue.len() >= cap {
        queue.pop_front();
    }
    queue.push_back(item);
}

/// Deaths announced by the server, oldest first, at most [`MAX_KILL_FEED`].
#[derive(Resource, Debug, Default)]
pub struct KillFeed(pub VecDeque<KillFeedEntry>);

impl KillFeed {
    /// Adds a line, forgetting the oldest beyond [`MAX_KILL_FEED`].
    pub fn push(&mut self, entry: KillFeedEntry) {
        push_bounded(&mut self.0, MAX_KILL_FEED, entry);
    }
}

/// Chat lines received, oldest first, with who said them (empty for the game's own
/// notices); at most [`MAX_CHAT_LOG`].
#[derive(Resource, Debug, Default)]
pub struct ChatLog(pub VecDeque<(String, String)>);

impl ChatLog {
    /// Adds a line, forgetting the oldest beyond [`MAX_CHAT_LOG`].
    pub fn push(&mut self, name: String, text: String) {
        push_bounded(&mut self.0, MAX_CHAT_LOG, (name, text));
    }
}

/// Deaths, named from the roster, as the drawn world reaches them.
pub(crate) fn record_kills(
    mut shown: MessageReader<ShownEvent>,
    roster: Res<Roster>,
    mut feed: ResMut<KillFeed>,
) {
    for ShownEvent(event) in shown.read() {
        if let PlayerEvent::Killed {
            victim,
            killer,
            weapon,
        } = *event
        {
            feed.push(KillFeedEntry {
                killer: roster.name(killer).to_string(),
                victim: roster.name(victim).to_string(),
                weapon,
            });
        }
    }
}

/// Players and spectators whose chat this client does not show (`ignore NAME`): players
/// by id, so a rename does not escape it, spectators (who have none) by name.
#[derive(Resource, Debug, Default, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Players ignored.
    pub players: BTreeSet<PlayerId>,
    /// Spectators ignored, by [`name_key`].
    pub spectators: BTreeSet<String>,
}

/// Most players and spectators one client ignores: each `ignore` adds one.
pub const MAX_IGNORED: usize = 64;

impl Ignored {
    /// Ignores whoever `name` names: a player in the roster (by [`name_key`], so case and
    /// look-alike letters do not matter), else a spectator of that name. Whom it ignores,
    /// in words, or why it did not.
    pub fn ignore(&mut self, roster: &Roster, name: &str) -> Result<String, String> {
        if self.players.len() + self.spectators.len() >= MAX_IGNORED {
            return Err(format!(
                "already ignoring {MAX_IGNORED}; unignore someone first"
            ));
        }
        let key = name_key(name);
        if key.is_empty() {
            return Err("usage: ignore NAME".into());
        }
        match roster.0.iter().find(|(_, p)| name_key(&p.name) == key) {
            Some((id, p)) => {
                self.players.insert(*id);
                Ok(format!("ignoring {}", p.name))
            }
            None => {
                self.spectators.insert(key);
                Ok(format!("ignoring spectator {name}"))
            }
        }
    }

    /// Stops ignoring whoever `name` names; whether someone was.
    pub fn unignore(&mut self, roster: &Roster, name: &str) -> bool {
        let key = name_key(name);
        let player = roster
            .0
            .iter()
            .find(|(_, p)| name_key(&p.name) == key)
            .is_some_and(|(id, _)| self.players.remove(id));
        self.spectators.remove(&key) || player
    }
}

/// Chat lines, named from the roster, with whom they went to: a team line marked, a
/// spectator's named as one, the game's own notices unnamed. Lines from the ignored are
/// left out.
pub(crate) fn record_chat(
    mut inbound: MessageReader<FromServer>,
    roster: Res<Roster>,
    ignored: Res<Ignored>,
    mut chat: ResMut<ChatLog>,
) {
    for FromServer(msg) in inbound.read() {
        let (name, text) = match msg {
            ServerMessage::Chat { from, .. } if ignored.players.contains(from) => continue,
            ServerMessage::Chat { from, text, team } => {
                let name = roster.name(*from);
                let name = if *team {
                    format!("{name} (team)")
                } else {
                    name.to_string()
                };
                (name, text)
            }
            ServerMessage::SpectatorChat { name, .. }
                if ignored.spectators.contains(&name_key(name)) =>
            {
                continue;
            }
            ServerMessage::SpectatorChat { name, text } => (format!("{name} (spectator)"), text),
            ServerMessage::ServerText { kind, text } => match kind {
                ServerTextKind::Say => ("Host".to_string(), text),
                ServerTextKind::Motd => ("Message of the day".to_string(), text),
                ServerTextKind::Notice => (String::new(), text),
                ServerTextKind::Rcon => continue,
            },
            _ => continue,
        };
        info!("{name}: {text}");
        chat.push(name, text.clone());
    }
}

/// The match's limits and time, and who won the one just ended.
pub(crate) fn follow_match(
    mut inbound: MessageReader<FromServer>,
    mut match_info: ResMut<MatchInfo>,
    roster: Res<Roster>,
) {
    for FromServer(msg) in inbound.read() {
        match msg {
            ServerMessage::Match {
                mode,
                fraglimit,
                capturelimit,
                time_left_s,
                intermission,
                warmup,
            } => {
                // The winner and the awards stay shown through the intermission they
                // were announced in.
                let (was_over, kept_lifetime) =
                    (match_info.intermission, match_info.lifetime_before);
                let ended = if *intermission {
                    std::mem::take(&mut *match_info)
                } else {
                    MatchInfo::default()
                };
                *match_info = MatchInfo {
                    team_game: mode.teams(),
                    fraglimit: *fraglimit,
                    ctf: mode.flags(),
                    capturelimit: *capturelimit,
                    time_left_s: *time_left_s,
                    intermission: *intermission,
                    winner: ended.winner,
                    awards: ended.awards,
                    report: ended.report,
                    warmup: *warmup,
                    // Kept through the match and its intermission; a new match after
                    // it notes the record afresh.
                    lifetime_before: match (was_over, *intermission) {
                        (true, false) => None,
                        _ => kept_lifetime,
                    },
                };
            }
            ServerMessage::MatchEnded { winner } => {
                info!("{winner}");
                match_info.intermission = true;
                match_info.winner = Some(winner.clone());
            }
            ServerMessage::Awards(awards) => {
                match_info.awards = awards
                    .iter()
                    .map(|a| {
                        let line = (
                            a.kind.title().to_string(),
                            roster.name(a.player).to_string(),
                            a.kind.describe(a.value),
                        );
                        info!("{}: {} ({})", line.0, line.1, line.2);
                        line
                    })
                    .collect();
            }
            ServerMessage::YourMatch(report) => match_info.report = Some(report.clone()),
            _ => {}
        }
    }
}

/// A flag changed hands or place, as the server told it (capture the flag): for the
/// announcer.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagHeard {
    /// Whose flag.
    pub team: Team,
    /// What happened to it.
    pub news: FlagNews,
    /// Who did it.
    pub by: Option<PlayerId>,
}

/// The line the chat shows for a flag's news.
pub fn flag_line(team: Team, news: FlagNews, by: Option<&str>) -> String {
    let flag = team.name();
    match (news, by) {
        (FlagNews::Taken, Some(by)) => format!("{by} took the {flag} flag"),
        (FlagNews::Dropped, Some(by)) => format!("{by} dropped the {flag} flag"),
        (FlagNews::Returned, Some(by)) => format!("{by} returned the {flag} flag"),
        (FlagNews::Captured, Some(by)) => format!("{by} captured the {flag} flag!"),
        (FlagNews::Returned, None) => format!("The {flag} flag went home"),
        (_, None) => format!("The {flag} flag: {news:?}"),
    }
}

/// Flags' news: a line in the chat, and a [`FlagHeard`] for the announcer.
pub(crate) fn hear_flags(
    mut inbound: MessageReader<FromServer>,
    roster: Res<Roster>,
    mut chat: ResMut<ChatLog>,
    mut heard: MessageWriter<FlagHeard>,
) {
    for FromServer(msg) in inbound.read() {
        if let ServerMessage::Flag { team, news, by } = *msg {
            let name = by.map(|id| roster.name(id).to_string());
            chat.push(String::new(), flag_line(team, news, name.as_deref()));
            heard.write(FlagHeard { team, news, by });
        }
    }
}

/// Notes this player's lifetime record once per match, as it stands when first known in
/// the match (a new match starts with none noted).
pub(crate) fn note_lifetime_at_start(
    mut match_info: ResMut<MatchInfo>,
    roster: Res<Roster>,
    own: Query<&PlayerId, With<crate::LocalPlayer>>,
) {
    if match_info.intermission || match_info.lifetime_before.is_some() {
        return;
    }
    let now = own.single().ok().and_then(|id| roster.0.get(id)?.lifetime);
    if now.is_some() {
        match_info.lifetime_before = now;
    }
}

/// The kill feed, the chat log and the match, from what the server says.
pub(crate) struct FeedsPlugin;

impl Plugin for FeedsPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<ChatLog>()
            .init_session_resource::<Ignored>()
            .init_session_resource::<VoteInfo>()
            .init_session_resource::<KillFeed>()
            .init_session_resource::<MatchInfo>()
            .add_message::<FlagHeard>()
            .add_systems(
                PreUpdate,
                (
                    record_kills,
                    record_chat,
                    hear_flags,
                    follow_match,
                    note_lifetime_at_start,
                    follow_votes,
                )
                    .chain()
                    .in_set(ReceiveStep::Feeds),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifetime_record_s_change_counts_from_the_match_s_start() {
        let mut app = App::new();
        app.add_message::<FromServer>()
            .init_resource::<Roster>()
            .init_resource::<MatchInfo>()
            .add_systems(Update, (follow_match, note_lifetime_at_start).chain());
        let me = PlayerId(2);
        app.world_mut().spawn((me, crate::LocalPlayer));
        let entry = |kills, deaths| crate::RosterEntry {
            name: "me".into(),
            bot: false,
            ping_ms: None,
            frags: 0,
            deaths: 0,
            captures: 0,
            team: None,
            lifetime: Some(Lifetime { kills, deaths }),
        };
        let set = |app: &mut App, kills, deaths| {
            let mut roster = app.world_mut().resource_mut::<Roster>();
            roster.insert(me, entry(kills, deaths));
        };
        let tell = |app: &mut App, msg| {
            app.world_mut().write_message(FromServer(msg));
            app.update();
        };
        let state = |intermission| ServerMessage::Match {
            mode: sightline_combat::GameMode::Deathmatch,
            fraglimit: 20,
            capturelimit: 0,
            time_left_s: 0,
            intermission,
            warmup: None,
        };
        set(&mut app, 100, 50);
        app.update();
        set(&mut app, 107, 53);
        // The match's state, told every second, keeps what was noted.
        tell(&mut app, state(false));
        let info = app.world().resource::<MatchInfo>();
        assert_eq!(
            info.lifetime_change(Lifetime {
                kills: 107,
                deaths: 53
            }),
            Some((7, 3))
        );
        set(&mut app, 110, 54);
        tell(
            &mut app,
            ServerMessage::MatchEnded {
                winner: "me".into(),
            },
        );
        tell(&mut app, state(true));
        let info = app.world().resource::<MatchInfo>();
        assert!(info.intermission);
        assert_eq!(
            info.lifetime_change(Lifetime {
                kills: 110,
                deaths: 54
            }),
            Some((10, 4))
        );
        // The next match starts from where this one left it.
        tell(&mut app, state(false));
        let info = app.world().resource::<MatchInfo>();
        assert_eq!(
            info.lifetime_before,
            Some(Lifetime {
                kills: 110,
                deaths: 54
            })
        );
    }

    #[test]
    fn feeds_keep_only_their_newest_entries() {
        let mut chat = ChatLog::default();
        let mut kills = KillFeed::default();
        for i in 0..10_000u32 {
            chat.push("p".into(), i.to_string());
            kills.push(KillFeedEntry {
                killer: i.to_string(),
                victim: "v".into(),
                weapon: sightline_combat::WeaponKind::Rifle,
            });
        }
        assert_eq!(chat.0.len(), MAX_CHAT_LOG);
        assert_eq!(kills.0.len(), MAX_KILL_FEED);
        assert_eq!(chat.0.back().map(|l| l.1.as_str()), Some("9999"));
        let oldest_kept = 10_000 - MAX_KILL_FEED;
        assert_eq!(kills.0[0].killer, oldest_kept.to_string());
    }
}
