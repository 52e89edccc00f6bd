//! Between watching and playing on one connection (`team spectator`, and back with
//! `team auto|red|blue`), as Quake 3 moves a client to and from its spectators without a
//! reconnect. The server makes the change and welcomes the connection again in its new
//! role; the client starts a new session on the same link.
//!
//! A player who goes to watch leaves the game as one who disconnects would, with no place
//! kept to come back to. A spectator who comes to play joins as a newcomer does, with the
//! checks of joining: a free place, a side the host allows, a name nobody else has. What
//! the connection keeps is its own: its conduct, its snapshots' numbering (started over,
//! numbered on), its rate, when it last changed, and the host's trust.
//!
//! Datagrams of the role left, sent before the client heard of the change, are dropped
//! and counted for a grace ([`Switched`]) rather than held against it.

use crate::ServerConfig;
use crate::changes::{Change, ChangeRequest, LastChanges, apply_changes, refuse};
use crate::connection::{Connection, PlayerKeyOf, PlayerSlots, Switched};
use crate::names::unique_name;
use crate::outbox::Outgoing;
use crate::rate::DownloadRate;
use crate::resume::{DepartedPlayers, Resumable};
use crate::sessions::{free_slot, player_components, send_welcome};
use crate::snapshots::{EventQueue, SnapshotCounter};
use crate::spawn::{choose_spawn, spawns_of};
use crate::spectators::Spectator;
use crate::stats::ServerStats;
use crate::stream::SnapshotStream;
use crate::teams::{head_count, side_for_joining};
use crate::votes::Admin;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use sightline_combat::{Flags, Score, Team};
use sightline_map::CurrentMap;
use sightline_movement::PlayerState;
use sightline_net::{ClientId, RenetServer};
use sightline_protocol::{ServerMessage, TeamChoice};
use sightline_sim::{BotControlled, PlayerId, PlayerName};

/// Marks a server that takes no players from its spectators: a demo's playback, whose
/// players are the demo's.
#[derive(Resource, Debug, Default)]
pub(crate) struct NoNewPlayers;

/// What a connection keeps from one role to the other; the rest of a player or a
/// spectator goes.
type Kept = (
    Connection,
    SnapshotCounter,
    SnapshotStream,
    DownloadRate,
    LastChanges,
    Admin,
    Switched,
);

/// The players as a change of role sees them.
type Present<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static PlayerId,
        &'static PlayerName,
        &'static PlayerState,
        Option<&'static Team>,
        Has<BotControlled>,
        Option<&'static PlayerKeyOf>,
    ),
>;

/// Changes made earlier this frame, which the queries see only next frame.
#[derive(Default)]
struct ThisFrame {
    /// Players gone to watch.
    left: Vec<Entity>,
    /// Spectators come to play: name, side and place.
    joined: Vec<(String, Option<Team>, Vec3)>,
}

/// What a change of role reads and changes.
#[derive(SystemParam)]
pub(crate) struct Roles<'w, 's> {
    commands: Commands<'w, 's>,
    players: Present<'w, 's>,
    spectators: Query<'w, 's, &'static Spectator>,
    last: Query<'w, 's, &'static mut LastChanges>,
    counters: Query<'w, 's, &'static mut SnapshotCounter>,
    connections: Query<'w, 's, &'static mut Connection>,
    slots: ResMut<'w, PlayerSlots>,
    departed: ResMut<'w, DepartedPlayers>,
    server: ResMut<'w, RenetServer>,
    config: Res<'w, ServerConfig>,
    map: Res<'w, CurrentMap>,
    flags: Res<'w, Flags>,
    closed: Option<Res<'w, NoNewPlayers>>,
}

/// Moves the players who asked to watch, and the spectators who asked to play, or tells
/// them why not.
pub(crate) fn switch_roles(
    mut requests: MessageReader<ChangeRequest>,
    mut roles: Roles,
    mut stats: ResMut<ServerStats>,
    mut outbox: MessageWriter<Outgoing>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed_secs_f64();
    let mut frame = ThisFrame::default();
    for request in requests.read() {
        let Change::Role(choice) = request.change else {
            continue;
        };
        let answer = match choice {
            TeamChoice::Spectator => roles.watch(request, &mut frame, &mut outbox, now),
            side => roles.play(request, side, &mut frame, &mut outbox, now),
        };
        if let Err(why) = answer {
            refuse(request, &why, &mut stats, &mut outbox);
        }
    }
}

impl Roles<'_, '_> {
    /// Seconds the connection waits before changing again (0: now).
    fn wait(&self, request: &ChangeRequest, now: f64) -> f64 {
        self.last
            .get(request.entity)
            .map_or(0.0, |last| last.wait(&request.change, now))
    }

    /// What every connection keeps across the change: when it was made, snapshots
    /// numbered on from a clean slate, and a fresh allowance of silence.
    fn start_over(&mut self, request: &ChangeRequest, now: f64) {
        let last = self.last.get_mut(request.entity).ok();
        let (entity, change) = (request.entity, &request.change);
        LastChanges::note(last, &mut self.commands, entity, change, now);
        if let Ok(mut counter) = self.counters.get_mut(request.entity) {
            counter.restart();
        }
        if let Ok(mut conn) = self.connections.get_mut(request.entity) {
            conn.conduct.last_command_at = now;
        }
    }

    /// Welcomes `client` again in its new role (`id`: a player, or none: a spectator),
    /// naming the players present after this frame's changes (those who came to play in
    /// it are named by the outbox, after).
    fn welcome_again(
        &mut self,
        client: ClientId,
        (id, secret): (Option<PlayerId>, Resumable),
        frame: &ThisFrame,
    ) {
        let present = self
            .players
            .iter()
            .filter(|p| !frame.left.contains(&p.0))
            .map(|p| (*p.1, p.2.0.as_str(), p.5));
        let how = (&*self.config, &*self.map);
        send_welcome(&mut self.server, client, how, (id, secret), present);
    }

    /// A player goes to watch.
    fn watch(
        &mut self,
        request: &ChangeRequest,
        frame: &mut ThisFrame,
        outbox: &mut MessageWriter<Outgoing>,
        now: f64,
    ) -> Result<(), String> {
        let Ok((_, &id, name, .., key)) = self.players.get(request.entity) else {
            return Ok(()); // gone since it asked
        };
        let (name, key) = (name.0.clone(), key.map(|k| k.0));
        let wait = self.wait(request, now);
        if wait > 0.0 {
            return Err(format!("wait {:.0} s", wait.ceil()));
        }
        let max = usize::from(self.config.max_spectators);
        let watching = self.spectators.iter().count() + frame.left.len();
        if watching >= max {
            return Err(match max {
                0 => "this server takes no spectators".into(),
                n => format!("no room for spectators ({n})"),
            });
        }
        frame.left.push(request.entity);
        self.start_over(request, now);
        self.commands
            .entity(request.entity)
            .retain::<Kept>()
            .insert((
                Spectator::new(name.clone()).keeping(key),
                EventQueue::default(),
                Switched::default(),
            ));
        // No place is kept: coming back to play is joining again.
        self.slots.release(id);
        self.welcome_again(request.client, (None, Resumable::random()), frame);
        let text = format!("{name} went to watch");
        info!("{text}");
        outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerLeft {
            id,
            reason: "went to watch".into(),
        }));
        outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
        Ok(())
    }

    /// A spectator comes to play on the side `choice` asks for.
    fn play(
        &mut self,
        request: &ChangeRequest,
        choice: TeamChoice,
        frame: &mut ThisFrame,
        outbox: &mut MessageWriter<Outgoing>,
        now: f64,
    ) -> Result<(), String> {
        let Ok(spectator) = self.spectators.get(request.entity) else {
            return Ok(()); // gone since it asked
        };
        let (wanted, key) = (spectator.name.clone(), spectator.key);
        if self.closed.is_some() {
            return Err("this is a demo: nobody joins it".into());
        }
        let wait = self.wait(request, now);
        if wait > 0.0 {
            return Err(format!("wait {:.0} s", wait.ceil()));
        }
        let staying = || self.players.iter().filter(|p| !frame.left.contains(&p.0));
        let sides = staying()
            .filter_map(|p| p.4.copied())
            .chain(frame.joined.iter().filter_map(|j| j.1));
        let team = side_for_joining(&self.config.rules, choice, head_count(sides))
            .map_err(|refusal| refusal.describe())?;
        let taken: Vec<&str> = staying()
            .map(|p| p.2.0.as_str())
            .chain(frame.joined.iter().map(|j| j.0.as_str()))
            .collect();
        let name = unique_name(&wanted, &taken);
        let occupied: Vec<Vec3> = staying()
            .map(|p| p.3.pos)
            .chain(frame.joined.iter().map(|j| j.2))
            .collect();
        let Some(id) = free_slot(&mut self.slots, &mut self.departed) else {
            let most = self.config.max_players.min(crate::MAX_PLAYERS);
            return Err(format!("the server is full ({most} players)"));
        };
        let spawns = spawns_of(&self.map.def.spawns, &self.flags, team);
        let spawn = choose_spawn(&spawns, &occupied);
        let (state, vitals, arsenal) = sightline_combat::respawned(spawn);
        frame.joined.push((name.clone(), team, state.pos));
        self.start_over(request, now);
        let secret = Resumable::random();
        let fresh = (state, vitals, arsenal, Score::default());
        let mut player = self.commands.entity(request.entity);
        player.retain::<Kept>().insert((
            player_components(id, name.clone(), fresh, self.config.tick, secret),
            Switched::default(),
        ));
        if let Some(team) = team {
            player.insert(team);
        }
        // Inserted anew, so the host's statistics count a new session of play.
        if let Some(key) = key {
            player.insert(PlayerKeyOf(key));
        }
        self.welcome_again(request.client, (Some(id), secret), frame);
        let text = match team {
            Some(team) => format!("{name} joined the {} team", team.name()),
            None => format!("{name} joined the game"),
        };
        info!("{text} as player {}", id.0);
        outbox.write(Outgoing::ToPlaying(ServerMessage::PlayerJoined {
            id,
            name,
            bot: false,
        }));
        outbox.write(Outgoing::ToPlaying(ServerMessage::notice(&text)));
        Ok(())
    }
}

/// Changes of role, after the frame's other changes.
pub(crate) struct RolesPlugin;

impl Plugin for RolesPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            PreUpdate,
            switch_roles
                .after(apply_changes)
                .in_set(crate::sets::ReceiveStep::Requests),
        );
    }
}
