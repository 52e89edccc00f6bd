//! Combat as this client sees it, as [`CombatCue`] messages for the game to show and
//! play: what the server reports (others' shots, explosions, and, from its events, our
//! hits and hurts), and our own shots, predicted at once by the same weapon step the
//! server runs. Others' shots and explosions carry the server tick they happened in and
//! wait ([`TimedCues`]) until the client draws the world at that tick, so a muzzle flash
//! leaves the shooter where it is drawn and a rocket bursts where it is drawn, not a
//! round trip and the interpolation delay ahead of both. A shot goes off from its
//! shooter's eye where the shooter is drawn at that moment: the server sends who fired
//! and which way, and only to clients it sends the shooter to.

use crate::sets::{ReceiveStep, in_game, watching};
use bevy::prelude::*;
use sightline_combat::{ProjectileKind, WeaponKind, aim_direction};
use sightline_interpolation::{Drawn, Interpolated, RenderTime};
use sightline_movement::{MoveFlags, MoveParams};
use sightline_protocol::{PlayerEvent, ServerMessage};
use sightline_sim::SessionAppExt;
use sightline_sim::{PlayerId, TickConfig, angle_of_steps};
use std::collections::VecDeque;

/// Something in combat to show or hear.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub enum CombatCue {
    /// A weapon fired from the shooter's eye along `dir`.
    Fired {
        /// Which weapon.
        weapon: WeaponKind,
        /// The shooter's eye.
        origin: Vec3,
        /// Unit aim direction.
        dir: Vec3,
        /// Our own shot, predicted (the server does not echo it back).
        own: bool,
    },
    /// A projectile burst here.
    Exploded {
        /// What burst.
        kind: ProjectileKind,
        /// Where.
        at: Vec3,
    },
    /// Our shot struck someone.
    HitConfirmed {
        /// Whom.
        target: PlayerId,
        /// A head hit.
        head: bool,
        /// Health and armour taken.
        damage: u16,
    },
    /// We were hurt by someone standing at `from`.
    Hurt {
        /// Where the attacker was.
        from: Vec3,
    },
    /// Our shot was judged against an older world than we saw, `excess_ms` older: we are
    /// further away than the server rewinds, and have to lead our targets by that much.
    ShotLate {
        /// How far behind what we saw it was judged, milliseconds.
        excess_ms: u16,
    },
    /// Our shot was refused unjudged: its view time was one the server could not
    /// explain (our clock or our build is off).
    ShotRefused,
}

/// A cue waiting for its moment ([`TimedCues`]): shown as it is, or another player's
/// shot, whose origin is where its shooter is drawn when it is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimedCue {
    /// Shown as it is.
    Ready(CombatCue),
    /// Another player's shot.
    Shot {
        /// Who fired.
        shooter: PlayerId,
        /// Which weapon.
        weapon: WeaponKind,
        /// Unit aim direction.
        dir: Vec3,
    },
}

impl TimedCue {
    /// The cue to show: a shot from its shooter's eye as `drawn` has the shooter now;
    /// `None` for a shot whose shooter is not drawn.
    pub fn resolve(
        self,
        drawn: impl IntoIterator<Item = (PlayerId, Drawn)>,
        params: &MoveParams,
    ) -> Option<CombatCue> {
        match self {
            TimedCue::Ready(cue) => Some(cue),
            TimedCue::Shot {
                shooter,
                weapon,
                dir,
            } => {
                let (_, at) = drawn.into_iter().find(|(id, _)| *id == shooter)?;
                let crouched = at.flags.has(MoveFlags::CROUCHED);
                Some(CombatCue::Fired {
                    weapon,
                    origin: at.pos + Vec3::Y * params.eye(crouched),
                    dir,
                    own: false,
                })
            }
        }
    }
}

impl CombatCue {
    /// The cue for a combat message from the server, with the server tick it happened in,
    /// to be shown in step with the drawn world (others' shots, explosions); `None` for
    /// any other message.
    pub fn from_server(msg: &ServerMessage) -> Option<(TimedCue, u32)> {
        Some(match *msg {
            ServerMessage::Fired {
                shooter,
                weapon,
                aim,
                tick,
            } => (
                TimedCue::Shot {
                    shooter,
                    weapon,
                    dir: aim_direction(angle_of_steps(aim[0]), angle_of_steps(aim[1])),
                },
                tick,
            ),
            ServerMessage::Exploded { kind, at, tick } => (
                TimedCue::Ready(CombatCue::Exploded {
                    kind,
                    at: Vec3::from_array(at),
                }),
                tick,
            ),
            _ => return None,
        })
    }

    /// The cue for an event the server showed us (already in step with the drawn world);
    /// `None` for one that is not about combat cues (a death, for the kill feed).
    pub fn from_event(event: &PlayerEvent) -> Option<Self> {
        Some(match *event {
            PlayerEvent::HitConfirm {
                target,
                head,
                damage,
            } => CombatCue::HitConfirmed {
                target,
                head,
                damage,
            },
            PlayerEvent::Damaged { from, .. } => CombatCue::Hurt {
                from: Vec3::from_array(from),
            },
            PlayerEvent::ShotLate { excess_ms } => CombatCue::ShotLate { excess_ms },
            PlayerEvent::ShotRefused => CombatCue::ShotRefused,
            PlayerEvent::Killed { .. } => return None,
        })
    }
}

/// Most cues waiting for their moment; past it the oldest is shown at once, so a server
/// sending a flood of events cannot grow the queue.
pub const MAX_TIMED_CUES: usize = 256;
/// Longest a cue waits for its moment, seconds: one stamped further ahead than the
/// interpolation delay can explain (a clock that stepped, a hostile server) is shown
/// after this.
pub const MAX_CUE_WAIT: f64 = 0.5;

/// Things waiting until the client draws the world at the server time they happened:
/// combat cues ([`TimedCues`]) and events ([`crate::EventInbox`]).
#[derive(Resource, Debug)]
pub struct Timed<T> {
    waiting: VecDeque<TimedItem<T>>,
    /// Items shown early because the queue was full.
    pub overflowed: u64,
    /// Items that could not be shown when their moment came (a shot whose shooter is
    /// not drawn).
    pub unplaced: u64,
}

/// Cues waiting for the drawn world.
pub type TimedCues = Timed<TimedCue>;

impl<T> Default for Timed<T> {
    fn default() -> Self {
        Self {
            waiting: VecDeque::new(),
            overflowed: 0,
            unplaced: 0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct TimedItem<T> {
    /// Server time it happened, seconds.
    at: f64,
    /// Our clock when it arrived, seconds.
    received: f64,
    item: T,
}

impl<T: Copy> Timed<T> {
    /// Holds `item`, which happened at server time `at`, until then; returns one to show
    /// now if the queue was full (the oldest).
    pub fn push(&mut self, at: f64, received: f64, item: T) -> Option<T> {
        let evicted = (self.waiting.len() >= MAX_TIMED_CUES)
            .then(|| self.waiting.pop_front())
            .flatten()
            .map(|t| t.item);
        self.overflowed += u64::from(evicted.is_some());
        self.waiting.push_back(TimedItem { at, received, item });
        evicted
    }

    /// The items whose moment the drawn world has reached (`render_time`, server seconds;
    /// `None` while the clock is unknown, when every one is due), or which have waited
    /// [`MAX_CUE_WAIT`] by our clock `now`, in the order they arrived.
    pub fn take_due(&mut self, render_time: Option<f64>, now: f64) -> Vec<T> {
        let due = |t: &TimedItem<T>| {
            render_time.is_none_or(|r| r >= t.at) || now - t.received >= MAX_CUE_WAIT
        };
        let taken = self
            .waiting
            .iter()
            .filter(|t| due(t))
            .map(|t| t.item)
            .collect();
        self.waiting.retain(|t| !due(t));
        taken
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// Where each remote player is drawn this frame.
type DrawnPlayers<'w, 's> = Query<'w, 's, (&'static PlayerId, &'static Drawn), With<Interpolated>>;

/// Shows `cue` now, placed where its shooter is drawn (or counts it as unplaced).
fn show(
    cue: TimedCue,
    drawn: &DrawnPlayers,
    params: &MoveParams,
    timed: &mut TimedCues,
    cues: &mut MessageWriter<CombatCue>,
) {
    match cue.resolve(drawn.iter().map(|(id, d)| (*id, *d)), params) {
        Some(cue) => {
            cues.write(cue);
        }
        None => timed.unplaced += 1,
    }
}

/// Writes the cues whose moment has come.
pub(crate) fn release_timed_cues(
    time: Res<Time<Real>>,
    render: Res<RenderTime>,
    params: Res<MoveParams>,
    drawn: DrawnPlayers,
    mut timed: ResMut<TimedCues>,
    mut cues: MessageWriter<CombatCue>,
) {
    if timed.is_empty() {
        return;
    }
    for cue in timed.take_due(render.server_time, time.elapsed_secs_f64()) {
        show(cue, &drawn, &params, &mut timed, &mut cues);
    }
}

/// Others' shots and explosions as cues, in step with the drawn world.
pub(crate) fn queue_cues(
    mut inbound: MessageReader<crate::FromServer>,
    mut cues: MessageWriter<CombatCue>,
    mut timed: ResMut<TimedCues>,
    time: Res<Time<Real>>,
    config: Res<TickConfig>,
    params: Res<MoveParams>,
    drawn: DrawnPlayers,
) {
    for crate::FromServer(msg) in inbound.read() {
        if let Some((cue, tick)) = CombatCue::from_server(msg) {
            let at = tick_seconds(tick, &config);
            if let Some(early) = timed.push(at, time.elapsed_secs_f64(), cue) {
                show(early, &drawn, &params, &mut timed, &mut cues);
            }
        }
    }
}

/// Server time of the start of tick `tick`, seconds, on the clock snapshots carry.
pub(crate) fn tick_seconds(tick: u32, config: &TickConfig) -> f64 {
    config.tick_time_us(sightline_sim::Tick(tick)) as f64 / 1e6
}

/// Combat cues: queued as the server tells them, released when the drawn world reaches
/// them (where the shooters are drawn this frame places their shots).
pub(crate) struct CuesPlugin;

impl Plugin for CuesPlugin {
    fn build(&self, app: &mut App) {
        app.add_message::<CombatCue>()
            .init_session_resource::<TimedCues>()
            .add_systems(PreUpdate, queue_cues.in_set(ReceiveStep::Cues))
            .add_systems(
                Update,
                release_timed_cues
                    .after(sightline_interpolation::InterpolationSet::Sample)
                    .run_if(in_game.or_else(watching)),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::PlayerId;

    #[test]
    fn a_shot_goes_off_where_its_shooter_is_drawn_and_other_messages_are_no_cues() {
        let fired = ServerMessage::Fired {
            shooter: PlayerId(1),
            weapon: WeaponKind::Rifle,
            aim: [0, 0],
            tick: 640,
        };
        let (cue, tick) = CombatCue::from_server(&fired).expect("a cue");
        assert_eq!(tick, 640);
        let params = MoveParams::default();
        let at = |pos: Vec3, flags: MoveFlags| Drawn {
            pos,
            flags,
            ..Default::default()
        };
        let standing = at(Vec3::new(1.0, 2.0, 3.0), MoveFlags::default());
        let crouching = at(Vec3::new(1.0, 2.0, 3.0), MoveFlags(MoveFlags::CROUCHED));
        let Some(CombatCue::Fired { origin, dir, .. }) =
            cue.resolve([(PlayerId(0), crouching), (PlayerId(1), standing)], &params)
        else {
            panic!("not placed");
        };
        // Yaw 0 looks down -Z, level.
        assert!(dir.distance(Vec3::NEG_Z) < 1e-6, "{dir}");
        assert_eq!(origin, Vec3::new(1.0, 2.0 + params.eye(false), 3.0));
        assert_eq!(
            cue.resolve([(PlayerId(1), crouching)], &params),
            Some(CombatCue::Fired {
                weapon: WeaponKind::Rifle,
                origin: Vec3::new(1.0, 2.0 + params.eye(true), 3.0),
                dir,
                own: false,
            })
        );
        assert_eq!(cue.resolve([(PlayerId(0), standing)], &params), None);
        assert_eq!(
            CombatCue::from_server(&ServerMessage::Chat {
                from: PlayerId(0),
                text: "hi".into(),
                team: false,
            }),
            None
        );
    }

    #[test]
    fn timed_cues_wait_for_the_drawn_world_within_bounds() {
        let boom = |x| {
            TimedCue::Ready(CombatCue::Exploded {
                kind: ProjectileKind::Rocket,
                at: Vec3::new(x, 0.0, 0.0),
            })
        };
        let mut t = TimedCues::default();
        t.push(10.0, 100.0, boom(1.0));
        t.push(10.5, 100.0, boom(2.0));
        // A hostile stamp far in the future.
        t.push(1.0e9, 100.0, boom(3.0));
        assert!(t.take_due(Some(9.9), 100.1).is_empty(), "not drawn yet");
        assert_eq!(t.take_due(Some(10.2), 100.2), vec![boom(1.0)]);
        assert_eq!(
            t.take_due(Some(10.3), 100.0 + MAX_CUE_WAIT),
            vec![boom(2.0), boom(3.0)],
            "waited long enough"
        );
        assert!(t.is_empty());
        // Without a clock, at once; a full queue shows its oldest.
        t.push(5.0, 0.0, boom(4.0));
        assert_eq!(t.take_due(None, 0.0), vec![boom(4.0)]);
        for i in 0..MAX_TIMED_CUES {
            assert_eq!(t.push(50.0, 0.0, boom(i as f32)), None);
        }
        assert_eq!(t.push(50.0, 0.0, boom(-1.0)), Some(boom(0.0)));
        assert_eq!((t.len(), t.overflowed), (MAX_TIMED_CUES, 1));
    }
}
