//! Replaying a demo through the server's own simulation: a server app whose command
//! sources give way to the demo's commands ([`crate::CommandSourcesExt`]), started from
//! the demo's first keyframe, each tick checked against the checksums and keyframes the
//! game wrote.

use crate::catch_up::CatchUp;
use crate::config::MatchRules;
use crate::demo::format::{
    CommandChain, DemoError, DemoErrorKind, DemoHeader, DemoLimits, DemoOrder, DemoReader, Record,
    Step,
};
use crate::demo::state::{
    Keyframe, Sums, keyframe, keyframe_difference, put_player, remove_player, restore,
};
use crate::rules::{MatchOrder, MatchOrders};
use crate::{CommandSource, CommandSourcesExt, ServerConfig, server_app};
use bevy::prelude::*;
use sightline_combat::{CombatEvent, Score, ViewWindow, WeaponKind};
use sightline_map::{CurrentMap, MapSource, find_map_by_name, is_map_identifier};
use sightline_net::{MemoryNetwork, ServerNetPlugin};
use sightline_protocol::{MAX_SERVER_NAME_LEN, clean_text};
use sightline_runtime::Pacing;
use sightline_sim::{CurrentCmd, Held, InputCmd, PlayerId, PlayerName, SimSet, Tick, TickConfig};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// How a verification ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every checksum and keyframe matched, to the demo's end.
    Matched,
    /// The replay went another way: the first check that failed.
    Differs {
        /// The tick whose state (before its moves) differs.
        tick: u32,
        /// Which player and field, or which part of the world.
        what: String,
    },
    /// The file could not be read on from here (what came before was checked).
    Unreadable(DemoError),
}

/// A kill the replay saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kill {
    /// The tick it happened in.
    pub tick: u32,
    /// Who killed (the victim, for a suicide).
    pub killer: PlayerId,
    /// Who died.
    pub victim: PlayerId,
    /// With what.
    pub weapon: WeaponKind,
}

/// A player as the replay left them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// Their id.
    pub id: PlayerId,
    /// Their name.
    pub name: String,
    /// Frags and deaths.
    pub score: Score,
}

/// What a verification found.
#[derive(Debug)]
pub struct Verdict {
    /// Ticks replayed.
    pub ticks: u32,
    /// Checksums compared.
    pub checksums: u32,
    /// Keyframes compared (the first, which the replay starts from, not counted).
    pub keyframes: u32,
    /// Why the recording ended, as it says.
    pub ended: Option<String>,
    /// Every kill replayed, in order: the demo's timeline.
    pub kills: Vec<Kill>,
    /// The players at the end, best first (most frags, then fewest deaths, then id).
    pub standings: Vec<Standing>,
    /// The result.
    pub outcome: Outcome,
}

/// Where a replay stands, between ticks.
#[derive(Resource)]
pub(crate) struct Playback {
    reader: DemoReader<Box<dyn Read + Send + Sync>>,
    commands: CommandChain,
    /// Whether the world has been started from a keyframe.
    pub(crate) started: bool,
    /// A keyframe to start from instead of the first: the records before it are read
    /// (commands decoded, limits kept) but not simulated.
    pub(crate) start_at: Option<u32>,
    ticks: u32,
    checksums: u32,
    keyframes: u32,
    ended: Option<String>,
    /// How the replay ended, once it has.
    pub(crate) outcome: Option<Outcome>,
    tick_hz: u32,
    kills: Vec<Kill>,
    standings: Vec<Standing>,
}

/// A demo file opened, ready to play.
pub type DemoFile = DemoReader<Box<dyn Read + Send + Sync>>;

/// Opens the demo at `path` and reads its header, without its map (to read the file
/// through, as [`crate::DemoIndex::scan`] does); the error does not name the file.
pub fn read_demo(path: &Path) -> Result<DemoFile, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let file = Box::new(std::io::BufReader::new(file)) as Box<dyn Read + Send + Sync>;
    DemoReader::open(file).map_err(|e| e.to_string())
}

/// Opens the demo at `path` and loads its map from `maps/`, checking it is the map the
/// demo was recorded on; the error does not name the file, which the caller knows. A
/// demo may be anyone's: its map is looked up by name in the maps folder, as a map a
/// server names is, never as a path.
pub fn open_demo(path: &Path) -> Result<(DemoFile, CurrentMap), String> {
    let reader = read_demo(path)?;
    let map = find_map_by_name(&reader.header().map_name)
        .and_then(|found| MapSource::load(&found))
        .map(CurrentMap::new)
        .map_err(|e| format!("the demo's map: {e}"))?;
    check_map(reader.header(), &map)?;
    Ok((reader, map))
}

/// A server app that plays the demo `reader` opened on `map` (which must be the demo's:
/// [`check_map`]) through `net` at `pacing`, with `configure`'s changes to its settings.
pub(crate) fn replay_app(
    reader: DemoFile,
    map: CurrentMap,
    net: ServerNetPlugin,
    pacing: Pacing,
    configure: impl FnOnce(&mut ServerConfig),
) -> App {
    let h = reader.header().clone();
    let tick = TickConfig::new(h.tick_hz, h.snapshot_hz).unwrap_or_default();
    let mut config = ServerConfig {
        // Cleaned as the host's own sv_hostname is: it reaches the spectators' Welcome.
        name: clean_text(&h.server_name, MAX_SERVER_NAME_LEN),
        max_players: u8::MAX,
        bots: 0,
        rules: MatchRules {
            mode: h.mode,
            // check_map refuses a rotation naming anything but maps; a demo that did not
            // pass it plays without one rather than have paths looked up.
            rotation: if h.rotation.iter().all(|m| is_map_identifier(m)) {
                h.rotation.clone()
            } else {
                Vec::new()
            },
            // Team moves are in the demo as the players' changed states: none are made here.
            auto_balance: false,
            ..MatchRules::default()
        },
        tick,
        idle_kick_seconds: 0.0,
        max_spectators: 0,
        ..ServerConfig::default()
    };
    h.limits().apply_to(&mut config.rules);
    configure(&mut config);
    let mut app = server_app(config, map, net, pacing);
    app.configure_sets(FixedUpdate, CommandSource::Bots.run_if(|| false))
        .replace_command_source(CommandSource::Network, play_tick)
        .init_resource::<crate::roles::NoNewPlayers>()
        .insert_resource(Playback {
            reader,
            commands: CommandChain::default(),
            started: false,
            start_at: None,
            ticks: 0,
            checksums: 0,
            keyframes: 0,
            ended: None,
            outcome: None,
            tick_hz: tick.tick_hz,
            kills: Vec::new(),
            standings: Vec::new(),
        })
        .add_systems(
            FixedUpdate,
            note_kills
                .after(SimSet::Combat)
                .before(SimSet::Settle)
                .run_if(resource_exists::<Playback>),
        );
    app
}

/// Refuses a demo recorded on another map than `map`, or naming its map or a map of its
/// rotation by anything but a map name: the replay looks the rotation's maps up, and a
/// name from a file is no more a path than one from the network.
pub fn check_map(header: &DemoHeader, map: &CurrentMap) -> Result<(), String> {
    let names = std::iter::once(&header.map_name).chain(&header.rotation);
    if let Some(bad) = names.into_iter().find(|name| !is_map_identifier(name)) {
        return Err(format!(
            "the demo names a map {bad:?}, which is not a map name (a demo names maps, \
             never files)"
        ));
    }
    if header.map_hash != map.hash {
        return Err(format!(
            "the demo was recorded on {} (content hash {:016x}); the map here is {} ({:016x})",
            header.map_name, header.map_hash, map.def.name, map.hash
        ));
    }
    Ok(())
}

/// Replays the demo `src` (whose header `open` read) on `map` to its end or its first
/// difference.
pub fn verify_demo(
    reader: DemoReader<Box<dyn Read + Send + Sync>>,
    map: CurrentMap,
) -> Result<Verdict, String> {
    check_map(reader.header(), &map)?;
    let tick = reader.header().tick_hz.max(1);
    let dt = Duration::from_nanos(1_000_000_000 / u64::from(tick));
    let net = ServerNetPlugin::memory(MemoryNetwork::on_shared_clock());
    // Nobody watches a verification.
    let mut app = replay_app(reader, map, net, Pacing::Manual(dt), |_| {});
    // A tick is an update; a stuck replay (none running) is bounded all the same.
    let mut idle = 0;
    loop {
        let before = app.world().resource::<Playback>().ticks;
        app.update();
        let playback = app.world().resource::<Playback>();
        if playback.outcome.is_some() {
            break;
        }
        idle = if playback.ticks == before {
            idle + 1
        } else {
            0
        };
        if idle > 16 {
            return Err("the replay stopped running ticks".into());
        }
    }
    let mut playback = app
        .world_mut()
        .remove_resource::<Playback>()
        .ok_or("the replay lost its demo")?;
    Ok(Verdict {
        ticks: playback.ticks,
        checksums: playback.checksums,
        keyframes: playback.keyframes,
        ended: playback.ended.take(),
        outcome: playback.outcome.take().unwrap_or(Outcome::Matched),
        kills: std::mem::take(&mut playback.kills),
        standings: std::mem::take(&mut playback.standings),
    })
}

/// Every player's score, best first.
fn standings(world: &mut World) -> Vec<Standing> {
    let mut standings: Vec<Standing> = world
        .query::<(&PlayerId, &PlayerName, &Score)>()
        .iter(world)
        .map(|(id, name, score)| Standing {
            id: *id,
            name: name.0.clone(),
            score: *score,
        })
        .collect();
    standings.sort_by_key(|s| (std::cmp::Reverse(s.score.frags), s.score.deaths, s.id));
    standings
}

/// Keeps the tick's kills for the demo's timeline.
fn note_kills(
    tick: Res<Tick>,
    mut events: MessageReader<CombatEvent>,
    mut playback: ResMut<Playback>,
) {
    // Past the demo's last tick the app runs one more, on no commands of the demo's.
    let done = playback.outcome.is_some();
    for event in events.read() {
        if done {
            continue;
        }
        if let CombatEvent::Killed {
            victim,
            killer,
            weapon,
        } = *event
        {
            playback.kills.push(Kill {
                tick: tick.0,
                killer,
                victim,
                weapon,
            });
        }
    }
}

/// The demo's source of commands: reads this tick's records, applies what changed
/// between ticks, checks what the game checked, and gives every player its command.
fn play_tick(world: &mut World) {
    let Some(mut playback) = world.remove_resource::<Playback>() else {
        return;
    };
    if playback.outcome.is_none() {
        playback.outcome = play(world, &mut playback).err();
        if playback.outcome.is_some() {
            // The state the demo's last tick left, before the app runs on.
            playback.standings = standings(world);
        }
    }
    world.insert_resource(playback);
}

/// One tick of the demo; `Err` with how the replay ends.
fn play(world: &mut World, p: &mut Playback) -> Result<(), Outcome> {
    if let Some(keyframe) = p.start_at.take() {
        skip_to(world, p, keyframe)?;
    }
    loop {
        let (offset, record) = next_record(p)?;
        let tick = world.resource::<Tick>().0;
        match record {
            Record::Keyframe(k) if !p.started => {
                start_from(world, &k).map_err(|e| corrupt(offset, e))?;
                p.started = true;
            }
            _ if !p.started => {
                return Err(Outcome::Unreadable(DemoError {
                    offset,
                    kind: DemoErrorKind::OutOfPlace("the demo does not start with a keyframe"),
                }));
            }
            Record::Keyframe(k) => {
                k.check().map_err(|e| corrupt(offset, e))?;
                p.keyframes += 1;
                if let Some(what) = keyframe_difference(&k, &keyframe(world)) {
                    return Err(Outcome::Differs { tick, what });
                }
            }
            Record::Player(player) => put_player(world, &player),
            Record::Left(id) => {
                p.commands.forget(id);
                remove_player(world, id);
            }
            Record::Order(order) => give_order(world, order),
            Record::Limits(limits) => set_limits(world, limits),
            Record::Checksum(sums) => {
                p.checksums += 1;
                if let Some(what) = sums.difference(&Sums::of(&keyframe(world))) {
                    return Err(Outcome::Differs { tick, what });
                }
            }
            Record::Tick(steps) => {
                let steps = p
                    .commands
                    .read(&steps)
                    .map_err(|e| corrupt(offset, e.into()))?;
                give_commands(world, &steps, p.tick_hz).map_err(|e| corrupt(offset, e))?;
                p.ticks += 1;
                return Ok(());
            }
            Record::End(reason) => {
                p.ended = Some(reason);
                return Err(Outcome::Matched);
            }
        }
    }
}

/// Reads on to the keyframe of tick `tick` and starts the world from it: what comes
/// before is read but not simulated. Commands are decoded (each is written against the
/// one before), departures forgotten and limits kept, as the keyframe holds neither;
/// an order given in the keyframe's own tick is carried out in it, as recorded.
fn skip_to(world: &mut World, p: &mut Playback, tick: u32) -> Result<(), Outcome> {
    let mut order = None;
    loop {
        let (offset, record) = next_record(p)?;
        match record {
            Record::Keyframe(k) if k.tick >= tick => {
                start_from(world, &k).map_err(|e| corrupt(offset, e))?;
                p.started = true;
                if let Some(order) = order {
                    give_order(world, order);
                }
                return Ok(());
            }
            Record::Left(id) => p.commands.forget(id),
            Record::Order(o) => order = Some(o),
            Record::Limits(limits) => set_limits(world, limits),
            Record::Tick(steps) => {
                p.commands
                    .read(&steps)
                    .map_err(|e| corrupt(offset, e.into()))?;
                order = None;
            }
            Record::End(reason) => {
                p.ended = Some(reason);
                return Err(Outcome::Matched);
            }
            Record::Keyframe(_) | Record::Player(_) | Record::Checksum(_) => {}
        }
    }
}

/// Carries out the host's order in this tick.
fn give_order(world: &mut World, order: DemoOrder) {
    world.resource_mut::<MatchOrders>().0 = Some(match order {
        DemoOrder::Restart => MatchOrder::Restart,
        DemoOrder::NextMap => MatchOrder::NextMap,
        DemoOrder::End => MatchOrder::End,
        DemoOrder::Countdown => MatchOrder::Countdown,
    });
}

/// The host's new settings.
fn set_limits(world: &mut World, limits: DemoLimits) {
    limits.apply_to(&mut world.resource_mut::<ServerConfig>().rules);
}

/// The demo's next record and its byte; `Err` with how the replay ends where the file
/// does, or cannot be read on.
fn next_record(p: &mut Playback) -> Result<(u64, Record), Outcome> {
    match p.reader.next_record() {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(Outcome::Matched),
        Err(e) => Err(Outcome::Unreadable(e)),
    }
}

fn corrupt(offset: u64, why: String) -> Outcome {
    Outcome::Unreadable(DemoError {
        offset,
        kind: DemoErrorKind::Corrupt(why),
    })
}

/// Starts the replay's world from the demo's first keyframe.
fn start_from(world: &mut World, k: &Keyframe) -> Result<(), String> {
    k.check()?;
    restore(world, k);
    Ok(())
}

/// Sets every player's command (and second command), held flag and view window for this
/// tick as the demo says; refuses a command the game never runs, or a player who is not
/// there.
fn give_commands(
    world: &mut World,
    steps: &[(PlayerId, Step)],
    tick_hz: u32,
) -> Result<(), String> {
    let tick = world.resource::<Tick>().0;
    let window_for = |cmd: &InputCmd, honest: bool| {
        if honest {
            ViewWindow::exactly(cmd.view_time(), tick, tick_hz)
        } else {
            ViewWindow::CLOSED
        }
    };
    let runs = |id: &PlayerId, cmd: &InputCmd| {
        if cmd.sanitized().ok() == Some(*cmd) {
            Ok(())
        } else {
            Err(format!("player {}: a command the game never runs", id.0))
        }
    };
    let mut query = world.query::<(
        &PlayerId,
        &mut CurrentCmd,
        &mut Held,
        &mut CatchUp,
        Option<&mut ViewWindow>,
    )>();
    let mut found = 0;
    for (id, mut current, mut held, mut second, window) in query.iter_mut(world) {
        let Some((_, step)) = steps.iter().find(|(p, _)| p == id) else {
            return Err(format!("no command for player {}", id.0));
        };
        found += 1;
        second.0 = None;
        let (cmd, honest_view) = match *step {
            Step::Held => {
                held.0 = true;
                continue;
            }
            Step::Ran { cmd, honest_view } => (cmd, honest_view),
            Step::Twice {
                cmd,
                honest_view,
                then,
                then_honest,
            } => {
                runs(id, &then)?;
                second.0 = Some((then, window_for(&then, then_honest)));
                (cmd, honest_view)
            }
        };
        runs(id, &cmd)?;
        held.0 = false;
        current.0 = cmd;
        if let Some(mut window) = window {
            *window = window_for(&cmd, honest_view);
        }
    }
    if found != steps.len() {
        return Err("a command for a player who is not there".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::format::DemoEncoder;
    use sightline_combat::GameMode;
    use sightline_map::maps_dir;
    use sightline_map::test_support::HOSTILE_MAP_NAMES;
    use std::path::PathBuf;

    /// A demo file holding only a header: `map_name` and `rotation` as given, the content
    /// hash of the duel map.
    fn demo_file(name: &str, map_name: &str, rotation: &[&str]) -> PathBuf {
        let duel = MapSource::load(&maps_dir().join("duel.ron")).unwrap();
        let header = DemoHeader {
            map_name: map_name.into(),
            map_hash: duel.hash,
            tick_hz: 64,
            snapshot_hz: 32,
            server_name: "demo".into(),
            mode: GameMode::default(),
            fraglimit: 10,
            capturelimit: 8,
            timelimit: 600.0,
            rotation: rotation.iter().map(|m| m.to_string()).collect(),
            friendly_fire: sightline_combat::FriendlyFire::Off,
            overtime: true,
            warmup: 0.0,
            start_tick: 0,
            recorded_at: 0,
        };
        let path = std::env::temp_dir().join(format!(
            "sightline-replay-{}-{name}.sldemo",
            std::process::id()
        ));
        let mut encoder = DemoEncoder::start(&header).unwrap();
        encoder.record(&Record::End("test".into())).unwrap();
        std::fs::write(&path, encoder.take()).unwrap();
        path
    }

    fn open_err(path: &Path) -> String {
        let result = open_demo(path).map(|_| ());
        let _ = std::fs::remove_file(path);
        result.expect_err("the demo opened")
    }

    #[test]
    fn a_demo_names_its_maps_by_name_never_by_path() {
        let honest = demo_file("honest", "duel", &["duel", "depot"]);
        let opened = open_demo(&honest).map(|(_, map)| map.def.name.clone());
        let _ = std::fs::remove_file(&honest);
        assert_eq!(opened, Ok("duel".into()));
        // The duel map by its path, which loads and matches the demo's hash: looked up
        // as a path, it would open.
        let by_path = maps_dir().join("duel.ron");
        let by_path = by_path.to_str().unwrap();
        for (i, bad) in HOSTILE_MAP_NAMES.iter().chain([&by_path]).enumerate() {
            let err = open_err(&demo_file(&format!("map{i}"), bad, &[]));
            assert!(err.contains("is not a map name"), "{bad:?}: {err}");
            let err = open_err(&demo_file(&format!("rotation{i}"), "duel", &["duel", bad]));
            assert!(err.contains("is not a map name"), "{bad:?}: {err}");
        }
    }
}
