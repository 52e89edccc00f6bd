//! Sides in team games: a newcomer, player or bot, joins the smaller team.

use crate::config::MatchRules;
use sightline_combat::GameMode;
use sightline_combat::Team;

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
    (rules.mode == GameMode::TeamDeathmatch).then(|| smaller_team(teams))
}

#[cfg(test)]
mod tests {
    use super::*;

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
