//! Demos: a fight recorded on the server (bots, and people on a lossy link who join,
//! are held and fire) replays through the same simulation to the same bits; a replay
//! that goes another way is caught at its tick with the player and field; a demo cut
//! off is checked up to the cut; and the demo the repository keeps, recorded by the
//! dedicated server, verifies under the server binary.

use crate::support::{binaries, repo_root};
use sightline_client::{ChatLog, ClientStats, KillFeed, MAX_KILL_FEED, Roster, Watching};
use sightline_harness::{Stepper, load_map};
use sightline_net::{ConditionerSettings, MemoryNetwork, ServerNetPlugin};
use sightline_runtime::Pacing;
use sightline_server::demo::{CommandChain, DemoEncoder, DemoReader, DemoRecorder, Record, Step};
use sightline_server::{
    DemoIndex, MatchOrder, MatchOrders, Outcome, PlaybackControl, Seek, ServerConfig, Verdict,
    open_demo, playback_app, verify_demo,
};
use sightline_sim::{InputCmd, PlayerId, Tick, TickConfig};
use std::io::Read;
use std::path::{Path, PathBuf};

fn config() -> ServerConfig {
    ServerConfig {
        name: "demo test".into(),
        max_players: 16,
        bots: 4,
        tick: TickConfig::new(128, 64).unwrap(),
        ..Default::default()
    }
}

fn lossy() -> ConditionerSettings {
    ConditionerSettings {
        latency_ms: 60.0,
        jitter_ms: 10.0,
        loss_pct: 3.0,
        outage_ms: 80.0,
        ..Default::default()
    }
}

fn verify_bytes(bytes: Vec<u8>) -> Verdict {
    let src: Box<dyn Read + Send + Sync> = Box::new(std::io::Cursor::new(bytes));
    let reader = DemoReader::open(src).expect("a demo");
    verify_demo(reader, load_map("duel")).expect("it replays")
}

/// Replays the demo at `path` on duel.
pub(crate) fn verify_file(path: &Path) -> Verdict {
    verify_bytes(std::fs::read(path).expect("the demo was written"))
}

fn temp_demo(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sightline-{name}-{}.sldemo", std::process::id()))
}

/// Records a fight of about `seconds` into `path`: four bots and a person from the
/// start, another person joining during the recording, the host restarting the match
/// part-way; returns the ticks recorded and the tick the restart was carried out in.
fn record_fight(path: &Path, seconds: f64) -> (u32, u32) {
    let mut s = Stepper::new(config(), "duel");
    s.add_conditioned_client("alice", 1, lossy(), lossy());
    s.run_for(2.0);
    let w = s.server.world_mut();
    let next_tick = w.resource::<Tick>().0 + 1;
    let recorder = DemoRecorder::start(
        path,
        w.resource::<ServerConfig>(),
        w.resource::<sightline_map::CurrentMap>(),
        next_tick,
    )
    .expect("recording");
    w.insert_resource(recorder);
    s.run_for(1.0);
    s.add_conditioned_client("bob", 2, lossy(), lossy());
    s.run_for(seconds / 2.0 - 1.0);
    s.server.world_mut().resource_mut::<MatchOrders>().0 = Some(MatchOrder::Restart);
    let restart = s.server.world().resource::<Tick>().0 + 1;
    s.run_for(seconds / 2.0);
    let recorder = s
        .server
        .world_mut()
        .remove_resource::<DemoRecorder>()
        .expect("still recording");
    let done = recorder.finish("the test is over").expect("written");
    assert_eq!(done.bytes, std::fs::metadata(path).unwrap().len());
    (done.ticks, restart)
}

/// Each record of a demo, with the header, as written.
fn records(bytes: &[u8]) -> (sightline_server::demo::DemoHeader, Vec<Record>) {
    let mut r = DemoReader::open(bytes).unwrap();
    let mut out = Vec::new();
    while let Some((_, record)) = r.next_record().unwrap() {
        out.push(record);
    }
    (r.header().clone(), out)
}

#[test]
fn a_recorded_fight_replays_to_the_same_bits_plays_from_any_tick_and_a_changed_one_is_caught() {
    let path = temp_demo("fight");
    let (ticks, restarted_at) = record_fight(&path, 12.0);
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let seconds = f64::from(ticks) / 128.0;
    println!(
        "{ticks} ticks, {} bytes: {:.0} B/s for 6 players",
        bytes.len(),
        bytes.len() as f64 / seconds
    );

    // The lossy links' outages held the people now and then, and the server repaid those
    // ticks with two commands in one: the replay runs those the same way.
    let mut chain = CommandChain::default();
    let twice = records(&bytes)
        .1
        .iter()
        .filter_map(|r| match r {
            Record::Tick(t) => Some(chain.read(t).expect("reads")),
            _ => None,
        })
        .flatten()
        .filter(|(_, step)| matches!(step, Step::Twice { .. }))
        .count();
    assert!(twice > 0, "no tick ran two commands");

    let verdict = verify_bytes(bytes.clone());
    assert!(
        matches!(verdict.outcome, Outcome::Matched),
        "{:?}",
        verdict.outcome
    );
    assert_eq!(verdict.ticks, ticks);
    assert!(verdict.checksums >= 12, "{verdict:?}");
    assert_eq!(verdict.keyframes, 1, "one after the first, at 10 s");
    assert_eq!(verdict.ended.as_deref(), Some("the test is over"));
    // The replay's kills are the game's: every frag and death the standings show.
    assert_eq!(verdict.standings.len(), 6, "four bots and two people");
    let deaths: u32 = verdict.standings.iter().map(|s| s.score.deaths).sum();
    let kills_since_restart = verdict
        .kills
        .iter()
        .filter(|k| k.tick > restarted_at)
        .count();
    assert_eq!(deaths as usize, kills_since_restart, "{verdict:?}");
    assert!(deaths > 0, "nobody died in 12 s of fighting");

    // On another map it is refused, naming both.
    let src: Box<dyn Read + Send + Sync> = Box::new(std::io::Cursor::new(bytes.clone()));
    let wrong = verify_demo(DemoReader::open(src).unwrap(), load_map("depot")).unwrap_err();
    assert!(
        wrong.contains("recorded on duel") && wrong.contains("depot"),
        "{wrong}"
    );

    played_from_a_later_tick(&bytes, &verdict);

    // What the demo holds: a person joined, people were held for late commands, the
    // host's restart, and it stays small.
    let (header, all) = records(&bytes);
    assert_eq!(header.map_name, "duel");
    assert!(
        all.iter()
            .any(|r| matches!(r, Record::Player(p) if p.name == "bob"))
    );
    assert!(all.iter().any(|r| matches!(r, Record::Order(_))));
    let mut chain = CommandChain::default();
    let mut held = 0;
    for r in &all {
        match r {
            Record::Tick(t) => {
                let steps = chain.read(t).unwrap();
                held += steps.iter().filter(|s| s.1 == Step::Held).count();
            }
            Record::Left(id) => chain.forget(*id),
            _ => {}
        }
    }
    assert!(held > 0, "the lossy link held someone");
    assert!(
        (bytes.len() as f64 / seconds) < 8000.0,
        "{} B/s",
        bytes.len() as f64 / seconds
    );

    // One bot's command changed at one tick: the replay goes another way, and the
    // verifier names that player and tick or soon after.
    let bot = PlayerId(1);
    let mut tampered = DemoEncoder::start(&header).unwrap();
    let (mut read, mut write) = (CommandChain::default(), CommandChain::default());
    let mut tick_records = 0;
    for record in all {
        let record = match record {
            Record::Tick(commands) => {
                tick_records += 1;
                let mut steps = read.read(&commands).unwrap();
                if tick_records == 300 {
                    for (id, step) in &mut steps {
                        if *id == bot {
                            *step = Step::Ran {
                                cmd: InputCmd {
                                    forward: 1.0,
                                    buttons: sightline_sim::Buttons::JUMP,
                                    ..Default::default()
                                },
                                honest_view: false,
                            };
                        }
                    }
                }
                Record::Tick(write.write(&steps))
            }
            Record::Left(id) => {
                read.forget(id);
                write.forget(id);
                Record::Left(id)
            }
            other => other,
        };
        tampered.record(&record).unwrap();
    }
    let verdict = verify_bytes(tampered.take());
    match verdict.outcome {
        Outcome::Differs { tick, what } => {
            assert!(what.starts_with("player 1"), "{what}");
            assert!(
                what.contains("position") || what.contains("velocity"),
                "{what}"
            );
            let first = header.start_tick;
            assert!(
                (first + 300..=first + 300 + 128).contains(&tick),
                "{tick} ({first})"
            );
        }
        other => panic!("{other:?}"),
    }

    // Cut off mid-record, as by a server killed while recording: checked up to the cut,
    // and the cut named by its byte.
    let cut = bytes.len() / 2;
    let verdict = verify_bytes(bytes[..cut].to_vec());
    assert!(verdict.ticks > ticks / 3, "{verdict:?}");
    match verdict.outcome {
        Outcome::Unreadable(e) => {
            assert!(e.offset <= cut as u64 && e.offset > 0, "{e}");
            assert!(e.to_string().contains("cut off"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// The fight played to a spectator from a tick past the join, the restart and the
/// keyframe at 10 s, four times as fast: the playback starts from that keyframe (having
/// read what came before without simulating it), lands on the tick before anyone
/// watches, and plays on to the end with every checksum matching and the scoreboard the
/// replay's.
fn played_from_a_later_tick(bytes: &[u8], verdict: &Verdict) {
    let reader = || {
        let src: Box<dyn Read + Send + Sync> = Box::new(std::io::Cursor::new(bytes.to_vec()));
        DemoReader::open(src).expect("a demo")
    };
    let index = DemoIndex::scan(reader());
    assert_eq!(index.ticks(), verdict.ticks, "{index:?}");
    assert_eq!(index.keyframes.len(), 2, "{index:?}");
    assert!(index.unreadable.is_none());
    let seek = index.seek(index.first + 1400);
    assert_eq!(
        seek,
        Seek {
            keyframe: index.keyframes[1],
            tick: index.first + 1400
        }
    );
    let dt = std::time::Duration::from_nanos(1_000_000_000 / 128);
    let network = MemoryNetwork::on_shared_clock();
    let control = PlaybackControl::default();
    assert_eq!(control.set_speed(9.0), 4.0, "at most four times");
    let server = playback_app(
        reader(),
        load_map("duel"),
        ServerNetPlugin::memory(network.clone()),
        Pacing::Manual(dt),
        control,
        Some(seek),
    );
    let mut s = Stepper::around(server, network, dt);
    let tick = |s: &Stepper| s.server.world().resource::<Tick>().0;
    s.run_for(0.5);
    assert_eq!(tick(&s), seek.tick, "on the tick, waiting for a spectator");
    let viewer = s.add_spectator("viewer");
    let left = f64::from(index.end - seek.tick) / 128.0;
    s.run_for(left / 4.0 + 1.0);
    let client = s.clients[viewer].world();
    let chat = client.resource::<ChatLog>();
    assert!(
        chat.0.iter().any(|(_, text)| text == "the demo has ended"),
        "{chat:?}"
    );
    let played = tick(&s) - seek.tick;
    assert!(
        (index.end - seek.tick..=index.end - seek.tick + 2).contains(&played),
        "{played} ticks played from {seek:?} in {index:?}"
    );
    assert_scoreboard_is_the_replays(client, verdict);
}

/// Every scoreboard line the spectator `client` shows is the replay's final standing.
fn assert_scoreboard_is_the_replays(client: &bevy::prelude::World, verdict: &Verdict) {
    let roster = client.resource::<Roster>();
    for standing in &verdict.standings {
        let line = roster.0.get(&standing.id).expect("on the scoreboard");
        assert_eq!(
            (line.frags, line.deaths),
            (standing.score.frags, standing.score.deaths),
            "{}",
            standing.name
        );
    }
}

/// Runs `sightline-server --verify-demo path`: whether it passed, and what it printed.
fn verify_with_the_server(path: &Path) -> (bool, String) {
    let out = std::process::Command::new(binaries().join("sightline-server"))
        .current_dir(repo_root())
        .arg("--verify-demo")
        .arg(path)
        .output()
        .expect("the server runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The demo `scripts/record-demo` recorded with the dedicated server replays under this
/// build to the same bits: a change to the simulation that plays the same commands
/// differently fails here, naming the tick and field (re-record it, and raise
/// `SIMULATION_VERSION` if old demos should be refused).
#[test]
fn the_kept_demo_replays_to_the_same_bits_under_the_server_binary() {
    let kept = repo_root().join("tests/data/duel-bots.sldemo");
    let (ok, out) = verify_with_the_server(&kept);
    assert!(ok, "{out}");
    assert!(
        out.contains("matches: 2560 ticks (20.0 s) on duel"),
        "{out}"
    );
    assert!(out.contains("checksums compared: 20"), "{out}");
    // The match as it was played: its kills in order, and each bot's frags and deaths.
    assert!(out.contains(" killed "), "{out}");
    assert_eq!(out.matches(" deaths  Bot ").count(), 6, "{out}");

    // Damaged copies: a byte flipped in a record, the file cut short, another
    // simulation's: each refused with the byte it goes wrong at, and never a panic.
    let bytes = std::fs::read(&kept).unwrap();
    let damaged = temp_demo("damaged");
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x5a;
    let mut other_version = bytes.clone();
    other_version[16..20].copy_from_slice(&9999u32.to_le_bytes());
    // (A flipped byte that still decodes is a state the replay did not reach.)
    for (copy, expected) in [
        (flipped, ["byte ", "differs before tick"]),
        (bytes[..bytes.len() / 3].to_vec(), ["cut off"; 2]),
        (other_version, ["simulation version 9999"; 2]),
    ] {
        std::fs::write(&damaged, &copy).unwrap();
        let (ok, out) = verify_with_the_server(&damaged);
        assert!(!ok, "{out}");
        assert!(expected.iter().any(|e| out.contains(e)), "{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
    let _ = std::fs::remove_file(&damaged);
}

#[test]
fn a_demo_plays_back_to_a_spectator_as_the_game_was_and_stops_at_its_end() {
    let path = repo_root().join("tests/data/duel-bots.sldemo");
    let verdict = verify_file(&path);
    let (reader, map) = open_demo(&path).expect("the kept demo opens");
    let tick_hz = reader.header().tick_hz;
    let dt = std::time::Duration::from_nanos(1_000_000_000 / u64::from(tick_hz));
    let network = MemoryNetwork::on_shared_clock();
    let control = PlaybackControl::default();
    let server = playback_app(
        reader,
        map,
        ServerNetPlugin::memory(network.clone()),
        Pacing::Manual(dt),
        control.clone(),
        None,
    );
    let mut s = Stepper::around(server, network, dt);
    let tick = |s: &Stepper| s.server.world().resource::<Tick>().0;
    // Nobody watching: the demo waits.
    s.run_for(1.0);
    let waiting = tick(&s);
    let viewer = s.add_spectator("viewer");
    s.run_for(5.0);
    // Paused by the viewer: the world holds still, then goes on from where it was.
    control.set_paused(true);
    s.run_for(0.1);
    let paused_at = tick(&s);
    s.run_for(2.0);
    assert_eq!(tick(&s), paused_at, "the demo ran on while paused");
    control.set_paused(false);
    s.run_for(f64::from(verdict.ticks) / f64::from(tick_hz) - 5.0 + 3.0);
    let client = s.clients[viewer].world();
    assert!(client.get_resource::<Watching>().is_some(), "a spectator");
    // Every tick of the demo played, then the world held still.
    let played = tick(&s) - waiting;
    assert!(
        (verdict.ticks..=verdict.ticks + 2).contains(&played),
        "{played} ticks played of the demo's {}",
        verdict.ticks
    );
    // Everyone drawn, moving; the kills shown in the kill feed as the match had them.
    let stats = client.resource::<ClientStats>();
    assert_eq!(stats.seen.len(), verdict.standings.len(), "{stats:?}");
    assert_eq!(
        stats.players_moved(1.0),
        verdict.standings.len(),
        "{stats:?}"
    );
    let feed = client.resource::<KillFeed>();
    assert_eq!(
        feed.0.len(),
        verdict.kills.len().min(MAX_KILL_FEED),
        "{feed:?}"
    );
    assert_scoreboard_is_the_replays(client, &verdict);
    let chat = client.resource::<ChatLog>();
    assert!(
        chat.0.iter().any(|(_, text)| text == "the demo has ended"),
        "{chat:?}"
    );
}
