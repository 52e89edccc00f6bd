//! Players who come back. When a player's connection drops (anything but a kick), the
//! server keeps their slot, team, score and place for [`RESUME_SECONDS`]; a client that
//! reconnects in time and shows the secret its Welcome carried gets them back. The secret
//! proves identity, not the name: names are free for anyone to take.

use crate::connection::PlayerSlots;
use bevy::prelude::*;
use sightline_combat::{Arsenal, Score, Team, Vitals};
use sightline_movement::PlayerState;
use sightline_protocol::ResumeSecret;
use sightline_sim::PlayerId;

/// How long a dropped player's place is kept, seconds.
pub const RESUME_SECONDS: f64 = 60.0;

/// The secret a human player can come back with.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumable(pub ResumeSecret);

impl Resumable {
    /// A fresh, unguessable secret.
    pub fn random() -> Self {
        Self(sightline_net::random_secret())
    }
}

/// A player whose connection dropped, as they were.
#[derive(Debug, Clone)]
pub struct Departed {
    /// The secret that brings them back.
    pub secret: ResumeSecret,
    /// Their slot, still held.
    pub id: PlayerId,
    /// Their name.
    pub name: String,
    /// Their team in team games.
    pub team: Option<Team>,
    /// Frags and deaths.
    pub score: Score,
    /// Where they were and how they moved.
    pub state: PlayerState,
    /// Health and armour.
    pub vitals: Vitals,
    /// Weapons and ammunition.
    pub arsenal: Arsenal,
    /// When they dropped, real seconds.
    pub at: f64,
}

/// Dropped players waiting to come back, oldest first.
#[derive(Resource, Debug, Default)]
pub struct DepartedPlayers(pub Vec<Departed>);

impl DepartedPlayers {
    /// Takes the record that `secret` proves, if it is still kept.
    pub fn take(&mut self, secret: &ResumeSecret, now: f64) -> Option<Departed> {
        let at = self
            .0
            .iter()
            .position(|d| d.secret == *secret && now - d.at <= RESUME_SECONDS)?;
        Some(self.0.remove(at))
    }

    /// Removes and returns the records older than [`RESUME_SECONDS`].
    pub fn expire(&mut self, now: f64) -> Vec<Departed> {
        let (gone, kept) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|d| now - d.at > RESUME_SECONDS);
        self.0 = kept;
        gone
    }

    /// Gives up the oldest record, to free its slot for a newcomer on a full server.
    pub fn evict_oldest(&mut self) -> Option<Departed> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }
}

/// Frees the slots of players who did not come back in time.
pub(crate) fn expire_departed(
    time: Res<Time<Real>>,
    mut departed: ResMut<DepartedPlayers>,
    mut slots: ResMut<PlayerSlots>,
) {
    for gone in departed.expire(time.elapsed_secs_f64()) {
        slots.release(gone.id);
        info!("{}'s place expired", gone.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn departed(secret: u8, id: u8, at: f64) -> Departed {
        Departed {
            secret: [secret; 16],
            id: PlayerId(id),
            name: format!("p{id}"),
            team: None,
            score: Score {
                frags: 3,
                deaths: 1,
                captures: 0,
            },
            state: PlayerState::default(),
            vitals: Vitals::spawned(),
            arsenal: Arsenal::default(),
            at,
        }
    }

    #[test]
    fn only_the_right_secret_within_the_minute_brings_a_player_back() {
        let mut d = DepartedPlayers(vec![departed(1, 4, 0.0), departed(2, 5, 10.0)]);
        assert!(d.take(&[9; 16], 1.0).is_none());
        assert!(d.take(&[1; 16], RESUME_SECONDS + 1.0).is_none(), "too late");
        let back = d.take(&[2; 16], 30.0).expect("in time");
        assert_eq!((back.id, back.score.frags), (PlayerId(5), 3));
        assert!(d.take(&[2; 16], 30.0).is_none(), "a secret works once");
        assert_eq!(d.expire(RESUME_SECONDS + 0.5).len(), 1);
        assert!(d.0.is_empty());
    }

    #[test]
    fn the_oldest_gives_way_first() {
        let mut d = DepartedPlayers(vec![departed(1, 4, 0.0), departed(2, 5, 10.0)]);
        assert_eq!(d.evict_oldest().map(|x| x.id), Some(PlayerId(4)));
        assert_eq!(d.evict_oldest().map(|x| x.id), Some(PlayerId(5)));
        assert!(d.evict_oldest().is_none());
    }

    #[test]
    fn secrets_differ() {
        assert_ne!(Resumable::random(), Resumable::random());
    }
}
