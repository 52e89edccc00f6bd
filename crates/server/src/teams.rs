//! Sides in team games: a newcomer, player or bot, joins the smaller team.

use crate::rules::{GameMode, MatchRules};
use sightline_combat::Team;

/// The team with fewer members (red on a tie).
pub fn smaller_team(teams: impl IntoIterator<Item = Team>) -> Team {
    let (red, blue) =
        teams.into_iter().fold(
            (0, 0),
            |(r, b), t| if t.0 == 0 { (r + 1, b) } else { (r, b + 1) },
        );
    Team(u8::from(blue < red))
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
        assert_eq!(smaller_team([]), Team(0));
        assert_eq!(smaller_team([Team(0)]), Team(1));
        assert_eq!(smaller_team([Team(0), Team(1)]), Team(0));
        assert_eq!(smaller_team([Team(1), Team(1), Team(0)]), Team(0));
    }

    #[test]
    fn only_team_games_have_teams() {
        let tdm = MatchRules {
            mode: GameMode::TeamDeathmatch,
            ..MatchRules::default()
        };
        assert_eq!(team_for_newcomer(&tdm, [Team(0)]), Some(Team(1)));
        assert_eq!(team_for_newcomer(&MatchRules::default(), [Team(0)]), None);
    }
}
