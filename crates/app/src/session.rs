//! Sessions: connecting, playing offline, disconnecting, reconnecting; the app's states.

use crate::cvars::cvar;
use crate::offline::{DemoPlayback, EmbeddedServer, HostSettings};
use bevy::prelude::*;
use sightline_client::{ConnectionStatus, DesiredName, JoinAs, StatsKey};
use sightline_console::{Console, ConsoleCommands, Cvars, RunCommand};
use sightline_net::{ClientSecurity, connect_udp, disconnect_udp};
use sightline_server::{LocalOrder, LocalOrders, Seek};
use std::net::SocketAddr;

/// Where the app is.
#[derive(States, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AppState {
    /// The main menu.
    #[default]
    Menu,
    /// Connected or connecting to a server.
    Playing,
}

/// What to join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A server at this address, to play on.
    Remote(SocketAddr),
    /// A server at this address, to watch as a spectator.
    Spectate(SocketAddr),
    /// Whatever server a matchmaker service at this URL finds (quick play).
    QuickPlay(String),
    /// A game hosted here, on a real port, for others to join.
    Host(HostSettings),
    /// A demo file, played back by a server inside the game and watched as a spectator.
    Demo(std::path::PathBuf),
    /// A practice server on this map with this many bots.
    Offline {
        /// Map name.
        map: String,
        /// Bots.
        bots: u8,
        /// How well they fight.
        skill: sightline_bots::BotSkill,
    },
}

/// What to do at start-up, from the command line.
#[derive(Resource, Debug, Clone, Default)]
pub struct StartWith(pub Option<Target>);

impl StartWith {
    /// What the command line asks to join.
    pub fn from_args(args: &crate::args::Args) -> Self {
        if let Some(path) = &args.demo {
            return Self(Some(Target::Demo(path.clone())));
        }
        if let Some(url) = &args.quick_play {
            return Self(Some(Target::QuickPlay(url.clone())));
        }
        if let Some(target) = args.connect.as_deref() {
            let addr = crate::args::resolve(target);
            return Self(Some(match args.spectate {
                true => Target::Spectate(addr),
                false => Target::Remote(addr),
            }));
        }
        Self(args.map.clone().map(|map| Target::Offline {
            map,
            bots: args.bots,
            skill: args.bot_skill,
        }))
    }
}

/// The current (or last) session.
#[derive(Resource, Default)]
pub struct Session {
    /// What was last joined, for `reconnect`.
    pub last: Option<Target>,
    /// The server inside the game: practice offline, or a demo's playback.
    pub server: Option<EmbeddedServer>,
    /// Why the last session ended, for the menu.
    pub ended: Option<String>,
}

impl Session {
    /// The demo being watched, if one is.
    pub(crate) fn demo(&self) -> Option<&DemoPlayback> {
        self.server.as_ref().and_then(|s| s.playback.as_ref())
    }

    /// The practice server's orders, while practising offline.
    pub(crate) fn orders(&self) -> Option<&LocalOrders> {
        self.server.as_ref().and_then(|s| s.orders.as_ref())
    }
}

/// A session change asked for by the menu or the console.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub enum SessionRequest {
    /// Join a target.
    Join(Target),
    /// Leave the server.
    Leave,
    /// Join the last target again.
    Rejoin,
    /// Play the demo being watched from this tick on (`demo_gototick`, the timeline).
    Seek(u32),
}

/// Joins a server (`target`, to play or watch), giving `password` if it asks for one
/// (ignored by `--insecure`): the one way the menu's Connect and Spectate and the server
/// browser join.
pub(crate) fn join_server(
    target: Target,
    password: &str,
    security: &mut crate::args::RemoteSecurity,
    requests: &mut MessageWriter<SessionRequest>,
) {
    // The session's join reads the password from here, as it does --password's.
    if let ClientSecurity::Secure { password: p, .. } = &mut security.0 {
        password.clone_into(p);
    }
    requests.write(SessionRequest::Join(target));
}

/// Handles sessions and the console commands about them.
pub struct SessionPlugin;

impl Plugin for SessionPlugin {
    fn build(&self, app: &mut App) {
        let mut commands = app
            .world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default);
        commands.register("connect", "connect HOST:PORT: join a server");
        commands.register(
            "playdemo",
            "playdemo FILE: watch a demo (a server's recording), with the spectator's cameras",
        );
        commands.register(
            "spectate",
            "spectate HOST:PORT: watch a server's game, a few seconds behind",
        );
        commands.register(
            "quickplay",
            "quickplay [URL]: join whatever server the matchmaker (cl_matchmaker, or URL) finds",
        );
        commands.register("disconnect", "leave the server");
        commands.register("reconnect", "join the last server again");
        commands.register("map", "map NAME [BOTS]: play offline on a map against bots");
        commands.register(
            "record",
            "record NAME: practising offline, record the match into demos/NAME.sldemo",
        );
        commands.register("stop", "stop recording a demo");
        commands.register("quit", "quit the game");
        commands.register("status", "show the connection and the players");
        app.init_state::<AppState>()
            .init_resource::<Session>()
            .add_message::<SessionRequest>()
            .add_systems(Startup, start_from_command_line)
            .add_systems(
                Update,
                (
                    console_commands,
                    apply_requests,
                    join_found_server,
                    print_server_answers,
                    leave_when_disconnected,
                )
                    .chain()
                    .in_set(SessionSystems),
            );
    }
}

/// Where sessions start and end in `Update`: exclusive systems that despawn the session's
/// entities at once. Systems that queue changes to those entities run after them, or
/// their commands could land on an entity despawned in between.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SessionSystems;

fn start_from_command_line(start: Res<StartWith>, mut requests: MessageWriter<SessionRequest>) {
    if let Some(target) = start.0.clone() {
        requests.write(SessionRequest::Join(target));
    }
}

/// Turns console commands into session requests.
fn console_commands(
    mut run: MessageReader<RunCommand>,
    mut requests: MessageWriter<SessionRequest>,
    mut console: ResMut<Console>,
    mut exit: MessageWriter<AppExit>,
    status: Res<ConnectionStatus>,
    roster: Res<sightline_client::Roster>,
    session: Res<Session>,
    cvars: Res<Cvars>,
) {
    for cmd in run.read() {
        match (cmd.name.as_str(), cmd.args.as_slice()) {
            ("record", [name]) => {
                order_practice(&session, &mut console, LocalOrder::Record(name.clone()))
            }
            ("record", _) => console.print("usage: record NAME"),
            ("stop", _) => order_practice(&session, &mut console, LocalOrder::StopRecording),
            ("connect", [target]) => match crate::args::lookup(target) {
                Some(addr) => {
                    requests.write(SessionRequest::Join(Target::Remote(addr)));
                }
                None => console.print(format!(
                    "error: cannot resolve \"{target}\"; expected HOST:PORT"
                )),
            },
            ("connect", _) => console.print("usage: connect HOST:PORT"),
            ("quickplay", args) => {
                let url = match args {
                    [url] => url.clone(),
                    [] => cvars.read(cvar::CL_MATCHMAKER),
                    _ => {
                        console.print("usage: quickplay [URL]");
                        continue;
                    }
                };
                if url.is_empty() {
                    console.print("quickplay: set cl_matchmaker to your matchmaker's URL first");
                } else {
                    requests.write(SessionRequest::Join(Target::QuickPlay(url)));
                }
            }
            ("spectate", [target]) => match crate::args::lookup(target) {
                Some(addr) => {
                    requests.write(SessionRequest::Join(Target::Spectate(addr)));
                }
                None => console.print(format!(
                    "error: cannot resolve \"{target}\"; expected HOST:PORT"
                )),
            },
            ("spectate", _) => console.print("usage: spectate HOST:PORT"),
            ("playdemo", [path]) => {
                let path = std::path::PathBuf::from(path);
                requests.write(SessionRequest::Join(Target::Demo(path)));
            }
            ("playdemo", _) => console.print("usage: playdemo FILE"),
            ("disconnect", _) => {
                requests.write(SessionRequest::Leave);
            }
            ("reconnect", _) => {
                requests.write(SessionRequest::Rejoin);
            }
            ("map", [map, rest @ ..]) => {
                let bots = match rest.first().map(|b| b.parse::<u8>()) {
                    None => 4,
                    Some(Ok(b)) if b <= 15 => b,
                    Some(_) => {
                        console.print("error: bots must be a number from 0 to 15");
                        continue;
                    }
                };
                requests.write(SessionRequest::Join(Target::Offline {
                    map: map.clone(),
                    bots,
                    skill: sightline_bots::BotSkill::Normal,
                }));
            }
            ("map", _) => console.print("usage: map NAME [BOTS]"),
            ("quit", _) => {
                exit.write(AppExit::Success);
            }
            ("status", _) => {
                console.print(format!("connection: {}", describe(&status)));
                for (id, p) in &roster.0 {
                    let ping = p.ping_ms.map_or("-".to_string(), |p| format!("{p} ms"));
                    let bot = if p.bot { " (bot)" } else { "" };
                    console.print(format!("  #{:<2} {:<24} {ping}{bot}", id.0, p.name));
                }
            }
            _ => {}
        }
    }
}

/// Gives the practice server an order, or says why there is none to give it to: a
/// demo of another server's game is recorded by that server.
fn order_practice(session: &Session, console: &mut Console, order: LocalOrder) {
    match session.orders() {
        Some(orders) if orders.send(order) => {}
        Some(_) => console.print("error: the practice server has stopped"),
        None => console.print(
            "record: only practice offline (map NAME) is recorded here; a server records \
             its own games (its host's record NAME, or rcon record NAME)",
        ),
    }
}

/// Prints what the practice server answered to `record` and `stop`, and what the
/// router and the relay said of a hosted game's port.
fn print_server_answers(session: Res<Session>, mut console: ResMut<Console>) {
    if let Some(server) = &session.server {
        for line in server.router.iter().flat_map(|r| r.news()) {
            console.print(line);
        }
        for line in server.relay_news() {
            console.print(line);
        }
    }
    let Some(orders) = session.orders() else {
        return;
    };
    for answer in orders.answers() {
        match answer {
            Ok(line) => console.print(line),
            Err(e) => console.print(format!("error: {e}")),
        }
    }
}

/// A connection status in words.
pub fn describe(status: &ConnectionStatus) -> String {
    match status {
        ConnectionStatus::Connecting => "connecting".into(),
        ConnectionStatus::AwaitingWelcome => "waiting for the server's welcome".into(),
        ConnectionStatus::Connected(info) => format!(
            "connected to \"{}\" on {}",
            info.welcome.server_name, info.welcome.map_name
        ),
        ConnectionStatus::Reconnecting(reason) => {
            format!("connection lost ({reason}); reconnecting")
        }
        ConnectionStatus::Disconnected(reason) => format!("disconnected: {reason}"),
    }
}

/// Carries out session requests: these touch the world directly (transports, resets).
fn apply_requests(world: &mut World) {
    let requests: Vec<SessionRequest> = world
        .resource_mut::<Messages<SessionRequest>>()
        .drain()
        .collect();
    for request in requests {
        let target = match request {
            SessionRequest::Leave => {
                leave(world, None);
                continue;
            }
            SessionRequest::Rejoin => match world.resource::<Session>().last.clone() {
                Some(t) => t,
                None => {
                    world
                        .resource_mut::<Console>()
                        .print("reconnect: nothing to reconnect to");
                    continue;
                }
            },
            SessionRequest::Join(t) => t,
            SessionRequest::Seek(tick) => {
                seek_demo(world, tick);
                continue;
            }
        };
        join(world, target, None);
    }
}

/// The player's key for servers' statistics (`cl_guid`): made and saved the first time
/// it is needed, and made afresh if someone edited it into something else.
fn player_key(world: &mut World) -> sightline_protocol::PlayerKey {
    let text = world.resource::<Cvars>().read(cvar::CL_GUID);
    if let Some(key) = crate::args::parse_key(&text) {
        return key;
    }
    let key = sightline_net::random_secret();
    let text: String = key.iter().map(|b| format!("{b:02x}")).collect();
    if let Err(e) = world
        .resource_mut::<Cvars>()
        .set_handle(cvar::CL_GUID, &text)
    {
        warn!("cl_guid: {e}");
    }
    if let Some(mut config) = world.get_resource_mut::<sightline_console::ConfigFile>() {
        config.dirty = true;
    }
    key
}

/// Joins `target`: a demo starting at `seek` when one is given, played on with the hold
/// and timeline it had.
fn join(world: &mut World, target: Target, seek: Option<(DemoPlayback, Seek)>) {
    leave(world, None);
    let name = world.resource::<Cvars>().read(cvar::NAME);
    world.insert_resource(DesiredName(if name.is_empty() {
        "player".into()
    } else {
        name
    }));
    let key = player_key(world);
    world.insert_resource(StatsKey(Some(key)));
    world.insert_resource(match target {
        Target::Spectate(_) | Target::Demo(_) => JoinAs::Spectator,
        Target::Remote(_) | Target::Offline { .. } | Target::QuickPlay(_) | Target::Host(_) => {
            JoinAs::Player
        }
    });
    let (addr, security) = match &target {
        Target::QuickPlay(url) => {
            // The connection is made when the matchmaker answers (join_found_server).
            if let Err(reason) = crate::quick_play::start(world, url) {
                quick_play_failed(world, reason);
                return;
            }
            world
                .resource_mut::<Console>()
                .print(format!("quick play: asking {url} for a server"));
            let mut session = world.resource_mut::<Session>();
            session.last = Some(target);
            session.ended = None;
            return;
        }
        Target::Remote(addr) | Target::Spectate(addr) => (
            *addr,
            world
                .get_resource::<crate::args::RemoteSecurity>()
                .map(|s| s.0.clone())
                .unwrap_or_default(),
        ),
        Target::Demo(_) | Target::Offline { .. } | Target::Host(_) => {
            match start_embedded(&target, seek) {
                Ok(server) => {
                    let addr = server.addr;
                    world.resource_mut::<Session>().server = Some(server);
                    // The host joins its own game as anyone would, password and all.
                    let password = match &target {
                        Target::Host(host) => host.password.clone(),
                        _ => String::new(),
                    };
                    let security = ClientSecurity::Secure {
                        password,
                        known_servers: None,
                    };
                    (addr, security)
                }
                Err(reason) => {
                    world
                        .resource_mut::<Console>()
                        .print(format!("error: {reason}"));
                    world.resource_mut::<Session>().ended = Some(reason);
                    return;
                }
            }
        }
    };
    if let Err(e) = connect_udp(world, addr, &security) {
        let reason = format!("cannot connect to {addr}: {e}");
        world
            .resource_mut::<Console>()
            .print(format!("error: {reason}"));
        world.resource_mut::<Session>().ended = Some(reason);
        return;
    }
    world
        .resource_mut::<Console>()
        .print(format!("connecting to {addr}"));
    let mut session = world.resource_mut::<Session>();
    session.last = Some(target);
    session.ended = None;
    world
        .resource_mut::<NextState<AppState>>()
        .set(AppState::Playing);
}

/// Plays the demo being watched again from `tick`: a new playback started from the
/// keyframe before it and simulated on to it, watched as afresh, with the view, the
/// player followed, the speed and the pause carried over.
fn seek_demo(world: &mut World, tick: u32) {
    let session = world.resource::<Session>();
    let (Some(demo), Some(target)) = (session.demo().cloned(), session.last.clone()) else {
        world
            .resource_mut::<Console>()
            .print("demo_gototick: no demo is playing");
        return;
    };
    let seek = demo.index.seek(tick);
    let carried = crate::spectator::Carried::from_world(world);
    join(world, target, Some((demo, seek)));
    // Only for a demo that did start again: otherwise nothing would take it.
    if world.resource::<Session>().server.is_some() {
        world.insert_resource(carried);
    }
}

/// Starts the server inside the game that `target` is played on: a demo's playback or a
/// practice server.
fn start_embedded(
    target: &Target,
    seek: Option<(DemoPlayback, Seek)>,
) -> Result<EmbeddedServer, String> {
    match target {
        Target::Demo(path) => {
            let (demo, seek) = match seek {
                Some((demo, seek)) => (demo, Some(seek)),
                None => (DemoPlayback::open(path)?, None),
            };
            EmbeddedServer::play_demo(&demo, seek).map_err(|e| format!("cannot play the demo: {e}"))
        }
        Target::Offline { map, bots, skill } => EmbeddedServer::start(map, *bots, *skill)
            .map_err(|e| format!("cannot start practice on {map}: {e}")),
        Target::Host(host) => EmbeddedServer::host(host)
            .map_err(|e| format!("cannot host {} on port {}: {e}", host.map, host.port)),
        Target::Remote(addr) | Target::Spectate(addr) => Err(format!(
            "{addr} is a server elsewhere, not one to start here"
        )),
        Target::QuickPlay(url) => Err(format!(
            "{url} finds a server elsewhere, not one to start here"
        )),
    }
}

/// Joins the server a matchmaker found, once it answers, or says why there is none.
fn join_found_server(world: &mut World) {
    let Some(answer) = crate::quick_play::answer(world) else {
        return;
    };
    let joined = answer.and_then(|ticket| {
        let token = ticket.connect_token()?;
        sightline_net::connect_udp_with_token(world, ticket.address, token)
            .map_err(|e| format!("cannot connect to {}: {e}", ticket.address))?;
        Ok(ticket)
    });
    match joined {
        Ok(ticket) => {
            world.resource_mut::<Console>().print(format!(
                "quick play: connecting to {} ({})",
                ticket.address, ticket.game_server
            ));
            world
                .resource_mut::<NextState<AppState>>()
                .set(AppState::Playing);
        }
        Err(reason) => quick_play_failed(world, reason),
    }
}

fn quick_play_failed(world: &mut World, reason: String) {
    world
        .resource_mut::<Console>()
        .print(format!("quick play: {reason}"));
    world.resource_mut::<Session>().ended = Some(format!("Quick play: {reason}"));
}

fn leave(world: &mut World, reason: Option<String>) {
    crate::quick_play::stop(world);
    disconnect_udp(world);
    // Every plugin forgets its part of the session (see sightline_sim::EndSession).
    sightline_sim::end_session(world);
    let mut session = world.resource_mut::<Session>();
    session.server = None;
    if reason.is_some() {
        session.ended = reason;
    }
    world
        .resource_mut::<NextState<AppState>>()
        .set(AppState::Menu);
}

/// Back to the menu, with the reason, when the server goes away.
fn leave_when_disconnected(world: &mut World) {
    let reason = match world.resource::<ConnectionStatus>() {
        ConnectionStatus::Disconnected(reason) => reason.clone(),
        _ => return,
    };
    world
        .resource_mut::<Console>()
        .print(format!("disconnected: {reason}"));
    leave(world, Some(reason));
}
