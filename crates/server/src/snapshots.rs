//! Snapshots: the players each client could see or hear ([`Interest`]), sent to it with
//! its own acknowledgements, as changes from the newest snapshot it acknowledged, and the
//! events it is to be shown ([`EventQueue`]) until it acknowledges one that held them.

use crate::connection::{Connection, ConnectionStage};
use crate::inputs::InputBuffer;
use crate::interest::{HEAR_RADIUS, Interest};
use crate::rate::{DownloadRate, hold_for_rate, squared_distance};
use crate::stalls::{FrameLag, catching_up};
use crate::stats::{Observers, SLICE_BYTES, SnapshotStats, TickTimes};
use crate::stream::SnapshotStream;
use bevy::prelude::*;
use sightline_combat::{
    Arsenal, DroppedWeapon, Flags, ItemSpot, Pushes, Rocket, SpawnCount, Vitals, items_present,
};
use sightline_movement::grid::POS_STEPS;
use sightline_movement::{Contacts, PlayerState};
use sightline_net::{RenetServer, SentToClients};
use sightline_protocol::{
    Channel, DropSnap, EncodeError, EventSnap, FlagSpot, MAX_BASELINE_AGE, MAX_SNAPSHOT_DROPS,
    MAX_SNAPSHOT_EVENTS, MAX_SNAPSHOT_PROJECTILES, PlayerEvent, PlayerSnap, ProjectileSnap,
    ServerDatagram, Snapshot, SnapshotPacket, Touches, WeaponCheck, Wire, kit,
};
use sightline_sim::SimSet;
use sightline_sim::{CurrentCmd, PlayerId, Tick, TickConfig};
use std::collections::VecDeque;
use std::sync::Arc;

/// Snapshots remembered per client, to check acknowledgements: 1 s at 128 a second, 2 s
/// at 64, and more than [`MAX_BASELINE_AGE`]. An acknowledgement older than that names a
/// world the client has long left.
pub const ACKABLE_SNAPSHOTS: usize = 128;

/// The snapshots recently sent to one client: their numbers, the ticks they describe,
/// when they left and what they held, to encode later ones against.
#[derive(Component, Debug, Default, Clone)]
pub struct SnapshotCounter {
    last: u32,
    recent: VecDeque<Sent>,
}

/// One snapshot sent.
#[derive(Debug, Clone)]
struct Sent {
    seq: u32,
    tick: u32,
    /// Real seconds when it left, if noted ([`SnapshotCounter::note_sent_at`]).
    at: Option<f64>,
    snapshot: Option<Arc<Snapshot>>,
}

impl SnapshotCounter {
    /// Numbers the next snapshot, taken after `tick`. Numbers wrap past `u32::MAX`
    /// (years of play) and skip 0, which means "none".
    pub fn next(&mut self, tick: u32) -> u32 {
        self.last = self.last.wrapping_add(1).max(1);
        self.recent.push_back(Sent {
            seq: self.last,
            tick,
            at: None,
            snapshot: None,
        });
        if self.recent.len() > ACKABLE_SNAPSHOTS {
            self.recent.pop_front();
        }
        self.last
    }

    /// Starts over after a change of role, numbering on: nothing sent before can serve
    /// as a baseline (the client started a new session and keeps none of it), and a
    /// snapshot of the old role still on its way is no newer than the next one.
    pub fn restart(&mut self) {
        self.recent.clear();
    }

    /// Remembers what the last numbered snapshot held.
    pub fn keep(&mut self, sent: Snapshot) {
        if let Some(last) = self.recent.back_mut() {
            last.snapshot = Some(Arc::new(sent));
        }
    }

    /// Notes when the last numbered snapshot left (real seconds), to time the round trip
    /// to its acknowledgement.
    pub fn note_sent_at(&mut self, at: f64) {
        if let Some(last) = self.recent.back_mut() {
            last.at = Some(at);
        }
    }

    /// When a recent snapshot left, if noted.
    pub fn sent_at(&self, seq: u32) -> Option<f64> {
        self.find(seq).and_then(|s| s.at)
    }

    /// The snapshot to encode the one just numbered against: the acknowledged `ack`, if
    /// it is no more than [`MAX_BASELINE_AGE`] back (the client keeps more than that).
    pub fn baseline(&self, ack: u32) -> Option<Arc<Snapshot>> {
        if ack == 0 || self.last.wrapping_sub(ack) > MAX_BASELINE_AGE {
            return None;
        }
        self.find(ack).and_then(|s| s.snapshot.clone())
    }

    /// Number of the last snapshot sent (0: none yet).
    pub fn last(&self) -> u32 {
        self.last
    }

    /// The tick of a snapshot this client says it holds, if it is one of the recent
    /// snapshots sent to it; `None` for a number never sent or long gone.
    pub fn tick_of(&self, seq: u32) -> Option<u32> {
        self.find(seq).map(|s| s.tick)
    }

    /// The newest of the client's commands that a recent snapshot said was simulated:
    /// what input packets count their base back from.
    pub fn acked_input_of(&self, seq: u32) -> Option<u32> {
        self.find(seq)
            .and_then(|s| s.snapshot.as_ref())
            .map(|s| s.ack_input_seq)
    }

    /// The newest event a recent snapshot carried (`None`: none, or a snapshot never sent
    /// or long gone): the client holding that snapshot has every event up to it.
    pub fn events_through(&self, seq: u32) -> Option<u32> {
        self.find(seq)
            .and_then(|s| s.snapshot.as_ref())
            .and_then(|s| s.events.last())
            .map(|e| e.seq)
    }

    fn find(&self, seq: u32) -> Option<&Sent> {
        self.recent.iter().rev().find(|s| s.seq == seq)
    }
}

/// Most events kept for one client awaiting its acknowledgement; past it the oldest go,
/// counted ([`SnapshotStats::events_expired`]).
pub const MAX_QUEUED_EVENTS: usize = 64;
/// Longest an event waits for acknowledgement, seconds: a hit marker or a kill feed line
/// older than this is no news (the scoreboard keeps the count).
pub const EVENT_LIFETIME_S: f64 = 3.0;

/// The events one client is to be shown (kills, hits, hurts, verdicts on its shots), each
/// carried in every snapshot to it, oldest first and [`MAX_SNAPSHOT_EVENTS`] at most,
/// until it acknowledges a snapshot that held it: a lost datagram delays an event by a
/// snapshot rather than by a reliable resend, and the client drops repeats by number.
#[derive(Component, Debug, Default, Clone)]
pub struct EventQueue {
    /// Number of the last event queued (0: none yet).
    last: u32,
    /// Unacknowledged events, with the tick each was queued in.
    pending: VecDeque<(u32, EventSnap)>,
}

impl EventQueue {
    /// Queues `event`, of the world at `tick`, in tick `now`; returns how many older ones
    /// went to make room (0 or 1). Numbers stop at `u32::MAX` (four billion events in one
    /// connection), after which the client takes every event as a repeat.
    pub fn push(&mut self, now: u32, tick: u32, event: PlayerEvent) -> usize {
        self.last = self.last.saturating_add(1);
        let dropped = usize::from(self.pending.len() >= MAX_QUEUED_EVENTS);
        if dropped > 0 {
            self.pending.pop_front();
        }
        let seq = self.last;
        self.pending
            .push_back((now, EventSnap { seq, tick, event }));
        dropped
    }

    /// Forgets the events up to `through`, which the client has.
    pub fn acknowledge(&mut self, through: u32) {
        while self.pending.front().is_some_and(|(_, e)| e.seq <= through) {
            self.pending.pop_front();
        }
    }

    /// Forgets the events queued more than `lifetime` ticks before `now`; returns how many.
    pub fn expire(&mut self, now: u32, lifetime: u32) -> usize {
        let before = self.pending.len();
        while self
            .pending
            .front()
            .is_some_and(|(queued, _)| now.wrapping_sub(*queued) > lifetime)
        {
            self.pending.pop_front();
        }
        before - self.pending.len()
    }

    /// What the next snapshot carries: the oldest unacknowledged events.
    pub fn to_send(&self) -> Vec<EventSnap> {
        self.pending
            .iter()
            .take(MAX_SNAPSHOT_EVENTS)
            .map(|(_, e)| *e)
            .collect()
    }

    /// Events waiting for acknowledgement.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// What a snapshot shows of the world, before it is chosen and addressed for a client.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct WorldView<'w, 's> {
    tick: Res<'w, Tick>,
    config: Res<'w, TickConfig>,
    times: Res<'w, TickTimes>,
    players: Query<
        'w,
        's,
        (
            &'static PlayerId,
            &'static PlayerState,
            &'static Vitals,
            &'static Arsenal,
            &'static SpawnCount,
            &'static CurrentCmd,
        ),
    >,
    rockets: Query<'w, 's, &'static Rocket>,
    items: Query<'w, 's, &'static ItemSpot>,
    drops: Query<'w, 's, &'static DroppedWeapon>,
    flags: Res<'w, Flags>,
}

impl WorldView<'_, '_> {
    /// The tick being built.
    pub(crate) fn tick(&self) -> &Tick {
        &self.tick
    }

    /// The tick and snapshot rates.
    pub(crate) fn tick_config(&self) -> &TickConfig {
        &self.config
    }

    /// The world now, as every recipient shares it: all players (exact, in id order),
    /// rockets on the wire's grid, the items there and the weapons lying. The header is
    /// this tick's; the acknowledgements, events and choice of players are each client's.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            seq: 0,
            baseline: 0,
            server_tick: self.tick.0,
            server_time_us: self.config.tick_time_us(*self.tick),
            ack_input_seq: 0,
            input_queue: 0,
            repeated_inputs: 0,
            touches: Touches::default(),
            server_tick_us: self.times.last_us(),
            players: self
                .players
                .iter()
                .map(|(id, s, vitals, arsenal, spawns, cmd)| PlayerSnap {
                    health: vitals.health.clamp(0.0, 255.0).ceil() as u8,
                    armor: vitals.armor.clamp(0.0, 255.0).ceil() as u8,
                    weapon: arsenal.current,
                    ammo: arsenal.ammo[arsenal.current.index()].magazine,
                    spawn_count: spawns.0,
                    kit: kit(arsenal.owned, vitals.quad > 0.0, vitals.regen > 0.0),
                    ..PlayerSnap::new(*id, s).with_intent(&cmd.0)
                })
                .collect(),
            // On the wire's grid, so what is kept as sent is what each client resolves.
            projectiles: self
                .rockets
                .iter()
                .map(|r| {
                    ProjectileSnap {
                        id: r.id,
                        kind: r.kind,
                        owner: r.owner,
                        pos: r.pos.to_array(),
                        vel: r.vel.to_array(),
                    }
                    .on_grid()
                })
                .collect(),
            items: items_present(self.items.iter().copied()),
            drops: drops_lying(&self.drops),
            flags: self
                .flags
                .active()
                .then(|| self.flags.at.map(FlagSpot::from)),
            events: Vec::new(),
            held: Vec::new(),
        };
        snapshot.players.sort_by_key(|p| p.id);
        snapshot
    }

    /// The item spots the map has, a bit each.
    pub(crate) fn spots(&self) -> u64 {
        self.items
            .iter()
            .fold(0u64, |bits, s| bits | (1 << s.index))
    }
}

/// One playing client as its snapshot is made: what it holds and what it is shown.
type Recipient<'a> = (
    &'a Connection,
    &'a mut InputBuffer,
    &'a mut SnapshotCounter,
    Option<&'a PlayerId>,
    Option<&'a Interest>,
    Option<&'a Pushes>,
    Option<&'a Contacts>,
    Option<&'a mut EventQueue>,
    Option<&'a mut DownloadRate>,
    Option<&'a mut SnapshotStream>,
);

/// Sends the world to every playing client whose stream is due this tick
/// ([`SnapshotStream`]; the server's own snapshot rate for one that asked for none).
pub(crate) fn send_snapshots(
    world: WorldView,
    mut server: ResMut<RenetServer>,
    mut clients: Query<Recipient>,
    mut weights: ResMut<SnapshotStats>,
    observers: Option<Res<Observers>>,
    fixed: Res<Time<Fixed>>,
    sent_to: Option<Res<SentToClients>>,
    (real, lag): (Res<Time<Real>>, Res<FrameLag>),
) {
    let (tick, config) = (*world.tick, *world.config);
    // Real time as the datagrams read in this frame reckon it, to time acknowledgements.
    let sent_at = real.elapsed_secs_f64() + lag.0.as_secs_f64();
    // Catching up after a stall, the snapshots of the ticks in between would all leave
    // in this frame: only the last ones go.
    let server_pace = config.is_snapshot_tick(tick);
    let due = |stream: Option<&SnapshotStream>| stream.map_or(server_pace, |s| s.is_due(tick));
    let anyone_due = || {
        clients
            .iter()
            .any(|c| c.0.stage == ConnectionStage::Playing && due(c.9))
    };
    if catching_up(&fixed) || !(server_pace || anyone_due()) {
        return;
    }
    // What every recipient shares; each gets its own header and players.
    let mut snapshot = world.snapshot();
    let spots = world.spots();
    let everyone = std::mem::take(&mut snapshot.players);
    let coarse: Vec<PlayerSnap> = everyone.iter().map(|p| p.as_seen_by_others()).collect();
    let rockets = std::mem::take(&mut snapshot.projectiles);
    // One snapshot, its players chosen and its header rewritten for each recipient, and
    // encoded against what that recipient holds.
    let lifetime = (EVENT_LIFETIME_S * f64::from(config.tick_hz)) as u32;
    let now = f64::from(tick.0) / f64::from(config.tick_hz.max(1));
    for (conn, mut buffer, mut counter, me, interest, pushes, contacts, queue, mut rate, stream) in
        &mut clients
    {
        if conn.stage != ConnectionStage::Playing {
            continue;
        }
        let mut stream = stream.map(|s| s.into_inner());
        if server_pace && let Some(stream) = stream.as_deref_mut() {
            stream.fit_to_rate(&config, rate.as_deref());
        }
        if !due(stream.as_deref()) {
            continue;
        }
        let hz = stream.map_or(config.snapshot_hz(), |s| s.hz(&config));
        let budget = match rate.as_deref_mut() {
            Some(rate) => {
                let sent = sent_to.as_ref().map_or(0, |s| s.total(conn.client_id));
                let Some(budget) = rate.budget(now, hz, sent) else {
                    continue; // over its rate: this snapshot waits
                };
                Some(budget)
            }
            None => None,
        };
        let events = match queue {
            Some(mut queue) => {
                if let Some(through) = counter.events_through(buffer.ack_snapshot) {
                    queue.acknowledge(through);
                }
                weights.events_expired += queue.expire(tick.0, lifetime) as u64;
                queue.to_send()
            }
            None => Vec::new(),
        };
        let timing = buffer.take_timing();
        let seq = counter.next(tick.0);
        counter.note_sent_at(sent_at);
        // The recipient's own player, found once: what is near it and what waits.
        let own = me.and_then(|me| everyone.iter().find(|p| p.id == *me));
        let mut sent = Snapshot {
            seq,
            ack_input_seq: buffer.last_simulated(),
            // No tick since the last snapshot (not possible at a steady rate): report 0.
            input_queue: if timing.min_queue == u8::MAX {
                0
            } else {
                timing.min_queue
            },
            repeated_inputs: timing.repeats,
            touches: touches_of(pushes, contacts, &buffer),
            players: shown_to(own, &everyone, &coarse, |id| {
                interest.is_none_or(|i| i.sends(id, tick.0))
            }),
            projectiles: rockets_shown_to(own, &rockets, |r| {
                interest.is_none_or(|i| i.sends_rocket(r, me.copied(), tick.0))
            }),
            items: interest.map_or(snapshot.items, |i| i.items & spots),
            events,
            ..snapshot.clone()
        };
        let baseline = counter.baseline(buffer.ack_snapshot);
        let baseline = baseline.as_deref();
        match encode_within_budget(&mut sent, baseline, own) {
            Ok(bytes) => {
                // A full snapshot holds nobody back (nobody is held by the client yet), but
                // is charged to the rate all the same.
                let bytes = match (rate.as_deref_mut(), budget) {
                    (Some(rate), Some(budget)) => {
                        let bytes = match baseline {
                            Some(b) => hold_for_rate(&mut sent, b, own, budget, rate, bytes),
                            None => bytes,
                        };
                        rate.spend(bytes.len(), &sent);
                        bytes
                    }
                    _ => bytes,
                };
                let moving = sent.players.iter().filter(|p| p.vel != [0; 3]).count();
                weights.count(bytes.len(), sent.players.len(), moving);
                weights.held += sent.held.len() as u64;
                if let Some(observers) = &observers {
                    (observers.snapshot_bytes)(bytes.len() as f64);
                }
                server.send_message(conn.client_id, Channel::Unreliable, bytes);
                // Kept as the baseline of later snapshots, should the client acknowledge it.
                counter.keep(sent);
            }
            Err(e) => warn!("a snapshot was not sent: {e}"),
        }
    }
}

/// What the server did to a player besides its commands, for its own client, with its
/// input `buffer`'s running total of held ticks (sent wrapping) and the held ticks it
/// still owes.
fn touches_of(
    pushes: Option<&Pushes>,
    contacts: Option<&Contacts>,
    buffer: &InputBuffer,
) -> Touches {
    let pushes = pushes.copied().unwrap_or_default();
    let contacts = contacts.copied().unwrap_or_default();
    Touches {
        own_pushes: pushes.own,
        pushes: pushes.others,
        contacts: contacts.count,
        contact_with: contacts.last.unwrap_or(PlayerId(0)),
        held: (buffer.holds() & 0xff) as u8,
        owed: buffer.owed().min(u8::MAX.into()) as u8,
    }
}

/// Everyone `interest` lets a client see, as it is shown them: its own player exact, and
/// everyone else as [`PlayerSnap::as_seen_by_others`], coarser where nobody sees the
/// difference, but with the exact velocity within [`HEAR_RADIUS`]: near enough to touch,
/// where its prediction carries them forward over a round trip to collide with.
pub(crate) fn shown_to(
    own: Option<&PlayerSnap>,
    everyone: &[PlayerSnap],
    coarse: &[PlayerSnap],
    sends: impl Fn(PlayerId) -> bool,
) -> Vec<PlayerSnap> {
    let near = ((HEAR_RADIUS * POS_STEPS) as i64).pow(2);
    let (me, from) = (own.map(|p| p.id), own.map(|p| p.pos));
    everyone
        .iter()
        .zip(coarse)
        .filter(|(p, _)| sends(p.id))
        .map(|(exact, coarse)| {
            let close = from.is_some_and(|from| squared_distance(exact.pos, from) <= near);
            match (Some(exact.id) == me, close) {
                (true, _) => *exact,
                (false, true) => PlayerSnap {
                    vel: exact.vel,
                    ..*coarse
                },
                (false, false) => *coarse,
            }
        })
        .collect()
}

/// The dropped weapons lying, in id order, as many as a snapshot carries.
fn drops_lying(drops: &Query<&DroppedWeapon>) -> Vec<DropSnap> {
    let mut lying: Vec<DropSnap> = drops
        .iter()
        .map(|d| DropSnap {
            id: d.id,
            weapon: d.weapon,
            pos: d.pos.to_array(),
        })
        .collect();
    lying.sort_by_key(|d| d.id);
    lying.truncate(MAX_SNAPSHOT_DROPS);
    lying
}

/// The rockets `sends` lets a client (whose player is `own`) see, at most
/// [`MAX_SNAPSHOT_PROJECTILES`]: past that, its own first, then the nearest.
pub(crate) fn rockets_shown_to(
    own: Option<&PlayerSnap>,
    rockets: &[ProjectileSnap],
    sends: impl Fn(&ProjectileSnap) -> bool,
) -> Vec<ProjectileSnap> {
    let mut shown: Vec<ProjectileSnap> = rockets.iter().filter(|r| sends(r)).copied().collect();
    if shown.len() > MAX_SNAPSHOT_PROJECTILES {
        let me = own.map(|p| p.id);
        let from = own.map_or(Vec3::ZERO, |p| p.state().pos);
        shown.sort_by(|a, b| {
            let key = |r: &ProjectileSnap| {
                (
                    Some(r.owner) != me,
                    Vec3::from_array(r.pos).distance_squared(from),
                )
            };
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        });
        shown.truncate(MAX_SNAPSHOT_PROJECTILES);
    }
    shown
}

/// Once a second each living player's client is sent its weapons as the server has them
/// after the last command it simulated ([`WeaponCheck`]), which snapshots carry only in
/// part; its prediction of them is compared and, where it drifted, corrected. Spread
/// over the second by player, so the checks do not all leave on one tick.
pub(crate) fn send_weapon_checks(
    tick: Res<Tick>,
    config: Res<TickConfig>,
    mut server: ResMut<RenetServer>,
    players: Query<(&Connection, &PlayerId, &InputBuffer, &Arsenal, &Vitals)>,
) {
    let hz = config.tick_hz.max(1);
    for (conn, id, buffer, arsenal, vitals) in &players {
        let due = (tick.0 + u32::from(id.0) * 7).is_multiple_of(hz);
        if !due || !vitals.alive() || conn.stage != ConnectionStage::Playing {
            continue;
        }
        if buffer.last_simulated() == 0 {
            continue;
        }
        let check = WeaponCheck {
            ack_input_seq: buffer.last_simulated(),
            tick: tick.0,
            current: arsenal.current,
            timers: [
                arsenal.switching,
                arsenal.cooldown,
                arsenal.reloading,
                arsenal.charge,
            ],
            alt_held: arsenal.alt_held,
            owned: arsenal.owned,
            ammo: arsenal.ammo.map(|a| (a.magazine, a.reserve)),
        };
        if let Ok(bytes) = ServerDatagram::WeaponCheck(check).encode() {
            server.send_message(conn.client_id, Channel::Unreliable, bytes);
        }
    }
}

/// `sent` as a datagram against `baseline`, within [`SLICE_BYTES`] where it can be: when
/// the players new to this client (not in its baseline) do not all fit, as when it joins
/// a full server, the farthest of them wait for the next snapshots, which bring them
/// once the client acknowledges this one. Its own player (`own`) never waits.
pub(crate) fn encode_within_budget(
    sent: &mut Snapshot,
    baseline: Option<&Snapshot>,
    own: Option<&PlayerSnap>,
) -> Result<Vec<u8>, EncodeError> {
    // A player sent in full takes at least this many bytes.
    const MIN_NEW_ENTRY: usize = 12;
    let (me, from) = (own.map(|p| p.id), own.map_or([0; 3], |p| p.pos));
    let distance = |p: &PlayerSnap| squared_distance(p.pos, from);
    loop {
        let packet = SnapshotPacket::encode(sent, baseline);
        sent.baseline = packet.baseline;
        let bytes = ServerDatagram::Snapshot(packet).encode()?;
        let Some(excess) = bytes.len().checked_sub(SLICE_BYTES).filter(|e| *e > 0) else {
            return Ok(bytes);
        };
        let held =
            |p: &PlayerSnap| baseline.is_some_and(|b| b.players.iter().any(|q| q.id == p.id));
        let mut new: Vec<(i64, PlayerId)> = sent
            .players
            .iter()
            .filter(|p| Some(p.id) != me && !held(p))
            .map(|p| (distance(p), p.id))
            .collect();
        if new.is_empty() {
            return Ok(bytes);
        }
        new.sort_unstable_by(|a, b| b.cmp(a));
        new.truncate(excess.div_ceil(MIN_NEW_ENTRY));
        sent.players
            .retain(|p| !new.iter().any(|(_, id)| *id == p.id));
    }
}

/// Snapshots: each tick that sends them, who each client is sent, then what.
pub(crate) struct SnapshotsPlugin;

impl Plugin for SnapshotsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            FixedUpdate,
            (
                crate::interest::refresh_interest,
                send_snapshots,
                send_weapon_checks,
            )
                .chain()
                .in_set(SimSet::BuildSnapshots),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_ride_until_acknowledged_and_expire_when_never_acknowledged() {
        let kill = |victim| PlayerEvent::Killed {
            victim: PlayerId(victim),
            killer: PlayerId(1),
            weapon: sightline_combat::WeaponKind::Rifle,
        };
        let mut queue = EventQueue::default();
        for i in 0..20 {
            assert_eq!(queue.push(100, 90 + u32::from(i), kill(i)), 0);
        }
        // The oldest that fit a snapshot, numbered from 1.
        let sent = queue.to_send();
        assert_eq!(sent.len(), MAX_SNAPSHOT_EVENTS);
        assert_eq!((sent[0].seq, sent[0].tick), (1, 90));
        // A snapshot that carried them is acknowledged: the rest go next.
        let mut counter = SnapshotCounter::default();
        let seq = counter.next(100);
        counter.keep(Snapshot {
            events: sent,
            ..Snapshot::default()
        });
        queue.acknowledge(counter.events_through(seq).expect("events carried"));
        assert_eq!(
            queue.to_send().iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![17, 18, 19, 20]
        );
        assert_eq!(counter.events_through(seq + 1), None, "never sent");
        // Never acknowledged: kept for the lifetime, then dropped and counted.
        assert_eq!(queue.expire(100 + 384, 384), 0);
        assert_eq!(queue.expire(100 + 385, 384), 4);
        assert!(queue.is_empty());
        // A silent client's queue stays bounded.
        let dropped: usize = (0..MAX_QUEUED_EVENTS + 5)
            .map(|_| queue.push(500, 500, kill(2)))
            .sum();
        assert_eq!((dropped, queue.len()), (5, MAX_QUEUED_EVENTS));
    }

    #[test]
    fn only_recent_snapshots_can_be_acknowledged() {
        let mut c = SnapshotCounter::default();
        assert_eq!(c.tick_of(0), None);
        let sent = ACKABLE_SNAPSHOTS as u32 + 36;
        for tick in 0..sent {
            assert_eq!(c.next(tick * 2), tick + 1);
        }
        assert_eq!(c.tick_of(sent), Some(2 * (sent - 1)));
        assert_eq!(c.tick_of(37), Some(2 * 36));
        assert_eq!(c.tick_of(36), None, "too old");
        assert_eq!(c.tick_of(sent + 1), None, "never sent");
    }

    #[test]
    fn past_the_cap_a_client_gets_its_own_rockets_then_the_nearest() {
        let me = PlayerSnap::new(PlayerId(1), &PlayerState::default());
        let rocket = |id: u16, owner: u8, x: f32| ProjectileSnap {
            id,
            kind: sightline_combat::ProjectileKind::Rocket,
            owner: PlayerId(owner),
            pos: [x, 0.0, 0.0],
            vel: [0.0; 3],
        };
        let mut rockets: Vec<ProjectileSnap> = (0..100u16)
            .map(|i| rocket(i, 2, 100.0 - f32::from(i)))
            .collect();
        rockets.push(rocket(500, 1, 90.0));
        let shown = rockets_shown_to(Some(&me), &rockets, |r| r.id != 99);
        assert_eq!(shown.len(), MAX_SNAPSHOT_PROJECTILES);
        assert_eq!(shown[0].id, 500, "our own, however far");
        assert_eq!(shown[1].id, 98, "then the nearest sent (99 is not)");
        let few = rockets_shown_to(Some(&me), &rockets[..5], |_| true);
        assert_eq!(few, rockets[..5], "under the cap, as they come");
    }

    #[test]
    fn numbers_wrap_past_the_maximum_and_skip_zero() {
        let mut c = SnapshotCounter {
            last: u32::MAX - 1,
            ..Default::default()
        };
        assert_eq!(c.next(1), u32::MAX);
        assert_eq!(c.next(2), 1);
        assert_eq!(c.tick_of(u32::MAX), Some(1));
    }
}
