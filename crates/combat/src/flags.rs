//! Capture the flag: each team's flag on its base, taken by an enemy's touch, dropped
//! where its carrier dies, sent home by its own team's touch or when it has lain too
//! long, and captured by a carrier who reaches its own base while its own flag is home.
//! [`step_flags`] is the rule as a pure function of the flags, the players and dt.

use crate::Team;
use crate::items::within_reach;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use sightline_map::FlagBases;
use sightline_sim::PlayerId;

/// How close (horizontally, m) a player must come to a flag or a base to touch it.
pub const FLAG_REACH: f32 = 1.2;
/// Seconds a dropped flag lies before it goes home by itself (Quake 3's 30).
pub const FLAG_RETURN_TIME: f32 = 30.0;

/// Where a flag is.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum FlagAt {
    /// On its base.
    #[default]
    Home,
    /// Carried by an enemy.
    Carried(PlayerId),
    /// Lying where its carrier died, for `left` more seconds.
    Dropped {
        /// Where it lies.
        pos: Vec3,
        /// Seconds until it goes home by itself.
        left: f32,
    },
}

/// What happened to a flag: for the announcer, the feed and the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FlagNews {
    /// An enemy took it, from its base or where it lay.
    Taken,
    /// Its carrier died (or left its team) and it fell.
    Dropped,
    /// It went home: touched by its own team, or it lay too long, or its carrier left.
    Returned,
    /// Its carrier brought it to their own base: a point for the carrier's team.
    Captured,
}

/// Both flags, and their bases; no bases when the match is not capture the flag.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Default)]
pub struct Flags {
    /// The bases of the map being played, while the mode is capture the flag.
    pub bases: Option<FlagBases>,
    /// Where each team's flag is, by [`Team::index`].
    pub at: [FlagAt; 2],
}

impl Flags {
    /// Flags on `bases`, both home (none when `bases` is `None`).
    pub fn on(bases: Option<FlagBases>) -> Self {
        Self {
            bases,
            at: [FlagAt::Home; 2],
        }
    }

    /// Whether capture the flag is being played.
    pub fn active(&self) -> bool {
        self.bases.is_some()
    }

    /// Where `team`'s base stands.
    pub fn base(&self, team: Team) -> Option<Vec3> {
        self.bases.map(|b| base_of(&b, team))
    }

    /// The flag `player` carries, if any.
    pub fn carried_by(&self, player: PlayerId) -> Option<Team> {
        Team::ALL
            .into_iter()
            .find(|t| self.at[t.index()] == FlagAt::Carried(player))
    }
}

/// `team`'s base on `bases`.
pub fn base_of(bases: &FlagBases, team: Team) -> Vec3 {
    match team {
        Team::Red => bases.red,
        Team::Blue => bases.blue,
    }
}

/// Whether feet at `feet` touch a flag or a base at `at`.
fn touches(feet: Vec3, at: Vec3) -> bool {
    within_reach(feet, at, FLAG_REACH)
}

/// A player as the flags see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagToucher {
    /// Who.
    pub id: PlayerId,
    /// Its side.
    pub team: Team,
    /// Its feet.
    pub pos: Vec3,
    /// Whether it is alive.
    pub alive: bool,
}

/// One tick of the flags: every change, in the order it happened, as (whose flag, what,
/// who did it). `players` must be in id order (two touching at once: the lower id
/// acts, wherever each is stored); `ground` finds the floor under a point.
pub fn step_flags(
    flags: &mut Flags,
    players: &[FlagToucher],
    dt: f32,
    ground: impl Fn(Vec3) -> Vec3,
) -> Vec<(Team, FlagNews, Option<PlayerId>)> {
    let mut news = Vec::new();
    let Some(bases) = flags.bases else {
        return news;
    };
    let find = |id: PlayerId| players.iter().find(|p| p.id == id);
    // Carriers first: one who died, left or changed side drops it; one home with their
    // own flag there scores.
    for team in Team::ALL {
        let FlagAt::Carried(by) = flags.at[team.index()] else {
            continue;
        };
        match find(by) {
            None => {
                flags.at[team.index()] = FlagAt::Home;
                news.push((team, FlagNews::Returned, None));
            }
            Some(c) if !c.alive || c.team == team => {
                flags.at[team.index()] = FlagAt::Dropped {
                    pos: ground(c.pos),
                    left: FLAG_RETURN_TIME,
                };
                news.push((team, FlagNews::Dropped, Some(by)));
            }
            Some(c)
                if flags.at[c.team.index()] == FlagAt::Home
                    && touches(c.pos, base_of(&bases, c.team)) =>
            {
                flags.at[team.index()] = FlagAt::Home;
                news.push((team, FlagNews::Captured, Some(by)));
            }
            Some(_) => {}
        }
    }
    // Then flags at rest: taken by an enemy's touch; a dropped one sent home by its own
    // side's touch, or by its time running out.
    for team in Team::ALL {
        let (at, lying) = match &mut flags.at[team.index()] {
            FlagAt::Home => (base_of(&bases, team), false),
            FlagAt::Dropped { pos, left } => {
                *left -= dt;
                if *left <= 0.0 {
                    flags.at[team.index()] = FlagAt::Home;
                    news.push((team, FlagNews::Returned, None));
                    continue;
                }
                (*pos, true)
            }
            FlagAt::Carried(_) => continue,
        };
        // A carrier holds one flag: a second is not taken while carrying.
        let toucher = players.iter().find(|p| {
            p.alive
                && touches(p.pos, at)
                && (p.team != team && flags.carried_by(p.id).is_none() || lying && p.team == team)
        });
        if let Some(p) = toucher {
            if p.team == team {
                flags.at[team.index()] = FlagAt::Home;
                news.push((team, FlagNews::Returned, Some(p.id)));
            } else {
                flags.at[team.index()] = FlagAt::Carried(p.id);
                news.push((team, FlagNews::Taken, Some(p.id)));
            }
        }
    }
    news
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED_BASE: Vec3 = Vec3::new(-20.0, 0.0, 0.0);
    const BLUE_BASE: Vec3 = Vec3::new(20.0, 0.0, 0.0);

    fn flags() -> Flags {
        Flags::on(Some(FlagBases {
            red: RED_BASE,
            blue: BLUE_BASE,
        }))
    }

    fn at(id: u8, team: Team, pos: Vec3) -> FlagToucher {
        FlagToucher {
            id: PlayerId(id),
            team,
            pos,
            alive: true,
        }
    }

    fn step(f: &mut Flags, players: &[FlagToucher]) -> Vec<(Team, FlagNews, Option<PlayerId>)> {
        step_flags(f, players, 0.1, |p| p)
    }

    #[test]
    fn a_flag_is_taken_carried_home_and_captured() {
        let mut f = flags();
        let raider = |pos| [at(1, Team::Red, pos)];
        assert_eq!(
            step(&mut f, &raider(BLUE_BASE)),
            vec![(Team::Blue, FlagNews::Taken, Some(PlayerId(1)))]
        );
        assert_eq!(f.carried_by(PlayerId(1)), Some(Team::Blue));
        assert!(step(&mut f, &raider(Vec3::ZERO)).is_empty(), "on the way");
        assert_eq!(
            step(&mut f, &raider(RED_BASE)),
            vec![(Team::Blue, FlagNews::Captured, Some(PlayerId(1)))]
        );
        assert_eq!(f.at, [FlagAt::Home; 2]);
    }

    #[test]
    fn no_capture_while_ones_own_flag_is_away() {
        let mut f = flags();
        f.at[Team::Blue.index()] = FlagAt::Carried(PlayerId(1));
        f.at[Team::Red.index()] = FlagAt::Carried(PlayerId(2));
        let players = [at(1, Team::Red, RED_BASE), at(2, Team::Blue, Vec3::ZERO)];
        assert!(step(&mut f, &players).is_empty());
        assert_eq!(f.at[Team::Blue.index()], FlagAt::Carried(PlayerId(1)));
    }

    #[test]
    fn a_dead_carrier_drops_it_and_its_team_returns_it_by_touch_or_by_time() {
        let mut f = flags();
        f.at[Team::Blue.index()] = FlagAt::Carried(PlayerId(1));
        let spot = Vec3::new(3.0, 0.0, 0.0);
        let dead = FlagToucher {
            alive: false,
            ..at(1, Team::Red, spot)
        };
        assert_eq!(
            step(&mut f, &[dead]),
            vec![(Team::Blue, FlagNews::Dropped, Some(PlayerId(1)))]
        );
        // The dead do not pick it up again; a team mate of the flag's sends it home.
        assert!(step(&mut f, &[dead]).is_empty());
        assert_eq!(
            step(&mut f, &[dead, at(2, Team::Blue, spot)]),
            vec![(Team::Blue, FlagNews::Returned, Some(PlayerId(2)))]
        );
        // Dropped again and left alone, it goes home when its time runs out.
        f.at[Team::Blue.index()] = FlagAt::Dropped {
            pos: spot,
            left: 0.15,
        };
        assert!(step(&mut f, &[]).is_empty());
        assert_eq!(
            step(&mut f, &[]),
            vec![(Team::Blue, FlagNews::Returned, None)]
        );
    }

    #[test]
    fn a_dropped_flag_is_taken_by_an_enemy_and_the_lower_id_wins_a_tie() {
        let mut f = flags();
        let spot = Vec3::new(3.0, 0.0, 0.0);
        f.at[Team::Blue.index()] = FlagAt::Dropped {
            pos: spot,
            left: 10.0,
        };
        let news = step(&mut f, &[at(4, Team::Red, spot), at(7, Team::Red, spot)]);
        assert_eq!(news, vec![(Team::Blue, FlagNews::Taken, Some(PlayerId(4)))]);
    }

    #[test]
    fn a_carrier_who_leaves_or_changes_side_lets_it_go() {
        let mut f = flags();
        f.at[Team::Blue.index()] = FlagAt::Carried(PlayerId(1));
        assert_eq!(
            step(&mut f, &[]),
            vec![(Team::Blue, FlagNews::Returned, None)]
        );
        f.at[Team::Blue.index()] = FlagAt::Carried(PlayerId(1));
        let turned = at(1, Team::Blue, Vec3::new(5.0, 0.0, 0.0));
        assert_eq!(
            step(&mut f, &[turned])[0],
            (Team::Blue, FlagNews::Dropped, Some(PlayerId(1)))
        );
    }

    #[test]
    fn nobody_takes_their_own_flag_from_its_base_nor_carries_two() {
        let mut f = flags();
        assert!(step(&mut f, &[at(1, Team::Blue, BLUE_BASE)]).is_empty());
        // A red carrying blue's flag over a dropped red one: it sends its own home, and
        // takes nothing more.
        let spot = Vec3::new(3.0, 0.0, 0.0);
        f.at[Team::Blue.index()] = FlagAt::Carried(PlayerId(1));
        f.at[Team::Red.index()] = FlagAt::Dropped {
            pos: spot,
            left: 10.0,
        };
        assert_eq!(
            step(&mut f, &[at(1, Team::Red, spot)]),
            vec![(Team::Red, FlagNews::Returned, Some(PlayerId(1)))]
        );
        assert_eq!(f.carried_by(PlayerId(1)), Some(Team::Blue));
    }

    #[test]
    fn without_bases_nothing_happens() {
        let mut f = Flags::default();
        assert!(step(&mut f, &[at(1, Team::Red, BLUE_BASE)]).is_empty());
    }
}
