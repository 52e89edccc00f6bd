//! Chat by audience: a player's `say` goes to everyone in the game, its `say_team` to its
//! own team; a spectator's line goes to the other spectators while a match runs (what they
//! see is no use to call out to a player) and to everyone in the intermission.

use crate::outbox::Outgoing;
use sightline_combat::Team;
use sightline_protocol::{MAX_CHAT_LEN, ServerMessage, clean_text};
use sightline_sim::PlayerId;

/// Who said a line.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Speaker<'a> {
    /// A player, on a side in team games.
    Player {
        /// Its id.
        id: PlayerId,
        /// Its side.
        team: Option<Team>,
    },
    /// A spectator, by the name it gave.
    Spectator {
        /// Its name.
        name: &'a str,
    },
}

/// Where a line goes and as what, cleaned; `None` when it says nothing. `team_only` is a
/// `say_team`; `intermission` whether the match is over.
pub(crate) fn route(
    speaker: Speaker,
    text: &str,
    team_only: bool,
    intermission: bool,
) -> Option<Outgoing> {
    let text = clean_text(text, MAX_CHAT_LEN);
    if text.is_empty() {
        return None;
    }
    Some(match speaker {
        Speaker::Player { id, team } => match team.filter(|_| team_only) {
            Some(team) => Outgoing::ToTeam(
                team,
                ServerMessage::Chat {
                    from: id,
                    text,
                    team: true,
                },
            ),
            // Without a team, `say_team` is a `say`, as in Quake 3's free-for-all.
            None => Outgoing::ToPlaying(ServerMessage::Chat {
                from: id,
                text,
                team: false,
            }),
        },
        Speaker::Spectator { name } => {
            let msg = ServerMessage::SpectatorChat {
                name: name.to_string(),
                text,
            };
            if intermission {
                Outgoing::ToPlaying(msg)
            } else {
                Outgoing::ToSpectators(msg)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: Speaker = Speaker::Player {
        id: PlayerId(3),
        team: Some(Team::Red),
    };

    #[test]
    fn a_team_line_goes_to_the_team_and_a_say_to_everyone() {
        let Some(Outgoing::ToTeam(Team::Red, ServerMessage::Chat { from, team, .. })) =
            route(RED, "push b", true, false)
        else {
            panic!("not to the red team");
        };
        assert_eq!((from, team), (PlayerId(3), true));
        assert!(matches!(
            route(RED, "gg", false, false),
            Some(Outgoing::ToPlaying(ServerMessage::Chat { team: false, .. }))
        ));
        let loner = Speaker::Player {
            id: PlayerId(1),
            team: None,
        };
        assert!(
            matches!(
                route(loner, "hi", true, false),
                Some(Outgoing::ToPlaying(ServerMessage::Chat { team: false, .. }))
            ),
            "no team: say_team is a say"
        );
    }

    #[test]
    fn spectators_speak_to_spectators_until_the_match_is_over() {
        let watcher = Speaker::Spectator { name: "eve" };
        assert!(matches!(
            route(watcher, "he is behind you", false, false),
            Some(Outgoing::ToSpectators(ServerMessage::SpectatorChat { .. }))
        ));
        assert!(matches!(
            route(watcher, "he is behind you", true, false),
            Some(Outgoing::ToSpectators(_))
        ));
        assert!(matches!(
            route(watcher, "gg all", false, true),
            Some(Outgoing::ToPlaying(ServerMessage::SpectatorChat { .. }))
        ));
    }

    #[test]
    fn a_line_of_nothing_goes_nowhere() {
        assert!(route(RED, "", false, false).is_none());
        assert!(route(RED, " \u{200b}\u{7} ", false, false).is_none());
        let Some(Outgoing::ToPlaying(ServerMessage::Chat { text, .. })) =
            route(RED, &"y".repeat(4 * MAX_CHAT_LEN), false, false)
        else {
            panic!("a long line is cut, not dropped");
        };
        assert_eq!(text.len(), MAX_CHAT_LEN);
    }
}
