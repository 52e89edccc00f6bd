//! How a match went: each player's shots and hits by weapon, damage dealt, kills in a
//! row and flags captured, counted from combat as it happens; at the match's end the
//! awards (most frags, best accuracy, most damage, longest streak, most captures) told to
//! everyone, spectators included as their late world reaches it, and each player told
//! their own figures.

use crate::connection::Connection;
use crate::outbox::Outgoing;
use crate::rules::MatchState;
use crate::spectators::{SpectatorFeed, tell_match};
use bevy::prelude::*;
use sightline_combat::{CombatEvent, CombatSystems, FlagNews, Score, Team, WeaponKind};
use sightline_protocol::{Award, AwardKind, MAX_AWARDS, MatchReport, ServerMessage};
use sightline_sim::{PlayerId, SimSet, Tick};
use std::collections::BTreeMap;

/// Shots a player must fire in a match for their accuracy to be in the running.
pub const MIN_SHOTS_FOR_ACCURACY: u32 = 10;

const WEAPONS: usize = WeaponKind::ALL.len();

/// One player's match so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PlayerMatch {
    /// Shots fired, by weapon.
    pub shots: [u16; WEAPONS],
    /// Shots that struck an opponent, by weapon: a shotgun's pellets or a rocket's
    /// splash on several players in one tick count once.
    pub hits: [u16; WEAPONS],
    /// Damage dealt to opponents.
    pub damage: u32,
    /// Kills since the last death.
    pub streak: u16,
    /// The most kills without dying.
    pub best_streak: u16,
    /// Enemy flags brought home.
    pub captures: u16,
    /// The tick of each weapon's last counted hit, plus one (0: none).
    last_hit: [u32; WEAPONS],
}

impl PlayerMatch {
    /// Accuracy in tenths of a percent, over every weapon; `None` below
    /// [`MIN_SHOTS_FOR_ACCURACY`] shots.
    pub fn accuracy_permille(&self) -> Option<u32> {
        let shots: u32 = self.shots.iter().map(|s| u32::from(*s)).sum();
        let hits: u32 = self.hits.iter().map(|h| u32::from(*h)).sum();
        (shots >= MIN_SHOTS_FOR_ACCURACY).then(|| (hits.min(shots) * 1000) / shots)
    }

    /// The player's own figures, as sent.
    pub fn report(&self) -> MatchReport {
        MatchReport {
            damage: self.damage,
            best_streak: self.best_streak,
            weapons: WeaponKind::ALL
                .into_iter()
                .filter(|w| self.shots[w.index()] > 0)
                .map(|w| {
                    let shots = self.shots[w.index()];
                    (w, shots, self.hits[w.index()].min(shots))
                })
                .collect(),
        }
    }
}

/// Every player's match so far, by id.
#[derive(Resource, Debug, Default)]
pub struct MatchRecords(pub BTreeMap<PlayerId, PlayerMatch>);

impl MatchRecords {
    /// Counts one tick's combat events, `tick` being that tick and `team_of` each
    /// player's side.
    pub fn count(
        &mut self,
        event: &CombatEvent,
        tick: u32,
        team_of: impl Fn(PlayerId) -> Option<Team>,
    ) {
        let opponents =
            |a: PlayerId, b: PlayerId| a != b && (team_of(a).is_none() || team_of(a) != team_of(b));
        match *event {
            CombatEvent::Fired {
                shooter, weapon, ..
            } => {
                let shots = &mut self.0.entry(shooter).or_default().shots[weapon.index()];
                *shots = shots.saturating_add(1);
            }
            CombatEvent::Hit {
                shooter,
                target,
                damage,
                weapon,
                ..
            } if opponents(shooter, target) => {
                let record = self.0.entry(shooter).or_default();
                record.damage = record.damage.saturating_add(damage.max(0.0).round() as u32);
                let last = &mut record.last_hit[weapon.index()];
                if *last != tick.wrapping_add(1) {
                    *last = tick.wrapping_add(1);
                    let hits = &mut record.hits[weapon.index()];
                    *hits = hits.saturating_add(1);
                }
            }
            CombatEvent::Killed { victim, killer, .. } => {
                self.0.entry(victim).or_default().streak = 0;
                if opponents(killer, victim) {
                    let record = self.0.entry(killer).or_default();
                    record.streak = record.streak.saturating_add(1);
                    record.best_streak = record.best_streak.max(record.streak);
                }
            }
            CombatEvent::Flag {
                news: FlagNews::Captured,
                by: Some(by),
                ..
            } => {
                let record = self.0.entry(by).or_default();
                record.captures = record.captures.saturating_add(1);
            }
            _ => {}
        }
    }

    /// The awards among the players still in the game (`present`, with their frags), in
    /// a fixed order, each to the best (on a tie the higher id, as the match's winner is
    /// named); an award nobody earned is left out.
    pub fn awards(&self, present: &[(PlayerId, i32)]) -> Vec<Award> {
        let record = |id: &PlayerId| self.0.get(id).copied().unwrap_or_default();
        let best = |kind: AwardKind, value: &dyn Fn(PlayerId, i32) -> Option<u32>| {
            present
                .iter()
                .filter_map(|&(id, frags)| Some((id, value(id, frags)?)))
                .max_by_key(|&(id, v)| (v, id))
                .map(|(player, value)| Award {
                    kind,
                    player,
                    value,
                })
        };
        let mut awards: Vec<Award> = [
            best(AwardKind::MostFrags, &|_, frags| {
                u32::try_from(frags).ok().filter(|f| *f > 0)
            }),
            best(AwardKind::BestAccuracy, &|id, _| {
                record(&id).accuracy_permille().filter(|a| *a > 0)
            }),
            best(AwardKind::MostDamage, &|id, _| {
                Some(record(&id).damage).filter(|d| *d > 0)
            }),
            best(AwardKind::LongestStreak, &|id, _| {
                Some(u32::from(record(&id).best_streak)).filter(|s| *s >= 2)
            }),
            best(AwardKind::MostCaptures, &|id, _| {
                Some(u32::from(record(&id).captures)).filter(|c| *c > 0)
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        awards.truncate(MAX_AWARDS);
        awards
    }
}

/// Counts this tick's shots, hits and kills.
pub(crate) fn count_match(
    mut events: MessageReader<CombatEvent>,
    mut records: ResMut<MatchRecords>,
    tick: Res<Tick>,
    teams: Query<(&PlayerId, &Team)>,
) {
    let team_of = |id: PlayerId| teams.iter().find(|(p, _)| **p == id).map(|(_, t)| *t);
    for event in events.read() {
        records.count(event, tick.0, team_of);
    }
}

/// When a match ends, tells everyone its awards and each player their own figures; when
/// a new one starts (after the intermission, or on an order), starts counting afresh.
pub(crate) fn tell_awards(
    state: Res<MatchState>,
    mut seen: Local<(u32, f32)>,
    mut records: ResMut<MatchRecords>,
    players: Query<(&PlayerId, &Score, Option<&Connection>)>,
    mut outbox: MessageWriter<Outgoing>,
    mut feed: ResMut<SpectatorFeed>,
    tick: Res<Tick>,
) {
    let (finished, elapsed) = *seen;
    *seen = (state.finished, state.elapsed);
    // Nothing counts in the warmup.
    if state.before_start() || state.elapsed < elapsed && state.finished == finished {
        // Started again without ending (a restart, a map change): nothing to award.
        records.0.clear();
    }
    if state.finished == finished {
        return;
    }
    let mut present: Vec<(PlayerId, i32)> = players.iter().map(|p| (*p.0, p.1.frags)).collect();
    present.sort_by_key(|p| p.0);
    let awards = records.awards(&present);
    for award in &awards {
        info!(
            "award: {} to player {}: {}",
            award.kind.title(),
            award.player.0,
            award.kind.describe(award.value)
        );
    }
    tell_match(
        &mut outbox,
        &mut feed,
        tick.0,
        ServerMessage::Awards(awards),
    );
    for (id, _, conn) in &players {
        if let Some(conn) = conn {
            let report = records.0.get(id).copied().unwrap_or_default().report();
            outbox.write(Outgoing::To(
                conn.client_id,
                ServerMessage::YourMatch(report),
            ));
        }
    }
    records.0.clear();
}

/// The match's figures, counted after combat each tick and told when it ends.
pub(crate) struct AwardsPlugin;

impl Plugin for AwardsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<MatchRecords>().add_systems(
            FixedUpdate,
            (
                count_match
                    .in_set(SimSet::Combat)
                    .after(CombatSystems)
                    .before(crate::rules::run_match),
                tell_awards.after(crate::rules::run_match),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::Vec3;

    fn fired(shooter: u8, weapon: WeaponKind) -> CombatEvent {
        CombatEvent::Fired {
            shooter: PlayerId(shooter),
            weapon,
            origin: Vec3::ZERO,
            dir: Vec3::X,
            aim: [0, 0],
            tick: 0,
            cmd: (0, 0.0),
        }
    }

    fn hit(shooter: u8, target: u8, weapon: WeaponKind, damage: f32) -> CombatEvent {
        CombatEvent::Hit {
            shooter: PlayerId(shooter),
            target: PlayerId(target),
            damage,
            zone: sightline_combat::HitZone::Body,
            weapon,
            seen: 0,
        }
    }

    fn killed(killer: u8, victim: u8) -> CombatEvent {
        CombatEvent::Killed {
            victim: PlayerId(victim),
            killer: PlayerId(killer),
            weapon: WeaponKind::Rifle,
        }
    }

    #[test]
    fn a_shotgun_blast_is_one_shot_and_one_hit_and_only_opponents_count() {
        let mut r = MatchRecords::default();
        let ffa = |_| None;
        r.count(&fired(1, WeaponKind::Shotgun), 10, ffa);
        for _ in 0..6 {
            r.count(&hit(1, 2, WeaponKind::Shotgun, 8.0), 10, ffa);
        }
        // Its own rocket hurts it: no hit, no damage.
        r.count(&hit(1, 1, WeaponKind::Rockets, 30.0), 11, ffa);
        let p = r.0[&PlayerId(1)];
        let s = WeaponKind::Shotgun.index();
        assert_eq!((p.shots[s], p.hits[s], p.damage), (1, 1, 48));
        assert_eq!(p.hits[WeaponKind::Rockets.index()], 0);
        // A team mate is no opponent.
        let red = |_| Some(Team::Red);
        r.count(&hit(1, 3, WeaponKind::Rifle, 20.0), 12, red);
        assert_eq!(r.0[&PlayerId(1)].damage, 48);
    }

    #[test]
    fn a_streak_ends_with_a_death_and_the_best_is_kept() {
        let mut r = MatchRecords::default();
        let ffa = |_| None;
        for victim in [2, 3, 4] {
            r.count(&killed(1, victim), 0, ffa);
        }
        r.count(&killed(2, 1), 0, ffa);
        r.count(&killed(1, 2), 0, ffa);
        r.count(&killed(1, 1), 0, ffa); // a suicide is no kill
        let p = r.0[&PlayerId(1)];
        assert_eq!((p.streak, p.best_streak), (0, 3));
    }

    #[test]
    fn each_award_goes_to_the_best_present_and_none_is_given_for_nothing() {
        let mut r = MatchRecords::default();
        let ffa = |_| None;
        for tick in 0..20 {
            r.count(&fired(1, WeaponKind::Rifle), tick, ffa);
            r.count(&fired(2, WeaponKind::Rifle), tick, ffa);
            r.count(&hit(2, 1, WeaponKind::Rifle, 10.0), tick, ffa);
            if tick % 4 == 0 {
                r.count(&hit(1, 2, WeaponKind::Rifle, 10.0), tick, ffa);
            }
        }
        for victim in [3, 3] {
            r.count(&killed(1, victim), 0, ffa);
        }
        let flag = |news, by| CombatEvent::Flag {
            team: Team::Blue,
            news,
            by: Some(PlayerId(by)),
        };
        r.count(&flag(FlagNews::Taken, 1), 0, ffa);
        r.count(&flag(FlagNews::Captured, 1), 0, ffa);
        let awards = r.awards(&[(PlayerId(1), 5), (PlayerId(2), 5), (PlayerId(3), 0)]);
        let of = |kind| {
            awards
                .iter()
                .find(|a| a.kind == kind)
                .map(|a| (a.player.0, a.value))
        };
        assert_eq!(
            of(AwardKind::MostFrags),
            Some((2, 5)),
            "a tie: the higher id"
        );
        assert_eq!(of(AwardKind::BestAccuracy), Some((2, 1000)));
        assert_eq!(of(AwardKind::MostDamage), Some((2, 200)));
        assert_eq!(of(AwardKind::LongestStreak), Some((1, 2)));
        assert_eq!(
            of(AwardKind::MostCaptures),
            Some((1, 1)),
            "captures, not takes"
        );
        // Players who left win nothing; a match of nothing awards nothing.
        assert!(r.awards(&[(PlayerId(3), 0)]).is_empty());
        let report = r.0[&PlayerId(1)].report();
        assert_eq!(report.weapons, [(WeaponKind::Rifle, 20, 5)]);
    }
}
