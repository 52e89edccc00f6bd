//! Spectators: connections that watch rather than play. A spectator takes no player slot
//! (spectators have a limit of their own, `sv_max_spectators`), sends no input (one that
//! does is kicked), and is sent the world as it was `sv_spectator_delay` ago, so what it
//! sees is no use to call out to a player.
//!
//! On every snapshot tick the world as snapshots show it ([`WorldView`]) is kept in the
//! [`SpectatorFeed`], with, for each player whose client has an [`Interest`], whom that
//! client was sent. A spectator is sent the frame as old as the delay, chosen and encoded
//! as a player's snapshot is: against the newest snapshot it acknowledged, everyone when
//! it follows nobody (a free camera), and what the followed player's client was sent
//! when it follows someone, so its view costs what that player's does. The shots, bursts
//! and deaths the frames between bring reach it as they reached players, only later, and
//! so does what tells how the match stands (the scoreboard, the match's state and end,
//! lifetime statistics: [`tell_match`]): a second connection watching would otherwise
//! learn each kill the delay before its world shows it.

use crate::config::{MAX_SPECTATOR_DELAY, ServerConfig};
use crate::connection::{Connection, ConnectionStage};
use crate::interest::Interest;
use crate::outbox::Outgoing;
use crate::snapshots::{
    EventQueue, SnapshotCounter, WorldView, encode_within_budget, rockets_shown_to, shown_to,
};
use crate::stalls::catching_up;
use crate::stats::SnapshotStats;
use crate::wire::send_reliable;
use bevy::prelude::*;
use sightline_map::CurrentMap;
use sightline_net::RenetServer;
use sightline_protocol::{Channel, PlayerEvent, PlayerSnap, ServerMessage, Snapshot};
use sightline_sim::SimSet;
use sightline_sim::{PlayerId, Tick, TickConfig};
use std::collections::VecDeque;
use std::sync::Arc;

/// Most shots, bursts and deaths kept waiting for spectators; past it the oldest go.
const MAX_WAITING: usize = 16_384;

/// A connection that watches. Its entity has no player: no [`PlayerId`], no input.
#[derive(Component, Debug, Clone, Default)]
pub struct Spectator {
    /// The name it gave, for the host.
    pub name: String,
    /// Whom it follows (`None`: a free camera, sent everyone).
    pub follow: Option<PlayerId>,
    /// The newest snapshot it acknowledged (0: none).
    pub ack: u32,
    /// The tick of the last frame it was sent (`None`: none yet).
    shown_through: Option<u32>,
    /// The statistics key it played with, when it was a player: given back if it comes
    /// to play again.
    pub(crate) key: Option<sightline_protocol::PlayerKey>,
}

impl Spectator {
    /// A spectator called `name`, following nobody yet.
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            ..Default::default()
        }
    }

    /// A spectator who played with the statistics key `key`, to play with again.
    pub(crate) fn keeping(self, key: Option<sightline_protocol::PlayerKey>) -> Self {
        Self { key, ..self }
    }

    /// Takes an acknowledgement of `snapshot` if it is newer than the one held. One that
    /// names a snapshot never sent is an error (no honest client sends it); one sent too
    /// long ago to serve as a baseline is ignored.
    pub(crate) fn acknowledge(
        &mut self,
        snapshot: u32,
        counter: &SnapshotCounter,
    ) -> Result<(), UnknownSnapshot> {
        if counter.tick_of(snapshot).is_none() {
            return match snapshot == 0 || snapshot <= counter.last() {
                true => Ok(()),
                false => Err(UnknownSnapshot(snapshot)),
            };
        }
        // Numbers wrap: the newer is the nearer behind the last sent.
        let age = |seq: u32| counter.last().wrapping_sub(seq);
        if self.ack == 0 || age(snapshot) < age(self.ack) {
            self.ack = snapshot;
        }
        Ok(())
    }
}

/// An acknowledgement of a snapshot never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnknownSnapshot(pub u32);

/// One snapshot tick of the world, kept to show spectators later.
#[derive(Debug)]
struct Frame {
    /// The world then, everyone exact (chosen and made coarse per spectator).
    world: Arc<Snapshot>,
    /// For each player whose client has an interest, a bit per player it was sent.
    sent: Vec<(PlayerId, u64)>,
}

/// The world as it was, for spectators: a frame per snapshot tick over the delay, and the
/// reliable news (shots, bursts) and deaths of those ticks, by tick.
#[derive(Resource, Debug, Default)]
pub struct SpectatorFeed {
    frames: VecDeque<Frame>,
    news: VecDeque<(u32, ServerMessage)>,
    deaths: VecDeque<(u32, PlayerEvent)>,
    /// News and deaths dropped unsent because too many waited.
    pub dropped: u64,
    /// Whether spectators are shown the world as it is (no delay, as in a demo's
    /// playback): then how the match stands reaches them at once, with nothing to hide.
    live: bool,
}

impl SpectatorFeed {
    /// Keeps a shot or a burst of `tick` for spectators (nothing, on a server that keeps
    /// no world for them).
    pub(crate) fn news(&mut self, tick: u32, msg: ServerMessage) {
        if !self.frames.is_empty() {
            self.dropped += u64::from(push_capped(&mut self.news, (tick, msg)));
        }
    }

    /// Keeps a death of `tick` for spectators' kill feeds.
    pub(crate) fn death(&mut self, tick: u32, event: PlayerEvent) {
        if !self.frames.is_empty() {
            self.dropped += u64::from(push_capped(&mut self.deaths, (tick, event)));
        }
    }

    /// The newest frame no newer than `tick`.
    fn frame_at(&self, tick: u32) -> Option<&Frame> {
        self.frames
            .iter()
            .rev()
            .find(|f| f.world.server_tick <= tick)
    }

    /// Forgets what no spectator will be sent again: frames older than the newest at or
    /// before `shown` (the tick every spectator has been shown), and news up to it.
    fn forget_through(&mut self, shown: u32) {
        while self
            .frames
            .get(1)
            .is_some_and(|f| f.world.server_tick <= shown)
        {
            self.frames.pop_front();
        }
        self.news.retain(|(t, _)| *t > shown);
        self.deaths.retain(|(t, _)| *t > shown);
    }
}

/// Sends `msg`, which tells how the match stands at `tick`, to every player now, and to
/// spectators when their late world reaches `tick`.
pub(crate) fn tell_match(
    outbox: &mut MessageWriter<Outgoing>,
    feed: &mut SpectatorFeed,
    tick: u32,
    msg: ServerMessage,
) {
    if feed.live {
        // A feed kept for no delay would hold the last news past a demo's end, when no
        // snapshot tick comes to send it.
        outbox.write(Outgoing::ToPlaying(msg));
        return;
    }
    feed.news(tick, msg.clone());
    outbox.write(Outgoing::ToPlayers(msg));
}

/// Telling how the match stands (`tell_match`) from a system: what a host's own
/// messages of the kind (players' lifetime records) go through.
#[derive(bevy::ecs::system::SystemParam)]
pub struct MatchNews<'w> {
    outbox: MessageWriter<'w, Outgoing>,
    feed: ResMut<'w, SpectatorFeed>,
    tick: Res<'w, Tick>,
}

impl MatchNews<'_> {
    /// Sends `msg` to every player now, and to spectators when their late world reaches
    /// this tick.
    pub fn tell(&mut self, msg: ServerMessage) {
        tell_match(&mut self.outbox, &mut self.feed, self.tick.0, msg);
    }
}

/// Pushes onto a bounded queue; whether the oldest went to make room.
fn push_capped<T>(queue: &mut VecDeque<T>, item: T) -> bool {
    let full = queue.len() >= MAX_WAITING;
    if full {
        queue.pop_front();
    }
    queue.push_back(item);
    full
}

/// The delay in ticks, within what the feed keeps.
fn delay_ticks(config: &ServerConfig, tick: &TickConfig) -> u32 {
    let seconds = config.spectator_delay.clamp(0.0, MAX_SPECTATOR_DELAY);
    (seconds * tick.tick_hz as f32).round() as u32
}

/// On snapshot ticks, keeps the world for spectators: every player, and whom each
/// player's client was sent. A new map starts the feed afresh.
pub(crate) fn keep_world_for_spectators(
    world: WorldView,
    interests: Query<(&PlayerId, &Interest)>,
    map: Res<CurrentMap>,
    mut feed: ResMut<SpectatorFeed>,
    config: Res<ServerConfig>,
    fixed: Res<Time<Fixed>>,
) {
    let (tick, tick_config) = (*world.tick(), *world.tick_config());
    if !tick_config.is_snapshot_tick(tick) || catching_up(&fixed) {
        return;
    }
    if map.is_changed() {
        *feed = SpectatorFeed::default();
    }
    feed.live = delay_ticks(&config, &tick_config) == 0;
    let snapshot = world.snapshot();
    let sent = interests
        .iter()
        .map(|(id, interest)| {
            let bits = snapshot
                .players
                .iter()
                .filter(|p| interest.sends(p.id, tick.0))
                .fold(0u64, |bits, p| bits | 1u64 << (p.id.0 % 64));
            (*id, bits)
        })
        .collect();
    // Sending to spectators forgets what it has sent; the delay bounds what is kept.
    feed.frames.push_back(Frame {
        world: Arc::new(snapshot),
        sent,
    });
}

/// What sending to spectators reads and changes.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct SpectatorSend<'w, 's> {
    tick: Res<'w, Tick>,
    tick_config: Res<'w, TickConfig>,
    config: Res<'w, ServerConfig>,
    feed: ResMut<'w, SpectatorFeed>,
    server: ResMut<'w, RenetServer>,
    weights: ResMut<'w, SnapshotStats>,
    fixed: Res<'w, Time<Fixed>>,
    spectators: Query<
        'w,
        's,
        (
            &'static Connection,
            &'static mut Spectator,
            &'static mut SnapshotCounter,
            &'static mut EventQueue,
        ),
    >,
}

/// On snapshot ticks, sends every spectator the world as it was the delay ago, and the
/// shots, bursts and deaths since the last frame it was sent.
pub(crate) fn send_to_spectators(mut s: SpectatorSend) {
    let (tick, config) = (*s.tick, *s.tick_config);
    if !config.is_snapshot_tick(tick) || catching_up(&s.fixed) {
        return;
    }
    let then = tick.0.saturating_sub(delay_ticks(&s.config, &config));
    let Some(frame) = s.feed.frame_at(then) else {
        return; // the feed does not reach back that far yet
    };
    let shown = frame.world.server_tick;
    let lifetime = (crate::snapshots::EVENT_LIFETIME_S * f64::from(config.tick_hz)) as u32;
    for (conn, mut spectator, mut counter, mut queue) in &mut s.spectators {
        if conn.stage != ConnectionStage::Playing {
            continue;
        }
        // What waits up to the frame shown has been sent to nobody yet (it is forgotten
        // once sent to all), and comes now; a spectator joining begins after it. (Shots
        // and deaths are kept after the tick that made them ran, so one can wait a
        // frame past its own.)
        if spectator.shown_through.is_some() {
            let due = |t: &u32| *t <= shown;
            for (_, msg) in s.feed.news.iter().filter(|(t, _)| due(t)) {
                send_reliable(&mut s.server, conn.client_id, msg);
            }
            for (t, death) in s.feed.deaths.iter().filter(|(t, _)| due(t)) {
                s.weights.events_expired += queue.push(tick.0, *t, *death) as u64;
            }
        }
        spectator.shown_through = Some(shown);
        if let Some(through) = counter.events_through(spectator.ack) {
            queue.acknowledge(through);
        }
        s.weights.events_expired += queue.expire(tick.0, lifetime) as u64;
        let mut sent = frame_for(frame, spectator.follow);
        sent.seq = counter.next(tick.0);
        sent.events = queue.to_send();
        let own = spectator
            .follow
            .and_then(|id| frame.world.players.iter().find(|p| p.id == id));
        let baseline = counter.baseline(spectator.ack);
        match encode_within_budget(&mut sent, baseline.as_deref(), own) {
            Ok(bytes) => {
                let moving = sent.players.iter().filter(|p| p.vel != [0; 3]).count();
                s.weights.count(bytes.len(), sent.players.len(), moving);
                s.server
                    .send_message(conn.client_id, Channel::Unreliable, bytes);
                counter.keep(sent);
            }
            Err(e) => warn!("a spectator's snapshot was not sent: {e}"),
        }
    }
    s.feed.forget_through(shown);
}

/// The snapshot a spectator following `follow` is shown of `frame`: everyone for a free
/// camera (or one following a player no client's interest covers, a bot), else those
/// the followed player's client was sent; the followed player exact, the rest as players
/// see one another.
fn frame_for(frame: &Frame, follow: Option<PlayerId>) -> Snapshot {
    let world = &frame.world;
    let followed = follow.and_then(|id| world.players.iter().find(|p| p.id == id));
    let sent = follow.and_then(|id| frame.sent.iter().find(|(p, _)| *p == id).map(|s| s.1));
    let sends = |id: PlayerId| sent.is_none_or(|bits| bits & (1u64 << (id.0 % 64)) != 0);
    let coarse: Vec<PlayerSnap> = world
        .players
        .iter()
        .map(|p| p.as_seen_by_others())
        .collect();
    let players = shown_to(followed, &world.players, &coarse, sends);
    // Every rocket: few, and seen by someone in a game long past.
    let projectiles = rockets_shown_to(followed, &world.projectiles, |_| true);
    Snapshot {
        players,
        projectiles,
        ..(**world).clone()
    }
}

/// Spectators: the world kept for them and sent that much later, after the players'
/// snapshots of the tick; only on a server that takes spectators.
pub(crate) struct SpectatorsPlugin;

impl Plugin for SpectatorsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<SpectatorFeed>().add_systems(
            FixedUpdate,
            (keep_world_for_spectators, send_to_spectators)
                .chain()
                .after(crate::snapshots::send_weapon_checks)
                .in_set(SimSet::BuildSnapshots)
                .run_if(|config: Res<ServerConfig>| config.max_spectators > 0),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_movement::PlayerState;

    /// A frame of three players, the first two with clients, 0 sent only 1 and itself.
    fn frame() -> Frame {
        let player = |id: u8| {
            let state = PlayerState {
                pos: Vec3::new(f32::from(id) * 40.0, 0.0, 0.0),
                yaw: 0.123_456,
                ..Default::default()
            };
            PlayerSnap::new(PlayerId(id), &state)
        };
        Frame {
            world: Arc::new(Snapshot {
                server_tick: 640,
                players: (0..3).map(player).collect(),
                ..Default::default()
            }),
            sent: vec![(PlayerId(0), 0b011), (PlayerId(1), 0b111)],
        }
    }

    #[test]
    fn a_follower_is_sent_what_the_followed_player_was_sent() {
        let frame = frame();
        let ids = |s: &Snapshot| s.players.iter().map(|p| p.id.0).collect::<Vec<_>>();
        let followed = frame_for(&frame, Some(PlayerId(0)));
        assert_eq!(ids(&followed), [0, 1]);
        assert_eq!(
            followed.players[0], frame.world.players[0],
            "followed: exact"
        );
        assert_eq!(
            followed.players[1],
            frame.world.players[1].as_seen_by_others(),
            "the rest as players see each other"
        );
        assert_eq!(followed.server_tick, 640, "the frame's own time");
        // A free camera, or a player no client's interest covers (a bot): everyone.
        for follow in [None, Some(PlayerId(2)), Some(PlayerId(9))] {
            let shown = frame_for(&frame, follow);
            assert_eq!(ids(&shown), [0, 1, 2], "{follow:?}");
        }
    }

    #[test]
    fn acknowledgements_must_name_a_snapshot_sent_and_only_a_newer_one_counts() {
        let mut counter = SnapshotCounter::default();
        for tick in 0..10 {
            counter.next(tick);
        }
        let mut spectator = Spectator::new("watcher".into());
        assert_eq!(spectator.acknowledge(7, &counter), Ok(()));
        assert_eq!(spectator.acknowledge(5, &counter), Ok(()));
        assert_eq!(spectator.ack, 7, "an older one changes nothing");
        assert_eq!(spectator.acknowledge(0, &counter), Ok(()));
        assert_eq!(
            spectator.acknowledge(11, &counter),
            Err(UnknownSnapshot(11))
        );
        assert_eq!(spectator.ack, 7);
    }

    #[test]
    fn the_feed_forgets_what_every_spectator_was_shown_and_caps_what_waits() {
        let mut feed = SpectatorFeed::default();
        feed.news(
            1,
            ServerMessage::Chat {
                from: PlayerId(0),
                text: "before".into(),
                team: false,
            },
        );
        assert!(
            feed.news.is_empty(),
            "nothing kept before the feed keeps frames"
        );
        for tick in [10, 20, 30] {
            feed.frames.push_back(Frame {
                world: Arc::new(Snapshot {
                    server_tick: tick,
                    ..Default::default()
                }),
                sent: Vec::new(),
            });
        }
        assert_eq!(feed.frame_at(25).map(|f| f.world.server_tick), Some(20));
        assert!(feed.frame_at(5).is_none(), "not kept that far back");
        for tick in [15, 25] {
            feed.death(
                tick,
                PlayerEvent::Killed {
                    victim: PlayerId(1),
                    killer: PlayerId(0),
                    weapon: sightline_combat::WeaponKind::Rifle,
                },
            );
        }
        feed.forget_through(20);
        let ticks: Vec<u32> = feed.frames.iter().map(|f| f.world.server_tick).collect();
        assert_eq!(
            ticks,
            [20, 30],
            "the frame shown is kept for spectators joining"
        );
        assert_eq!(feed.deaths.len(), 1, "the death at 25 still waits");
        for i in 0..MAX_WAITING as u32 + 3 {
            feed.news(
                100 + i,
                ServerMessage::Chat {
                    from: PlayerId(0),
                    text: String::new(),
                    team: false,
                },
            );
        }
        assert_eq!((feed.news.len(), feed.dropped), (MAX_WAITING, 3));
    }
}
