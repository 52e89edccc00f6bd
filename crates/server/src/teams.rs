//! Sides in team games: a newcomer, player or bot, joins the smaller team; a player may
//! change side (`team red|blue|auto`) but never to make the teams uneven, and the server
//! evens teams that a departure left two apart.

use crate::config::MatchRules;
use sightline_combat::Team;
use sightline_protocol::TeamChoice;

/// The team with fewer members (red on a tie).
pub fn smaller_team(teams: impl IntoIterator<Item = Team>) -> Team {
    let (red, blue) = teams.into_iter().fold((0, 0), |(r, b), t| match t {
        Team::Red => (r + 1, b),
        Team::Blue => (r, b + 1),
    });
    if blue < red { Team::Blue } else { Team::Red }
}

/// The team a newcomer joins: in team games the smaller one, else none.
pub(crate) fn team_for_newcomer(
    rules: &MatchRules,
    teams: impl IntoIterator<Item = Team>,
) -> Option<Team> {
    rules.mode.teams().then(|| smaller_team(teams))
}

/// Why a player may not take the side it asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamRefusal {
    /// The match is everyone for themselves.
    NoTeams,
    /// It already plays on that side.
    Already(Team),
    /// That side would have more players than the other (`g_teamforcebalance`).
    Uneven(Team),
    /// Watching is no side: a change of role, not of team.
    Watching,
}

impl TeamRefusal {
    /// In words, for the player.
    pub fn describe(self) -> String {
        match self {
            Self::NoTeams => "this match has no teams".into(),
            Self::Already(team) => format!("you already play for {}", team.name()),
            Self::Uneven(team) => format!(
                "{} has more players; join {} or auto",
                team.name(),
                team.other().name()
            ),
            Self::Watching => "watching is not a side".into(),
        }
    }
}

/// Players on each side, red then blue.
pub fn head_count(teams: impl IntoIterator<Item = Team>) -> [usize; 2] {
    teams.into_iter().fold([0, 0], |[r, b], t| match t {
        Team::Red => [r + 1, b],
        Team::Blue => [r, b + 1],
    })
}

fn count_of(counts: [usize; 2], team: Team) -> usize {
    counts[usize::from(team == Team::Blue)]
}

/// The side a player on `current` may move to for `choice`, given the other players'
/// sides (`others`, the player left out), or why not. With `force_balance` a move is
/// refused where it would leave the side it joins with more players than the other.
pub fn switch_team(
    rules: &MatchRules,
    current: Option<Team>,
    choice: TeamChoice,
    others: [usize; 2],
) -> Result<Team, TeamRefusal> {
    if !rules.mode.teams() {
        return Err(TeamRefusal::NoTeams);
    }
    let target = match choice {
        TeamChoice::Spectator => return Err(TeamRefusal::Watching),
        TeamChoice::Red => Team::Red,
        TeamChoice::Blue => Team::Blue,
        // Staying put keeps an even match even.
        TeamChoice::Auto => match current {
            Some(t) if count_of(others, t) <= count_of(others, t.other()) => t,
            _ => smaller_team(
                std::iter::repeat_n(Team::Red, others[0])
                    .chain(std::iter::repeat_n(Team::Blue, others[1])),
            ),
        },
    };
    if current == Some(target) {
        return Err(TeamRefusal::Already(target));
    }
    if rules.team_force_balance && count_of(others, target) > count_of(others, target.other()) {
        return Err(TeamRefusal::Uneven(target));
    }
    Ok(target)
}

/// The side a spectator coming to play takes for `choice`, given the players' sides:
/// none in a game without teams (where any choice but a colour means "play"), else as a
/// player without a side would change to one.
pub fn side_for_joining(
    rules: &MatchRules,
    choice: TeamChoice,
    others: [usize; 2],
) -> Result<Option<Team>, TeamRefusal> {
    match (rules.mode.teams(), choice) {
        (_, TeamChoice::Spectator) => Err(TeamRefusal::Watching),
        (false, TeamChoice::Auto) => Ok(None),
        (false, _) => Err(TeamRefusal::NoTeams),
        (true, choice) => switch_team(rules, None, choice, others).map(Some),
    }
}

/// The side that has two or more players more than the other, if one has.
pub fn overfull_team(counts: [usize; 2]) -> Option<Team> {
    if counts[0] >= counts[1] + 2 {
        Some(Team::Red)
    } else if counts[1] >= counts[0] + 2 {
        Some(Team::Blue)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_combat::GameMode;

    fn tdm(force_balance: bool) -> MatchRules {
        MatchRules {
            mode: GameMode::TeamDeathmatch,
            team_force_balance: force_balance,
            ..MatchRules::default()
        }
    }

    #[test]
    fn a_side_is_taken_unless_it_would_make_the_teams_uneven() {
        use TeamChoice::*;
        let rules = tdm(true);
        // 2 against 2, this player on red: moving makes it 1 against 3.
        assert_eq!(
            switch_team(&rules, Some(Team::Red), Blue, [1, 2]),
            Err(TeamRefusal::Uneven(Team::Blue))
        );
        // 3 against 1: moving evens it.
        assert_eq!(
            switch_team(&rules, Some(Team::Red), Blue, [2, 1]),
            Ok(Team::Blue)
        );
        // 2 against 1: moving makes it 1 against 2, no more uneven than before.
        assert_eq!(
            switch_team(&rules, Some(Team::Red), Blue, [1, 1]),
            Ok(Team::Blue)
        );
        assert_eq!(
            switch_team(&rules, Some(Team::Red), Red, [3, 0]),
            Err(TeamRefusal::Already(Team::Red))
        );
        // Without the host's balance rule anything goes.
        assert_eq!(
            switch_team(&tdm(false), Some(Team::Red), Blue, [0, 5]),
            Ok(Team::Blue)
        );
        assert_eq!(
            switch_team(&MatchRules::default(), None, Red, [0, 0]),
            Err(TeamRefusal::NoTeams)
        );
    }

    #[test]
    fn auto_stays_on_an_even_match_and_leaves_a_crowded_side() {
        let rules = tdm(true);
        let auto = TeamChoice::Auto;
        assert_eq!(
            switch_team(&rules, Some(Team::Blue), auto, [2, 1]),
            Err(TeamRefusal::Already(Team::Blue)),
            "2 against 2 stays"
        );
        assert_eq!(
            switch_team(&rules, Some(Team::Blue), auto, [1, 2]),
            Ok(Team::Red),
            "1 against 3 moves"
        );
        assert_eq!(switch_team(&rules, None, auto, [1, 0]), Ok(Team::Blue));
    }

    #[test]
    fn a_spectator_comes_to_play_on_a_side_the_rules_allow() {
        use TeamChoice::*;
        let ffa = MatchRules::default();
        assert_eq!(side_for_joining(&ffa, Auto, [0, 0]), Ok(None), "just play");
        assert_eq!(
            side_for_joining(&ffa, Red, [0, 0]),
            Err(TeamRefusal::NoTeams)
        );
        let rules = tdm(true);
        assert_eq!(side_for_joining(&rules, Auto, [2, 1]), Ok(Some(Team::Blue)));
        assert_eq!(
            side_for_joining(&rules, Red, [2, 1]),
            Err(TeamRefusal::Uneven(Team::Red))
        );
        assert_eq!(side_for_joining(&rules, Red, [1, 1]), Ok(Some(Team::Red)));
        assert_eq!(
            side_for_joining(&rules, Spectator, [0, 0]),
            Err(TeamRefusal::Watching)
        );
        assert_eq!(
            switch_team(&rules, Some(Team::Red), Spectator, [0, 0]),
            Err(TeamRefusal::Watching),
            "watching is a change of role"
        );
    }

    #[test]
    fn teams_two_apart_are_overfull() {
        assert_eq!(overfull_team([0, 0]), None);
        assert_eq!(overfull_team([3, 2]), None);
        assert_eq!(overfull_team([4, 2]), Some(Team::Red));
        assert_eq!(overfull_team([0, 2]), Some(Team::Blue));
        assert_eq!(head_count([Team::Blue, Team::Red, Team::Blue]), [1, 2]);
    }

    #[test]
    fn newcomers_join_the_smaller_team() {
        assert_eq!(smaller_team([]), Team::Red);
        assert_eq!(smaller_team([Team::Red]), Team::Blue);
        assert_eq!(smaller_team([Team::Red, Team::Blue]), Team::Red);
        assert_eq!(smaller_team([Team::Blue, Team::Blue, Team::Red]), Team::Red);
    }

    #[test]
    fn only_team_games_have_teams() {
        let tdm = MatchRules {
            mode: GameMode::TeamDeathmatch,
            ..MatchRules::default()
        };
        assert_eq!(team_for_newcomer(&tdm, [Team::Red]), Some(Team::Blue));
        assert_eq!(team_for_newcomer(&MatchRules::default(), [Team::Red]), None);
    }
}
