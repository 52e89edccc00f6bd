//! Recording: each tick, after the commands are chosen and before anyone moves, what
//! changed between ticks (joins, leaves, team switches, the host's orders and limits),
//! a checksum once a second, a keyframe every ten seconds, and every player's command.
//! The bytes go to a thread of their own that writes the file, so a slow disk never
//! holds up the tick; one that falls seconds behind stops the recording instead.

use super::format::{CommandChain, DemoEncoder, DemoHeader, DemoLimits, DemoOrder, Record, Step};
use super::state::{PlayerRecord, Sums, keyframe, players};
use crate::ServerConfig;
use crate::catch_up::CatchUp;
use crate::rules::{MatchOrder, MatchOrders};
use bevy::prelude::*;
use sightline_combat::ViewWindow;
use sightline_map::CurrentMap;
use sightline_sim::{CurrentCmd, Held, InputCmd, PlayerId, Tick};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

/// Seconds between keyframes.
pub const KEYFRAME_SECONDS: u32 = 10;
/// Ticks' worth of bytes the file's thread may fall behind before the recording stops.
const QUEUED_TICKS: usize = 512;

/// A recording in progress.
#[derive(Resource)]
pub struct DemoRecorder {
    path: PathBuf,
    encoder: DemoEncoder,
    sink: Option<SyncSender<Vec<u8>>>,
    writer: Option<JoinHandle<std::io::Result<u64>>>,
    header: DemoHeader,
    started: bool,
    ticks: u32,
    /// Each player's last command, which the next is written against.
    commands: CommandChain,
    /// Every player as the last tick left it: a difference at the next is a change made
    /// between ticks.
    after_last_tick: Vec<PlayerRecord>,
    limits: DemoLimits,
}

/// What a finished recording came to.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingDone {
    /// The file.
    pub path: PathBuf,
    /// Ticks recorded.
    pub ticks: u32,
    /// Bytes written.
    pub bytes: u64,
}

impl DemoRecorder {
    /// Starts recording into `path` (made with its folder, or replaced) from the next
    /// tick, numbered `start_tick`.
    pub fn start(
        path: &Path,
        config: &ServerConfig,
        map: &CurrentMap,
        start_tick: u32,
    ) -> Result<Self, String> {
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|e| format!("cannot make the folder {}: {e}", folder.display()))?;
        }
        let file = std::fs::File::create(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let header = DemoHeader {
            map_name: map.def.name.clone(),
            map_hash: map.hash,
            tick_hz: config.tick.tick_hz,
            snapshot_hz: config.tick.snapshot_hz(),
            server_name: config.name.clone(),
            mode: config.rules.mode,
            fraglimit: config.rules.fraglimit,
            capturelimit: config.rules.capturelimit,
            timelimit: config.rules.timelimit,
            rotation: config.rules.rotation.clone(),
            friendly_fire: config.rules.friendly_fire,
            overtime: config.rules.overtime,
            warmup: config.rules.warmup,
            start_tick,
            recorded_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let encoder = DemoEncoder::start(&header)?;
        let (sink, queue) = sync_channel(QUEUED_TICKS);
        let writer = std::thread::Builder::new()
            .name("demo writer".into())
            .spawn(move || write_file(file, queue))
            .map_err(|e| format!("cannot start the demo's writer: {e}"))?;
        Ok(Self {
            path: path.to_path_buf(),
            encoder,
            sink: Some(sink),
            writer: Some(writer),
            header,
            started: false,
            ticks: 0,
            commands: CommandChain::default(),
            after_last_tick: Vec::new(),
            limits: DemoLimits::of(&config.rules),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ticks recorded so far.
    pub fn ticks(&self) -> u32 {
        self.ticks
    }

    /// Ends the recording with `reason`, waits for the file to be written, and says
    /// what it came to.
    pub fn finish(mut self, reason: &str) -> Result<RecordingDone, String> {
        let ended = self.encoder.record(&Record::End(reason.into()));
        let sent = ended.and_then(|()| self.send());
        self.sink = None;
        let written = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(Ok(bytes))) => Ok(bytes),
            Some(Ok(Err(e))) => Err(format!("cannot write {}: {e}", self.path.display())),
            _ => Err(format!("the writer of {} failed", self.path.display())),
        };
        sent?;
        Ok(RecordingDone {
            path: self.path.clone(),
            ticks: self.ticks,
            bytes: written?,
        })
    }

    /// Hands what was encoded to the file's thread.
    fn send(&mut self) -> Result<(), String> {
        let bytes = self.encoder.take();
        let Some(sink) = &self.sink else {
            return Err("the recording has stopped".into());
        };
        match sink.try_send(bytes) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(format!(
                "the disk is too slow: {} is seconds behind",
                self.path.display()
            )),
            Err(TrySendError::Disconnected(_)) => {
                Err(format!("cannot write {}", self.path.display()))
            }
        }
    }
}

/// The file's thread: writes what it is sent, flushing when the queue runs dry.
fn write_file(file: std::fs::File, queue: Receiver<Vec<u8>>) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let mut written = 0u64;
    while let Ok(bytes) = queue.recv() {
        out.write_all(&bytes)?;
        written += bytes.len() as u64;
        while let Ok(more) = queue.try_recv() {
            out.write_all(&more)?;
            written += more.len() as u64;
        }
        out.flush()?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(written)
}

/// Starts recording the server's game into `path` from the next tick; what to tell
/// the host, or why not.
pub fn start_recording(world: &mut World, path: &Path) -> Result<String, String> {
    if let Some(r) = world.get_resource::<DemoRecorder>() {
        return Err(format!("already recording {}", r.path().display()));
    }
    let tick = world.resource::<Tick>().0.wrapping_add(1);
    let recorder = DemoRecorder::start(
        path,
        world.resource::<ServerConfig>(),
        world.resource::<CurrentMap>(),
        tick,
    )?;
    info!("recording the demo {}", path.display());
    world.insert_resource(recorder);
    Ok(format!("recording {}", path.display()))
}

/// Stops the recording, the file whole; what was written, or why not.
pub fn stop_recording(world: &mut World) -> Result<String, String> {
    let recorder = world
        .remove_resource::<DemoRecorder>()
        .ok_or("not recording a demo")?;
    let hz = world.resource::<ServerConfig>().tick.tick_hz.max(1);
    let done = recorder.finish("stopped by the host")?;
    let line = format!(
        "wrote {}: {:.1} s ({} ticks), {} bytes",
        done.path.display(),
        f64::from(done.ticks) / f64::from(hz),
        done.ticks,
        done.bytes
    );
    info!("{line}");
    Ok(line)
}

/// Records this tick: what changed since the last, the checksums and keyframes when
/// due, and every player's command. Stops the recording (with a warning) on a change of
/// map or mode (a demo plays one of each) or when the file cannot keep up.
pub(crate) fn record_tick(world: &mut World) {
    let Some(mut recorder) = world.remove_resource::<DemoRecorder>() else {
        return;
    };
    match record(world, &mut recorder) {
        Ok(true) => world.insert_resource(recorder),
        Ok(false) => stop(recorder, "the map or the mode changed"),
        Err(e) => stop(recorder, &e),
    }
}

/// Stops a recording, saying why in the log.
fn stop(recorder: DemoRecorder, why: &str) {
    match recorder.finish(why) {
        Ok(done) => info!(
            "demo {} stopped ({why}): {} ticks, {} bytes",
            done.path.display(),
            done.ticks,
            done.bytes
        ),
        Err(e) => warn!("demo stopped ({why}): {e}"),
    }
}

/// One tick's records; `Ok(false)` when the recording must end here.
fn record(world: &mut World, r: &mut DemoRecorder) -> Result<bool, String> {
    let hz = r.header.tick_hz.max(1);
    let map_hash = world.resource::<CurrentMap>().hash;
    if map_hash != r.header.map_hash || world.resource::<ServerConfig>().rules.mode != r.header.mode
    {
        return Ok(false);
    }
    let now = players(world);
    let since = r.ticks;
    let keyframe_due = !r.started || (since > 0 && since.is_multiple_of(KEYFRAME_SECONDS * hz));
    let checksum_due = since.is_multiple_of(hz);
    // The whole state, taken once for the keyframe and the checksum that share a tick.
    let mut state = (keyframe_due || checksum_due).then(|| keyframe(world));
    if !r.started {
        r.started = true;
        if let Some(state) = &state {
            r.encoder
                .record(&Record::Keyframe(Box::new(state.clone())))?;
        }
    } else {
        for p in &now {
            if r.after_last_tick.iter().all(|q| q != p) {
                r.encoder.record(&Record::Player(Box::new(p.clone())))?;
            }
        }
        for gone in r
            .after_last_tick
            .iter()
            .filter(|q| now.iter().all(|p| p.id != q.id))
        {
            r.commands.forget(gone.id);
            r.encoder.record(&Record::Left(gone.id))?;
        }
    }
    let order = match &world.resource::<MatchOrders>().0 {
        Some(MatchOrder::Map(_)) => return Ok(false),
        Some(MatchOrder::Restart) => Some(DemoOrder::Restart),
        Some(MatchOrder::NextMap) => Some(DemoOrder::NextMap),
        Some(MatchOrder::End) => Some(DemoOrder::End),
        Some(MatchOrder::Countdown) => Some(DemoOrder::Countdown),
        None => None,
    };
    if let Some(order) = order {
        r.encoder.record(&Record::Order(order))?;
    }
    let limits = DemoLimits::of(&world.resource::<ServerConfig>().rules);
    if limits != r.limits {
        r.limits = limits;
        r.encoder.record(&Record::Limits(limits))?;
    }
    let sums = state.as_ref().filter(|_| checksum_due).map(Sums::of);
    if since > 0
        && keyframe_due
        && let Some(state) = state.take()
    {
        r.encoder.record(&Record::Keyframe(Box::new(state)))?;
    }
    if let Some(sums) = sums {
        r.encoder.record(&Record::Checksum(Box::new(sums)))?;
    }
    let steps = steps(world);
    r.encoder.record(&Record::Tick(r.commands.write(&steps)))?;
    r.send()?;
    r.ticks += 1;
    Ok(true)
}

/// Every player's step this tick, by id.
fn steps(world: &mut World) -> Vec<(PlayerId, Step)> {
    let mut query = world.query::<(
        &PlayerId,
        &CurrentCmd,
        &Held,
        Option<&ViewWindow>,
        Option<&CatchUp>,
    )>();
    let mut rows: Vec<_> = query
        .iter(world)
        .map(|(id, cmd, held, window, catch_up)| {
            let honest =
                |w: Option<&ViewWindow>, c: &InputCmd| w.is_some_and(|w| w.contains(c.view_time()));
            let (cmd, honest_view) = (cmd.0, honest(window, &cmd.0));
            let step = match catch_up.and_then(|c| c.0) {
                _ if held.0 => Step::Held,
                Some((then, then_window)) => Step::Twice {
                    cmd,
                    honest_view,
                    then,
                    then_honest: honest(Some(&then_window), &then),
                },
                None => Step::Ran { cmd, honest_view },
            };
            (*id, step)
        })
        .collect();
    rows.sort_by_key(|(id, _)| *id);
    rows
}

/// Remembers every player as this tick left them, so the next tick can tell what
/// changed in between.
pub(crate) fn remember_tick_end(world: &mut World) {
    if !world.contains_resource::<DemoRecorder>() {
        return;
    }
    let now = players(world);
    if let Some(mut r) = world.get_resource_mut::<DemoRecorder>() {
        r.after_last_tick = now;
    }
}

/// Stops the recording as the server stops, so the file ends whole.
pub(crate) fn finish_on_exit(world: &mut World) {
    let exiting = !world.resource::<Messages<AppExit>>().is_empty();
    if exiting && let Some(recorder) = world.remove_resource::<DemoRecorder>() {
        stop(recorder, "the server stopped");
    }
}
