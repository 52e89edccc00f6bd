//! The feeds the HUD shows, as the server tells them: the kill feed, chat, and the
//! match's state (limits, time left, the winner at intermission).

use crate::events::ShownEvent;
use crate::sets::ReceiveStep;
use crate::{FromServer, Roster};
use bevy::prelude::*;
use sightline_protocol::{PlayerEvent, ServerMessage, ServerTextKind};
use sightline_sim::SessionAppExt;
use std::collections::VecDeque;

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
    /// Seconds left; 0 for no limit.
    pub time_left_s: u16,
    /// Whether the match is over and the next about to start.
    pub intermission: bool,
    /// Who won the match just ended.
    pub winner: Option<String>,
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

/// Chat lines received, oldest first, with who said them; at most [`MAX_CHAT_LOG`].
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

/// Chat lines, named from the roster.
pub(crate) fn record_chat(
    mut inbound: MessageReader<FromServer>,
    roster: Res<Roster>,
    mut chat: ResMut<ChatLog>,
) {
    for FromServer(msg) in inbound.read() {
        let name = match msg {
            ServerMessage::Chat { from, .. } => roster.name(*from),
            ServerMessage::ServerText {
                kind: ServerTextKind::Say,
                ..
            } => "Host",
            ServerMessage::ServerText {
                kind: ServerTextKind::Motd,
                ..
            } => "Message of the day",
            _ => continue,
        };
        let (ServerMessage::Chat { text, .. } | ServerMessage::ServerText { text, .. }) = msg
        else {
            continue;
        };
        info!("{name}: {text}");
        chat.push(name.to_string(), text.clone());
    }
}

/// The match's limits and time, and who won the one just ended.
pub(crate) fn follow_match(
    mut inbound: MessageReader<FromServer>,
    mut match_info: ResMut<MatchInfo>,
) {
    for FromServer(msg) in inbound.read() {
        match msg {
            ServerMessage::Match {
                mode,
                fraglimit,
                time_left_s,
                intermission,
            } => {
                // The winner stays shown through the intermission it was announced in.
                let winner = if *intermission {
                    match_info.winner.take()
                } else {
                    None
                };
                *match_info = MatchInfo {
                    team_game: mode.teams(),
                    fraglimit: *fraglimit,
                    time_left_s: *time_left_s,
                    intermission: *intermission,
                    winner,
                };
            }
            ServerMessage::MatchEnded { winner } => {
                info!("{winner}");
                match_info.intermission = true;
                match_info.winner = Some(winner.clone());
            }
            _ => {}
        }
    }
}

/// The kill feed, the chat log and the match, from what the server says.
pub(crate) struct FeedsPlugin;

impl Plugin for FeedsPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<ChatLog>()
            .init_session_resource::<KillFeed>()
            .init_session_resource::<MatchInfo>()
            .add_systems(
                PreUpdate,
                (record_kills, record_chat, follow_match)
                    .chain()
                    .in_set(ReceiveStep::Feeds),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
