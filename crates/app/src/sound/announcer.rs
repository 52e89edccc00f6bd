//! The announcer: the frag lead taken, tied or lost (by the scoreboard, ours or our
//! team's against the best other), five minutes and one minute left (by the match clock)
//! and the match won or over, and the flags taken, returned and captured. What to say is
//! decided by pure functions of the scores, the clock and the flags' news; each
//! announcement is a jingle of its own ([`super::synth`]).

use bevy::prelude::*;
use sightline_client::{MatchInfo, Roster};
use sightline_combat::{FlagNews, Team};
use sightline_sim::PlayerId;

/// Something the announcer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Announcement {
    /// We (or our team) took the frag lead.
    LeadTaken,
    /// We are tied for the lead.
    LeadTied,
    /// We lost the lead.
    LeadLost,
    /// Five minutes left.
    FiveMinutes,
    /// One minute left.
    OneMinute,
    /// The match is over and we won it.
    MatchWon,
    /// The match is over; someone else won.
    MatchOver,
    /// Our side took the enemy's flag (or, to a spectator, a flag was taken).
    FlagTaken,
    /// The enemy took our flag.
    FlagLost,
    /// A flag went home.
    FlagReturned,
    /// Our side captured (or, to a spectator, someone did).
    TeamScored,
    /// The enemy captured.
    EnemyScored,
}

impl Announcement {
    /// Every announcement.
    pub const ALL: [Announcement; 12] = [
        Announcement::LeadTaken,
        Announcement::LeadTied,
        Announcement::LeadLost,
        Announcement::FiveMinutes,
        Announcement::OneMinute,
        Announcement::MatchWon,
        Announcement::MatchOver,
        Announcement::FlagTaken,
        Announcement::FlagLost,
        Announcement::FlagReturned,
        Announcement::TeamScored,
        Announcement::EnemyScored,
    ];
}

/// Where we stand against the best of the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Nobody to lead.
    Alone,
    /// Level with the best, nobody having scored: the start of a match.
    Level,
    /// Ahead of everyone.
    Leading,
    /// Level with the best, frags scored.
    Tied,
    /// Someone is ahead.
    Behind,
}

/// Our standing with `own` frags against the others' best, if there are others.
pub fn standing(own: i32, best_other: Option<i32>) -> Standing {
    match best_other {
        None => Standing::Alone,
        Some(best) if own > best => Standing::Leading,
        Some(best) if own < best => Standing::Behind,
        Some(_) if own <= 0 => Standing::Level,
        Some(_) => Standing::Tied,
    }
}

/// What to announce when our standing goes from `before` (`None`: just joined) to `now`:
/// taking the lead, being caught or catching up, losing it. Joining, a new match's reset
/// and staying put say nothing.
pub fn lead_change(before: Option<Standing>, now: Standing) -> Option<Announcement> {
    use Standing::*;
    let before = before?;
    if before == now {
        return None;
    }
    match (before, now) {
        (_, Leading) => Some(Announcement::LeadTaken),
        (Leading | Behind, Tied) => Some(Announcement::LeadTied),
        (Leading | Tied, Behind) => Some(Announcement::LeadLost),
        _ => None,
    }
}

/// Seconds left at which the clock is announced, and what is said.
const CLOCK_CALLS: [(u16, Announcement); 2] = [
    (300, Announcement::FiveMinutes),
    (60, Announcement::OneMinute),
];

/// What to announce when the match clock goes from `before` seconds left (`None`: not
/// seen yet) to `now`: a call when it crosses five minutes or one minute left, even if a
/// second was skipped. No limit (0) and joining late say nothing.
pub fn clock_call(before: Option<u16>, now: u16) -> Option<Announcement> {
    let before = before?;
    if now == 0 {
        return None;
    }
    CLOCK_CALLS
        .iter()
        .find(|&&(at, _)| before > at && now <= at)
        .map(|&(_, call)| call)
}

/// What to announce at the end of a match: won if we (or our team) led.
pub fn match_end(standing: Standing) -> Announcement {
    match standing {
        Standing::Leading | Standing::Alone => Announcement::MatchWon,
        _ => Announcement::MatchOver,
    }
}

/// What to announce when `flag`'s flag has `news`, to a listener on side `ours` (none: a
/// spectator, who hears each as good news). A drop is left to the chat.
pub fn flag_call(flag: Team, news: FlagNews, ours: Option<Team>) -> Option<Announcement> {
    let our_flag = ours == Some(flag);
    Some(match news {
        FlagNews::Taken if our_flag => Announcement::FlagLost,
        FlagNews::Taken => Announcement::FlagTaken,
        FlagNews::Returned => Announcement::FlagReturned,
        FlagNews::Captured if our_flag => Announcement::EnemyScored,
        FlagNews::Captured => Announcement::TeamScored,
        FlagNews::Dropped => return None,
    })
}

/// Our frags and the best other's in free-for-all; our team's total and the other's in
/// team games (of captures, in capture the flag). `None` before our own line is on the
/// roster.
pub fn scores(
    roster: &Roster,
    me: PlayerId,
    team_game: bool,
    flags: bool,
) -> Option<(i32, Option<i32>)> {
    let mine = roster.0.get(&me)?;
    let points = |p: &sightline_client::RosterEntry| {
        if flags {
            i32::from(p.captures)
        } else {
            p.frags
        }
    };
    match (team_game, mine.team) {
        (true, Some(team)) => {
            let total = |t: Team| -> i32 {
                roster
                    .0
                    .values()
                    .filter(|p| p.team == Some(t))
                    .map(points)
                    .sum()
            };
            let other = match team {
                Team::Red => Team::Blue,
                Team::Blue => Team::Red,
            };
            let others_present = roster.0.values().any(|p| p.team == Some(other));
            Some((total(team), others_present.then(|| total(other))))
        }
        _ => Some((
            mine.frags,
            roster
                .0
                .iter()
                .filter(|(id, _)| **id != me)
                .map(|(_, p)| p.frags)
                .max(),
        )),
    }
}

/// What the announcer last knew, for this session.
#[derive(Resource, Debug, Default)]
pub struct AnnouncerState {
    /// Our standing at the last scoreboard.
    standing: Option<Standing>,
    /// Seconds left at the last match update.
    time_left: Option<u16>,
    /// Whether the match was in its intermission at the last update.
    intermission: Option<bool>,
}

/// The announcements due now, from the scoreboard and the match's state, if any.
pub fn announcements(
    state: &mut AnnouncerState,
    roster: &Roster,
    match_info: &MatchInfo,
    me: Option<PlayerId>,
) -> Vec<Announcement> {
    let mut said = Vec::new();
    let now = me
        .and_then(|me| scores(roster, me, match_info.team_game, match_info.ctf))
        .map(|(own, best)| standing(own, best));
    let was_intermission = state.intermission.replace(match_info.intermission);
    if match_info.intermission {
        if was_intermission == Some(false) {
            said.push(match_end(now.or(state.standing).unwrap_or(Standing::Level)));
        }
        // Scores reset with the next match: start again from them, silently.
        state.standing = None;
        state.time_left = None;
        return said;
    }
    if let Some(now) = now {
        said.extend(lead_change(state.standing, now));
        state.standing = Some(now);
    }
    let before = state.time_left.replace(match_info.time_left_s);
    said.extend(clock_call(before, match_info.time_left_s));
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use Announcement::*;
    use sightline_client::RosterEntry;

    /// Announcements over a sequence of (our frags, best other's) scoreboards.
    fn over(scores: &[(i32, i32)]) -> Vec<Option<Announcement>> {
        let mut before = None;
        scores
            .iter()
            .map(|&(own, best)| {
                let now = standing(own, Some(best));
                let said = lead_change(before, now);
                before = Some(now);
                said
            })
            .collect()
    }

    #[test]
    fn the_lead_is_announced_when_it_changes_hands() {
        assert_eq!(
            over(&[
                (0, 0),
                (1, 0),
                (2, 0),
                (2, 2),
                (2, 3),
                (3, 3),
                (4, 3),
                (4, 5)
            ]),
            vec![
                None,
                Some(LeadTaken),
                None,
                Some(LeadTied),
                Some(LeadLost),
                Some(LeadTied),
                Some(LeadTaken),
                Some(LeadLost)
            ]
        );
        // Joining behind or level says nothing; nor does a new match's reset to zero.
        assert_eq!(over(&[(0, 5), (0, 5)]), vec![None, None]);
        assert_eq!(over(&[(3, 1), (0, 0), (0, 1)]), vec![None, None, None]);
        // Behind, then tied at zero after a suicide made the leader's lead go away.
        assert_eq!(over(&[(-1, 0), (0, 0)]), vec![None, None]);
        assert_eq!(standing(5, None), Standing::Alone);
    }

    #[test]
    fn the_clock_is_called_at_five_minutes_and_one_minute_left() {
        let calls = |times: &[u16]| -> Vec<Announcement> {
            let mut before = None;
            times
                .iter()
                .filter_map(|&t| clock_call(before.replace(t), t))
                .collect()
        };
        assert_eq!(calls(&[302, 301, 300, 299]), vec![FiveMinutes]);
        assert_eq!(calls(&[305, 298]), vec![FiveMinutes], "a skipped second");
        assert_eq!(calls(&[62, 61, 60, 59, 1, 0]), vec![OneMinute]);
        assert_eq!(calls(&[600, 400, 200, 30]), vec![FiveMinutes, OneMinute]);
        assert_eq!(
            calls(&[290, 250]),
            vec![],
            "joined with less than five left"
        );
        assert_eq!(calls(&[0, 0, 0]), vec![], "no time limit");
        assert_eq!(
            calls(&[61, 0]),
            vec![],
            "the clock ran out: that is the match end"
        );
    }

    #[test]
    fn flags_are_announced_for_the_listener_s_side() {
        let (red, blue) = (Some(Team::Red), Some(Team::Blue));
        assert_eq!(flag_call(Team::Blue, FlagNews::Taken, red), Some(FlagTaken));
        assert_eq!(flag_call(Team::Blue, FlagNews::Taken, blue), Some(FlagLost));
        assert_eq!(
            flag_call(Team::Blue, FlagNews::Captured, red),
            Some(TeamScored)
        );
        assert_eq!(
            flag_call(Team::Blue, FlagNews::Captured, blue),
            Some(EnemyScored)
        );
        assert_eq!(
            flag_call(Team::Red, FlagNews::Returned, None),
            Some(FlagReturned)
        );
        assert_eq!(flag_call(Team::Red, FlagNews::Dropped, red), None);
        assert_eq!(
            flag_call(Team::Red, FlagNews::Captured, None),
            Some(TeamScored)
        );
    }

    fn entry(frags: i32, team: Option<Team>) -> RosterEntry {
        RosterEntry {
            name: "p".into(),
            bot: false,
            ping_ms: None,
            frags,
            deaths: 0,
            team,
            captures: 0,
            lifetime: None,
        }
    }

    #[test]
    fn a_match_is_announced_from_its_scoreboards_and_clock() {
        let me = PlayerId(1);
        let mut roster = Roster::default();
        roster.insert(me, entry(0, None));
        roster.insert(PlayerId(2), entry(0, None));
        let mut info = MatchInfo {
            time_left_s: 301,
            ..default()
        };
        let mut state = AnnouncerState::default();
        let mut step =
            |roster: &Roster, info: &MatchInfo| announcements(&mut state, roster, info, Some(me));
        assert_eq!(step(&roster, &info), vec![]);
        roster.0.get_mut(&me).unwrap().frags = 1;
        info.time_left_s = 300;
        assert_eq!(step(&roster, &info), vec![LeadTaken, FiveMinutes]);
        info.time_left_s = 299;
        assert_eq!(step(&roster, &info), vec![]);
        info.intermission = true;
        assert_eq!(step(&roster, &info), vec![MatchWon]);
        assert_eq!(step(&roster, &info), vec![], "once");
        // The next match: scores back to zero, nothing said until someone scores.
        roster.0.get_mut(&me).unwrap().frags = 0;
        info.intermission = false;
        info.time_left_s = 600;
        assert_eq!(step(&roster, &info), vec![]);
        roster.0.get_mut(&PlayerId(2)).unwrap().frags = 1;
        assert_eq!(step(&roster, &info), vec![]);
        info.intermission = true;
        assert_eq!(step(&roster, &info), vec![MatchOver]);
    }

    #[test]
    fn team_games_compare_team_totals() {
        let me = PlayerId(1);
        let mut roster = Roster::default();
        roster.insert(me, entry(1, Some(Team::Red)));
        roster.insert(PlayerId(2), entry(3, Some(Team::Red)));
        roster.insert(PlayerId(3), entry(5, Some(Team::Blue)));
        assert_eq!(scores(&roster, me, true, false), Some((4, Some(5))));
        assert_eq!(scores(&roster, me, false, false), Some((1, Some(5))));
        assert_eq!(
            scores(&roster, PlayerId(9), false, false),
            None,
            "not on the roster yet"
        );
        roster.remove(PlayerId(3));
        assert_eq!(
            scores(&roster, me, true, false),
            Some((4, None)),
            "nobody on blue"
        );
    }
}
