//! Client-side prediction. The local player's commands run through the shared movement
//! step the moment they are sampled, so the player's own movement answers at once. Each
//! snapshot says which command the server simulated last and where that left the player;
//! if the prediction for that command agrees, nothing happens. Otherwise the client takes
//! the server's state and replays every command the server has not simulated yet, and the
//! visible jump is carried as a [`VisualOffset`] that decays, so the camera never pops.
//!
//! Determinism, not smoothing, is what keeps corrections at zero: the server and the
//! replay call the same pure functions with the same commands. A predicted tick
//! ([`predict_tick`]) is everything the server does to our player that the client can
//! know: the movement step against the map and the other players where the server should
//! have them ([`OtherPlayers`]), and the flight of every rocket that could reach us, ours
//! (rocket jumps) and others' as the snapshots show them, whose bursts push us. What it
//! cannot know (rockets fired since the newest snapshot, others changing course into us)
//! arrives as corrections, counted by cause ([`CorrectionCauses`]) and blended; a teleport
//! (a respawn) is adopted without counting.

mod history;
mod others;
mod reconcile;
mod stats;
mod tick;
mod weapons;

pub use history::{PredictedStep, PredictionHistory, Touched};
pub use others::{MAX_EXTRAPOLATION, OtherPlayer, OtherPlayers};
pub use reconcile::{Reconciliation, reconcile, replay};

use reconcile::agree;
pub use stats::{
    CORRECTION_LOG, Correction, CorrectionCause, CorrectionCauses, CorrectionLog, PredictionStats,
};
pub use tick::{PredictedTick, TickWorld, Weapons, predict_tick};
pub use weapons::{
    ServerWeapons, WEAPON_LOG, WeaponChecks, WeaponLog, check_weapons, weapon_differences,
};

use bevy::prelude::*;
use sightline_combat::{Arsenal, ProjectileAct, Rocket, Shot, silenced};
use sightline_map::CurrentMap;
use sightline_movement::{MoveParams, PlayerState};
use sightline_sim::{CurrentCmd, PlayerId, SessionAppExt, SimSet, TickConfig};

/// Marks the entity whose movement this client predicts (its own player).
#[derive(Component, Debug, Default, Clone, Copy)]
#[require(VisualOffset, Arsenal, PredictedRockets, OwnShot)]
pub struct Predicted;

/// How far the drawn player is from its predicted position after a correction; decays to
/// zero. Add it to the predicted position when drawing.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct VisualOffset(pub Vec3);

/// Rockets in flight, as predicted: ours, and others' that could reach us, flown each
/// tick with the server's [`sightline_combat::fly_rocket`], so their bursts push us the
/// tick the server's do.
#[derive(Component, Debug, Default, Clone, PartialEq)]
pub struct PredictedRockets(pub Vec<Rocket>);

/// The others' rockets prediction flies already (their numbers): one the server shows
/// that is not among them is news, worth a replay.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct LearntRockets(Vec<u16>);

impl LearntRockets {
    /// Takes the rockets a snapshot's replay would fly (`known`, we being `me`); whether
    /// another's is among them that was not before. Those the server no longer has are
    /// forgotten.
    pub fn learn(&mut self, known: &[Rocket], me: PlayerId) -> bool {
        let theirs = || known.iter().filter(|r| r.owner != me).map(|r| r.id);
        let news = theirs().any(|id| !self.0.contains(&id));
        self.0.retain(|id| known.iter().any(|r| r.id == *id));
        self.0.extend(
            theirs()
                .filter(|id| !self.0.contains(id))
                .collect::<Vec<_>>(),
        );
        news
    }
}

/// What our weapon fired with this tick's command, if anything: prediction steps the
/// arsenal with each command it predicts, and the muzzle flash, tracer and sound are
/// shown from this.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
pub struct OwnShot(pub Option<Shot>);

/// Tuning for reconciliation and smoothing.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct PredictionSettings {
    /// States closer than this (metres, m/s) count as agreeing. Snapshots carry exact
    /// floats, so the default is 0: agreement means the same bits, and any difference,
    /// however small, is replayed away before movement can amplify it.
    pub epsilon: f32,
    /// Corrections smaller than this (metres) are invisible: they are applied without a
    /// visual offset and not counted as corrections.
    pub visible: f32,
    /// Time constant of the visual offset's exponential decay, seconds.
    pub decay_seconds: f32,
    /// Corrections larger than this (metres) snap at once rather than blend, unless a
    /// knockback caused them (a rocket can throw a player further than this in a round
    /// trip). Teleports are announced by the server and never blend.
    pub snap_distance: f32,
    /// Unacknowledged commands beyond what the round trip explains: more than this many
    /// seconds' worth means the server is not answering, and the client adopts the
    /// server's state and starts over.
    pub max_unacked_seconds: f32,
}

impl Default for PredictionSettings {
    fn default() -> Self {
        Self {
            epsilon: 0.0,
            visible: 1e-4,
            decay_seconds: 0.075,
            snap_distance: 2.0,
            max_unacked_seconds: 0.25,
        }
    }
}

/// The current round trip, including the time commands wait in the server's buffer,
/// seconds: how long a command normally goes unacknowledged. The client keeps it up to
/// date from clock sync.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct RoundTrip(pub f32);

/// The server's word on the predicted player, from one snapshot. The client's snapshot
/// handling fills it in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerState {
    /// The last of our commands the server simulated to reach `state`.
    pub ack: u32,
    /// Our state after it.
    pub state: PlayerState,
    /// The rockets in flight at the same tick, everyone's (prediction flies ours and
    /// those that could reach us).
    pub rockets: Vec<Rocket>,
    /// The server placed us without movement (a respawn, a new match) since the last
    /// state: adopt it, no correction.
    pub teleported: bool,
    /// We are dead: the server runs our commands as [`silenced`] ones until we respawn.
    pub dead: bool,
    /// The server ran a tick without a command of ours since the last state (it repeated
    /// one): what it simulated is not what we sent.
    pub starved: bool,
    /// What the server did to us besides our commands since the last state.
    pub touched: ServerTouches,
}

/// What the server did to our player besides running our commands, between two
/// snapshots: the server's truth, which corrections are classified by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerTouches {
    /// One of our own explosions pushed us (we predict those: a difference is ours).
    pub own_push: bool,
    /// Another player's explosion pushed us.
    pub push: bool,
    /// Another player's body changed our move.
    pub contact: bool,
    /// The server held us a tick waiting for a late command: the commands after it meet
    /// the world a tick later than we predicted them.
    pub held: bool,
}

/// The server's running counts of what it did to our player (own pushes, others'
/// pushes, contacts, holds), as of the last snapshot.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SeenTouches(Option<[u8; 4]>);

impl SeenTouches {
    /// Takes a snapshot's counts; which changed since the previous snapshot (the first
    /// one only sets them).
    pub fn changed(&mut self, counts: [u8; 4]) -> ServerTouches {
        let before = self.0.replace(counts);
        let moved = |i: usize| before.is_some_and(|b| b[i] != counts[i]);
        ServerTouches {
            own_push: moved(0),
            push: moved(1),
            contact: moved(2),
            held: moved(3),
        }
    }
}

/// A server state for the predicted player, waiting to be reconciled.
#[derive(Resource, Debug, Default, Clone)]
pub struct ServerUpdate(pub Option<ServerState>);

/// Where prediction runs in the client's frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PredictionSet {
    /// Compare with the server and replay (after snapshots are received).
    Reconcile,
}

/// Predicts the [`Predicted`] player and reconciles it with [`ServerUpdate`]s.
pub struct PredictionPlugin;

impl Plugin for PredictionPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PredictionSettings>()
            .init_session_resource::<PredictionHistory>()
            .init_session_resource::<PredictionStats>()
            .init_session_resource::<ServerUpdate>()
            .init_session_resource::<OtherPlayers>()
            .init_session_resource::<SeenTouches>()
            .init_session_resource::<LearntRockets>()
            .init_session_resource::<RoundTrip>()
            .init_session_resource::<WeaponLog>()
            .init_session_resource::<WeaponChecks>()
            .init_resource::<MoveParams>()
            .add_systems(
                FixedUpdate,
                predict_local_player
                    .in_set(SimSet::Move)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(
                PreUpdate,
                (apply_server_update, check_weapons)
                    .chain()
                    .in_set(PredictionSet::Reconcile)
                    .run_if(resource_exists::<CurrentMap>),
            )
            .add_systems(Update, decay_visual_offset);
    }
}

/// Our player's parts that prediction steps.
type Own<'a> = (
    &'a PlayerId,
    &'a mut PlayerState,
    &'a mut Arsenal,
    &'a mut PredictedRockets,
    &'a mut OwnShot,
);

/// Runs this tick's command on the predicted player at once and remembers the result:
/// the player moves, its weapons step and our rockets fly ([`predict_tick`]).
fn predict_local_player(
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    others: Res<OtherPlayers>,
    mut history: ResMut<PredictionHistory>,
    mut weapons: ResMut<WeaponLog>,
    mut stats: ResMut<PredictionStats>,
    mut player: Query<(&CurrentCmd, Own), With<Predicted>>,
) {
    let Ok((cmd, (id, mut state, mut arsenal, mut rockets, mut shot))) = player.single_mut() else {
        return;
    };
    // No new command this tick (not yet sampled): nothing to predict.
    if history.newest_seq().is_some_and(|s| s >= cmd.0.seq) || cmd.0.seq == 0 {
        shot.0 = None;
        return;
    }
    let world = TickWorld {
        map: &map.world,
        params: &params,
        dt: config.dt(),
        others: &others,
        me: *id,
    };
    let step = Weapons::Step(&mut arsenal);
    let predicted = predict_tick(&world, &state, &cmd.0, step, &mut rockets.0);
    shot.0 = predicted.shot;
    weapons.push(cmd.0, *arsenal);
    *state = predicted.state;
    history.push(PredictedStep {
        cmd: cmd.0,
        after: predicted.state,
        projectile: predicted.act,
        touched: predicted.touched,
    });
    stats.predicted += 1;
}

/// Reconciles the predicted player with the newest server state, if one arrived.
#[allow(clippy::too_many_arguments)]
fn apply_server_update(
    mut update: ResMut<ServerUpdate>,
    map: Res<CurrentMap>,
    params: Res<MoveParams>,
    config: Res<TickConfig>,
    settings: Res<PredictionSettings>,
    round_trip: Res<RoundTrip>,
    others: Res<OtherPlayers>,
    mut history: ResMut<PredictionHistory>,
    mut weapons: ResMut<WeaponLog>,
    mut stats: ResMut<PredictionStats>,
    mut learnt_rockets: ResMut<LearntRockets>,
    mut player: Query<(Own, &mut VisualOffset), With<Predicted>>,
) {
    let Some(server) = update.0.take() else {
        return;
    };
    let Ok(((id, mut state, _, mut flying, _), mut offset)) = player.single_mut() else {
        return;
    };
    let me = *id;
    let world = TickWorld {
        map: &map.world,
        params: &params,
        dt: config.dt(),
        others: &others,
        me,
    };
    let patience = settings.max_unacked_seconds + round_trip.0;
    // Replays fly the rockets on from where the server has them at the acknowledged tick:
    // ours, and others' that could reach us before the server has run what we predict.
    let known = rockets_to_fly(&server.rockets, me, state.pos, patience);
    // Another's rocket come within reach that we do not fly yet may burst on us within
    // what we predict: replay, even when the server agrees, with it. What that changes is
    // news of the others, not a mistake of ours. One we fly already needs no replay: the
    // server's word on the command it reaches us in will say whether we flew it right.
    let learning = learnt_rockets.learn(&known, me);
    let predicted_touches = history.touched_after(server.ack);
    // What we predicted touching us up to the acknowledged command, which the server may
    // not have done: another's burst its rocket met something else first for, a body it
    // did not have in our way.
    let touched_before = history.touched_through(server.ack);
    let agreed_at_ack = history
        .get(server.ack)
        .is_some_and(|p| agree(&p.after, &server.state, settings.epsilon));
    // A replay made only for news of the others' rockets is kept only if that news
    // touches us; otherwise what it changed is our guess of the others' bodies, which
    // the server's word on those commands will settle (as when there is no news).
    let news_only = learning && agreed_at_ack && !server.dead;
    let before_news = news_only.then(|| history.clone());
    let mut rockets = known;
    let mut replayed_touches = Touched::default();
    // The dead only look around, however the commands were predicted when sent.
    let dead = server.dead;
    let step = |s: &PlayerState, p: &mut PredictedStep| {
        let (cmd, launch) = if dead {
            (silenced(&p.cmd), ProjectileAct::None)
        } else {
            (p.cmd, p.projectile)
        };
        let predicted = predict_tick(&world, s, &cmd, launch, &mut rockets);
        p.touched = predicted.touched;
        replayed_touches = replayed_touches.or(predicted.touched);
        predicted.state
    };

    if server.teleported {
        // Placed, not moved: take the server's state and predict on from it, unseen.
        weapons.placed(history.newest_seq().unwrap_or(0));
        history.acknowledge(server.ack);
        let (new, replayed) = replay(&mut history, &server.state, step);
        stats.teleports += 1;
        stats.replayed += replayed as u64;
        offset.0 = Vec3::ZERO;
        stats.jumps += new.pos - state.pos;
        *state = new;
        flying.0 = rockets;
        return;
    }

    let predicted = history.was_predicted(server.ack);
    let max_unacked = (patience * config.tick_hz as f32).ceil() as usize;
    // Dead, the commands after the acknowledged one were predicted as sent (moving, while
    // we did not know yet): replay them as the server runs them even when it agrees.
    let epsilon = if dead || learning {
        f32::NEG_INFINITY
    } else {
        settings.epsilon
    };
    let outcome = reconcile(
        &mut history,
        server.ack,
        &server.state,
        *state,
        max_unacked,
        epsilon,
        step,
    );
    match outcome {
        Reconciliation::Agreed => {
            stats.agreed += 1;
            if learning {
                flying.0 = rockets;
            } else {
                // Others' rockets the server no longer has burst somewhere already.
                flying
                    .0
                    .retain(|r| r.owner == me || server.rockets.iter().any(|s| s.id == r.id));
            }
        }
        Reconciliation::Replayed { .. }
            if !(predicted_touches.others || replayed_touches.others)
                && let Some(before) = before_news =>
        {
            *history = before;
            history.acknowledge(server.ack);
            stats.agreed += 1;
            flying.0 = rockets;
        }
        Reconciliation::Replayed {
            state: new,
            replayed,
        } => {
            stats.reconciliations += 1;
            stats.replayed += replayed as u64;
            let jump = state.pos - new.pos;
            let size = jump.length();
            if size > settings.visible {
                // Kept for news only when another's burst is in it, before or now.
                let cause = if news_only {
                    CorrectionCause::Knockback
                } else {
                    classify(&server, predicted, touched_before)
                };
                // Another's burst the server gave us where we predicted none of theirs:
                // its rocket came too late for us to fly.
                let news = news_only
                    || (cause == CorrectionCause::Knockback
                        && server.touched.push
                        && !touched_before.others);
                stats.corrections.push(Correction { size, cause, news });
                stats.last_correction = size;
                stats.causes.count(cause);
                stats.news += u64::from(news);
                stats.last_cause = Some(cause);
                let snap = size > settings.snap_distance && cause != CorrectionCause::Knockback;
                offset.0 = if snap { Vec3::ZERO } else { offset.0 + jump };
            }
            stats.jumps -= jump;
            *state = new;
            flying.0 = rockets;
        }
        Reconciliation::Reset { state: new } => {
            stats.resets += 1;
            warn!("the server has not acknowledged {max_unacked} commands; taking its state");
            offset.0 = Vec3::ZERO;
            stats.jumps += new.pos - state.pos;
            *state = new;
            flying.0 = rockets_to_fly(&server.rockets, me, new.pos, patience);
        }
    }
}

/// How fast we might be moving towards a rocket while it flies to us, m/s (a rocket
/// jump's speed), and how far from our origin its burst can still touch our body, metres.
const OUR_SPEED: f32 = 20.0;
const OUR_REACH: f32 = 2.0;

/// The rockets a replay flies from the server's `rockets`: all of ours, and others' that
/// could burst within reach of us, standing at `at`, within `seconds`.
fn rockets_to_fly(rockets: &[Rocket], me: PlayerId, at: Vec3, seconds: f32) -> Vec<Rocket> {
    rockets
        .iter()
        .filter(|r| {
            let reach =
                (r.vel.length() + OUR_SPEED) * seconds + r.kind.def().splash_radius + OUR_REACH;
            r.owner == me || r.pos.distance(at) <= reach
        })
        .copied()
        .collect()
}

/// Why the server's state differs from what we predicted for the same command, by what
/// the server says it did, then by what we predicted it would do (`before`: what touched
/// us up to that command) and it did not:
///
/// - we died: the server stopped us moving before we knew, whatever else it did to us
///   (the rocket that kills pushes too, and we may have flown it exactly); the death
///   camera shows this, not a pull-back;
/// - another player's explosion pushed us (knockback);
/// - we predicted another's explosion pushing us that the server's rocket did not give
///   us, having met a body we guessed elsewhere (knockback);
/// - another player's body changed our move, or we predicted one in our way that the
///   server did not have there (a collision: our guess of where the others were);
/// - the server ran short of our commands, or held us a tick for a late one, so the
///   commands after it meet the world later than we predicted (late input);
/// - no prediction to compare (`predicted` false).
///
/// Anything left is our own misprediction, our own rockets' pushes included (we predict
/// them).
fn classify(server: &ServerState, predicted: bool, before: Touched) -> CorrectionCause {
    let touched = server.touched;
    if server.dead {
        CorrectionCause::Killed
    } else if touched.push || before.others {
        CorrectionCause::Knockback
    } else if touched.contact || before.contact {
        CorrectionCause::Collision
    } else if server.starved || touched.held {
        CorrectionCause::Late
    } else if !predicted {
        CorrectionCause::Other
    } else {
        CorrectionCause::Own
    }
}

/// Lets the visual offset fade, frame-rate independently.
fn decay_visual_offset(
    time: Res<Time>,
    settings: Res<PredictionSettings>,
    mut offsets: Query<&mut VisualOffset>,
) {
    let keep = (-time.delta_secs() / settings.decay_seconds).exp();
    for mut offset in &mut offsets {
        offset.0 *= keep;
        if offset.0.length_squared() < 1e-10 {
            offset.0 = Vec3::ZERO;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::time::TimeUpdateStrategy;
    use std::time::Duration;

    #[test]
    fn another_rocket_is_news_once_and_forgotten_when_the_server_drops_it() {
        let rocket = |id: u16, owner: u8| Rocket {
            id,
            kind: sightline_combat::ProjectileKind::Rocket,
            owner: PlayerId(owner),
            pos: Vec3::ZERO,
            vel: Vec3::X,
            age: 0.0,
            detonate: false,
        };
        let me = PlayerId(1);
        let mut learnt = LearntRockets::default();
        assert!(!learnt.learn(&[rocket(1, 1)], me), "ours are never news");
        assert!(learnt.learn(&[rocket(1, 1), rocket(2, 2)], me));
        assert!(!learnt.learn(&[rocket(2, 2)], me), "flown already");
        assert!(learnt.learn(&[rocket(2, 2), rocket(3, 4)], me));
        assert!(!learnt.learn(&[rocket(3, 4)], me));
        assert_eq!(learnt.0, [3], "2 burst and is forgotten");
    }

    #[test]
    fn corrections_are_classified_by_the_servers_word_then_by_what_we_predicted() {
        let server = |touched: ServerTouches, starved: bool| ServerState {
            starved,
            touched,
            ..default()
        };
        let none = ServerTouches::default();
        let nothing = Touched::default();
        let cause = |s: &ServerState, before: Touched| classify(s, true, before);
        assert_eq!(cause(&server(none, false), nothing), CorrectionCause::Own);
        let others_burst = Touched {
            others: true,
            ..default()
        };
        let body = Touched {
            contact: true,
            ..default()
        };
        // We predicted another's burst, or a body in our way, that the server did not
        // give us: the others' doing, not ours.
        assert_eq!(
            cause(&server(none, false), others_burst),
            CorrectionCause::Knockback
        );
        assert_eq!(
            cause(&server(none, false), body),
            CorrectionCause::Collision
        );
        // Our own burst predicted is still ours.
        let own = Touched {
            own: true,
            ..default()
        };
        assert_eq!(cause(&server(none, false), own), CorrectionCause::Own);
        // A hold or a repeat: late input.
        let held = ServerTouches { held: true, ..none };
        assert_eq!(cause(&server(held, false), nothing), CorrectionCause::Late);
        assert_eq!(cause(&server(none, true), nothing), CorrectionCause::Late);
        // What the server says it did comes first.
        let pushed = ServerTouches { push: true, ..held };
        assert_eq!(
            cause(&server(pushed, false), body),
            CorrectionCause::Knockback
        );
        assert_eq!(
            classify(&server(none, false), false, nothing),
            CorrectionCause::Other
        );
        // Killed by a rocket we saw coming: the stop at death, which the death camera
        // shows, though the server says that rocket pushed us too (it did, and we flew
        // it exactly: what differs is the dead stop).
        let dead = ServerState {
            dead: true,
            ..server(none, false)
        };
        assert_eq!(cause(&dead, others_burst), CorrectionCause::Killed);
        let pushed_dead = ServerState {
            dead: true,
            ..server(pushed, false)
        };
        assert_eq!(cause(&pushed_dead, others_burst), CorrectionCause::Killed);
    }

    #[test]
    fn the_visual_offset_decays_smoothly_to_nothing() {
        let mut app = App::new();
        app.add_plugins(bevy::time::TimePlugin)
            .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(5)))
            .init_resource::<PredictionSettings>()
            .add_systems(Update, decay_visual_offset);
        let player = app.world_mut().spawn(VisualOffset(Vec3::X)).id();
        app.update(); // the first frame has no elapsed time
        let mut last = 1.0;
        let mut frames = 0;
        while app.world().get::<VisualOffset>(player).unwrap().0.x > 1.0 / std::f32::consts::E {
            app.update();
            frames += 1;
            let x = app.world().get::<VisualOffset>(player).unwrap().0.x;
            assert!(x < last, "the offset must shrink every frame");
            last = x;
        }
        // One time constant (75 ms) of 5 ms frames, give or take a frame.
        assert!((14..=16).contains(&frames), "{frames} frames");
        for _ in 0..200 {
            app.update();
        }
        assert_eq!(
            app.world().get::<VisualOffset>(player).unwrap().0,
            Vec3::ZERO
        );
    }
}
