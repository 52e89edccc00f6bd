//! Coming back after a dropped connection. When the link to a server drops while in the
//! game (a timeout, not a kick or a refusal), the client reconnects by itself, backing
//! off between tries, and presents the resume secret from its last Welcome so the server
//! gives back the same slot, team, score and place.

use crate::ConnectionStatus;
use crate::sets::ReceiveStep;
use bevy::prelude::*;
use sightline_net::RenetClient;
use sightline_net::RenetReceive;
use sightline_net::UdpClientTransport;
use sightline_protocol::ResumeSecret;
use sightline_sim::SessionAppExt;

/// How long after the drop the client keeps trying, seconds: within the server's minute
/// of keeping the place, with time left for the last try to complete.
pub const RESUME_WINDOW_SECONDS: f64 = 50.0;

/// Seconds to wait before the `n`th try (from 1): 1, 2, 4, 8, then every 8.
pub fn backoff_seconds(attempt: u32) -> f64 {
    f64::from(1u32 << attempt.saturating_sub(1).min(3))
}

/// The resume secret of this session, and where a reconnection stands.
#[derive(Resource, Debug, Default, Clone)]
pub struct Reconnect {
    /// The secret from the last Welcome.
    pub secret: Option<ResumeSecret>,
    /// Whether the next Hello presents the secret (a reconnection is under way).
    pub resuming: bool,
    lost_at: Option<f64>,
    attempts: u32,
    next_try: f64,
}

impl Reconnect {
    /// Tries made since the link dropped.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether a reconnection is under way.
    pub fn active(&self) -> bool {
        self.lost_at.is_some()
    }

    /// Joined (again): forget the drop, keep the new secret.
    pub(crate) fn welcomed(&mut self, secret: ResumeSecret) {
        *self = Self {
            secret: Some(secret),
            ..Self::default()
        };
    }

    /// The link dropped at `now`; true while it is worth trying again.
    pub(crate) fn lost(&mut self, now: f64) -> bool {
        if self.secret.is_none() {
            return false;
        }
        let since = *self.lost_at.get_or_insert(now);
        if self.attempts == 0 {
            self.next_try = now + backoff_seconds(1);
        }
        now - since < RESUME_WINDOW_SECONDS
    }
}

/// Lets the transport open a standby connection when the server falls silent only while
/// the game could resume on it: in the game, with a resume secret.
pub(crate) fn allow_standby(
    status: Res<ConnectionStatus>,
    reconnect: Res<Reconnect>,
    transport: Option<ResMut<UdpClientTransport>>,
) {
    let allowed = status.is_connected() && reconnect.secret.is_some();
    if let Some(mut transport) = transport
        && transport.standby_allowed() != allowed
    {
        transport.allow_standby(allowed);
    }
}

/// Opens a fresh connection to the same server when a try is due; at once when the
/// transport already holds one (a standby connection took over from a silent one).
pub(crate) fn retry_connection(world: &mut World) {
    let now = world.resource::<Time<Real>>().elapsed_secs_f64();
    let ready = world
        .get_resource::<UdpClientTransport>()
        .is_some_and(|t| t.rebound());
    let due = {
        let r = world.resource::<Reconnect>();
        r.active() && (ready || now >= r.next_try)
    };
    if !due
        || !matches!(
            *world.resource::<ConnectionStatus>(),
            ConnectionStatus::Reconnecting { .. }
        )
    {
        return;
    }
    let Some((server, security)) = world
        .get_resource::<UdpClientTransport>()
        .map(|t| (t.server(), t.security().clone()))
    else {
        return;
    };
    let mut reconnect = world.resource::<Reconnect>().clone();
    reconnect.attempts = reconnect.attempts.saturating_add(1);
    reconnect.next_try = now + backoff_seconds(reconnect.attempts + 1);
    reconnect.resuming = true;
    // A new session: the old one's players, snapshots and predictions mean nothing now.
    sightline_sim::end_session(world);
    world.resource_mut::<crate::EarlierSessions>().reconnects += 1;
    if sightline_net::resume_udp(world) {
        info!("resuming on the new connection to {server}");
    } else {
        info!("reconnecting to {server} (try {})", reconnect.attempts);
        if let Err(e) = sightline_net::connect_udp(world, server, &security) {
            warn!("cannot reconnect: {e}");
        }
    }
    world.insert_resource(reconnect);
}

/// Reconnecting: standing by when the server keeps us, and retrying before renet reads.
pub(crate) struct ReconnectPlugin;

impl Plugin for ReconnectPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Reconnect>().add_systems(
            PreUpdate,
            (
                retry_connection.before(RenetReceive),
                allow_standby
                    .in_set(ReceiveStep::Standby)
                    .run_if(resource_exists::<RenetClient>),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tries_back_off_to_every_eight_seconds() {
        let waits: Vec<f64> = (1..=6).map(backoff_seconds).collect();
        assert_eq!(waits, [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(backoff_seconds(u32::MAX), 8.0);
    }

    #[test]
    fn a_drop_is_worth_retrying_only_with_a_secret_and_within_the_window() {
        let mut r = Reconnect::default();
        assert!(!r.lost(10.0), "never welcomed: nothing to resume");
        r.welcomed([1; 16]);
        assert!(r.lost(10.0));
        assert!(r.active());
        assert!(r.lost(10.0 + RESUME_WINDOW_SECONDS - 1.0));
        assert!(!r.lost(10.0 + RESUME_WINDOW_SECONDS + 1.0));
        r.welcomed([2; 16]);
        assert!(!r.active());
        assert_eq!(r.secret, Some([2; 16]));
    }
}
