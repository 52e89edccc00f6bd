//! Where a frame's time goes (`cl_showfps`): the main world's systems, the render
//! world's (applying what was extracted, preparing, queueing, encoding), the GPU's passes
//! as wgpu's timestamps measure them (where the adapter has timestamps), and the CPU the
//! embedded server's threads use. `cl_showfps 1` shows the frame rate and frame time,
//! 2 the split too; the exit report gives the split's medians over play, which
//! `scripts/report fps` puts in its table.

use crate::cvars::cvar;
use bevy::diagnostic::DiagnosticsStore;
use bevy::prelude::*;
use bevy::render::{Render, RenderApp, RenderSystems};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_console::Cvars;
use sightline_sim::quantile;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One frame's split, milliseconds; `None` where it is not measured (no renderer, an
/// adapter without timestamps, a platform without per-thread CPU clocks, no embedded
/// server).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Split {
    /// The whole frame, as `Time<Real>` saw it.
    pub frame: f64,
    /// The main world's schedules, `First` to `Last`.
    pub main: f64,
    /// The render world's `Render` schedule (its latest run: rendering is pipelined, a
    /// frame behind).
    pub render: Option<f64>,
    /// The GPU's top-level passes, summed (its latest readback, a few frames behind).
    pub gpu: Option<f64>,
    /// The embedded server's threads' CPU over the last second, as a share of one core.
    pub server_core: Option<f64>,
}

/// How often the overlay's figures change: often enough to follow, slow enough to read.
const SHOWN_EVERY: f64 = 0.5;
/// How often the embedded server's CPU is read.
const SERVER_SAMPLE: Duration = Duration::from_secs(1);
/// Microseconds stored when the render world has not run yet.
const NONE_YET: u64 = u64::MAX;

/// Measures the split every frame, shows it (`cl_showfps`) and keeps the latest for the
/// exit report.
pub struct FrameCostPlugin;

impl Plugin for FrameCostPlugin {
    fn build(&self, app: &mut App) {
        let render_micros = RenderMicros(Arc::new(AtomicU64::new(NONE_YET)));
        app.init_resource::<FrameCost>()
            .insert_resource(render_micros.clone())
            .add_systems(First, start_main_clock)
            .add_systems(Last, (read_server_cpu, measure_frame).chain())
            .add_systems(EguiPrimaryContextPass, show_fps);
        if let Some(render) = app.get_sub_app_mut(RenderApp) {
            render
                .insert_resource(render_micros)
                .init_resource::<RenderStarted>()
                .add_systems(
                    Render,
                    (
                        start_render_clock.before(RenderSystems::ExtractCommands),
                        stop_render_clock.after(RenderSystems::PostCleanup),
                    ),
                );
        }
    }
}

/// The render world's latest `Render` schedule, microseconds, shared with the main world
/// (the render world runs on a thread of its own).
#[derive(Resource, Clone)]
pub(crate) struct RenderMicros(Arc<AtomicU64>);

/// When the render world's schedule began (in the render world).
#[derive(Resource, Default)]
struct RenderStarted(Option<Instant>);

/// The frame's split as measured, the overlay's figures and the server's CPU clock.
#[derive(Resource, Default)]
pub(crate) struct FrameCost {
    main_started: Option<Instant>,
    /// The latest frame's split.
    pub latest: Split,
    /// The last second's splits (real seconds, split), for the overlay's medians.
    recent: VecDeque<(f64, Split)>,
    /// What the overlay shows, and when it was worked out.
    shown: Option<(f64, Split)>,
    /// The embedded server's CPU: the last reading (when, its threads' total) and the
    /// share of a core since the one before.
    server_read: Option<(Instant, Duration)>,
    server_core: Option<f64>,
}

fn start_main_clock(mut cost: ResMut<FrameCost>) {
    cost.main_started = Some(Instant::now());
}

fn start_render_clock(mut started: ResMut<RenderStarted>) {
    started.0 = Some(Instant::now());
}

fn stop_render_clock(started: Res<RenderStarted>, micros: Res<RenderMicros>) {
    if let Some(at) = started.0 {
        let us = u64::try_from(at.elapsed().as_micros()).unwrap_or(NONE_YET - 1);
        micros.0.store(us, Ordering::Relaxed);
    }
}

/// Reads the embedded server's CPU clock once a [`SERVER_SAMPLE`].
fn read_server_cpu(mut cost: ResMut<FrameCost>) {
    let now = Instant::now();
    if cost
        .server_read
        .is_some_and(|(at, _)| now.duration_since(at) < SERVER_SAMPLE)
    {
        return;
    }
    let Some(total) = server_cpu() else {
        (cost.server_read, cost.server_core) = (None, None);
        return;
    };
    if let Some((at, before)) = cost.server_read {
        let wall = now.duration_since(at).as_secs_f64();
        let used = total.saturating_sub(before).as_secs_f64();
        cost.server_core = Some(used / wall.max(1e-3));
    }
    cost.server_read = Some((now, total));
}

/// Puts the frame's split together: the main world's span so far (this system runs in
/// `Last`), the render world's latest, the GPU's latest readback and the server's share.
pub(crate) fn measure_frame(
    mut cost: ResMut<FrameCost>,
    time: Res<Time<Real>>,
    render: Res<RenderMicros>,
    store: Option<Res<DiagnosticsStore>>,
) {
    let main = cost
        .main_started
        .map_or(0.0, |at| at.elapsed().as_secs_f64() * 1000.0);
    let render = match render.0.load(Ordering::Relaxed) {
        NONE_YET => None,
        us => Some(us as f64 / 1000.0),
    };
    let split = Split {
        frame: time.delta_secs_f64() * 1000.0,
        main,
        render,
        gpu: store.and_then(|store| gpu_ms(&store)),
        server_core: cost.server_core,
    };
    cost.latest = split;
    let now = time.elapsed_secs_f64();
    cost.recent.push_back((now, split));
    while cost.recent.front().is_some_and(|(at, _)| now - at > 1.0) {
        cost.recent.pop_front();
    }
    if cost.shown.is_none_or(|(at, _)| now - at >= SHOWN_EVERY) {
        let recent: Vec<Split> = cost.recent.iter().map(|(_, s)| *s).collect();
        cost.shown = median_split(&recent).map(|s| (now, s));
    }
}

/// The GPU time of the latest readback: the sum of the top-level passes' `elapsed_gpu`
/// (`render/PASS/elapsed_gpu`; nested passes are inside their parent's time).
fn gpu_ms(store: &DiagnosticsStore) -> Option<f64> {
    let mut newest: Option<(Instant, f64)> = None;
    for diagnostic in store.iter() {
        let path = diagnostic.path();
        let mut parts = path.components();
        let top_level = parts.next() == Some("render")
            && parts.next().is_some()
            && parts.next() == Some("elapsed_gpu")
            && parts.next().is_none();
        let Some(m) = diagnostic.measurement().filter(|_| top_level) else {
            continue;
        };
        // One readback stores all its passes at one instant.
        newest = match newest {
            Some((at, sum)) if at == m.time => Some((at, sum + m.value)),
            Some((at, _)) if at > m.time => newest,
            _ => Some((m.time, m.value)),
        };
    }
    newest.map(|(_, ms)| ms)
}

/// Each part's median over `splits`, over the frames that measured it (the upper of the
/// middle two where they are even).
pub(crate) fn median_split(splits: &[Split]) -> Option<Split> {
    if splits.is_empty() {
        return None;
    }
    let median = |part: fn(&Split) -> Option<f64>| {
        let sorted = quantile::sorted(splits.iter().filter_map(part));
        quantile::quantile(&sorted, 0.5)
    };
    Some(Split {
        frame: median(|s| Some(s.frame)).unwrap_or(0.0),
        main: median(|s| Some(s.main)).unwrap_or(0.0),
        render: median(|s| s.render),
        gpu: median(|s| s.gpu),
        server_core: median(|s| s.server_core),
    })
}

/// The split in words, as the overlay's second line and the exit report write it.
pub(crate) fn describe_split(split: &Split) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    format!(
        "main {:.1} ms, render {}, gpu {}, server {}",
        split.main,
        ms(split.render),
        ms(split.gpu),
        split
            .server_core
            .map_or("-".to_string(), |c| format!("{:.0} % of a core", c * 100.0))
    )
}

/// Draws the frame rate (and at 2 the split) in the top left corner.
fn show_fps(mut contexts: EguiContexts, cvars: Res<Cvars>, cost: Res<FrameCost>) -> Result {
    let mode = cvars.read(cvar::CL_SHOWFPS);
    let Some((_, shown)) = cost.shown.filter(|_| mode > 0) else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("showfps"),
    ));
    let mut text = format!(
        "{:.1} fps  {:.1} ms",
        1000.0 / shown.frame.max(1e-3),
        shown.frame
    );
    if mode > 1 {
        text.push('\n');
        text.push_str(&describe_split(&shown));
    }
    // The top right corner holds the kill feed.
    let corner = ctx.content_rect().left_top() + egui::vec2(8.0, 8.0);
    let galley = painter.layout(
        text,
        egui::FontId::monospace(13.0),
        egui::Color32::from_rgb(200, 255, 200),
        f32::INFINITY,
    );
    let rect = egui::Align2::LEFT_TOP.anchor_size(corner, galley.size());
    painter.rect_filled(rect.expand(4.0), 4.0, egui::Color32::from_black_alpha(150));
    painter.galley(rect.min, galley, egui::Color32::WHITE);
    Ok(())
}

/// CPU time the embedded server's threads (named `sightline-server...`, by
/// `ServerThread`) have used: Linux's per-thread scheduler statistics; `None` elsewhere
/// or without such a thread.
fn server_cpu() -> Option<Duration> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut total: Option<Duration> = None;
    for task in tasks.flatten() {
        let dir = task.path();
        // A thread's name is cut to 15 bytes.
        let named = std::fs::read_to_string(dir.join("comm"))
            .is_ok_and(|name| name.starts_with("sightline-serv"));
        if !named {
            continue;
        }
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
        if let Some(ns) = ns {
            *total.get_or_insert(Duration::ZERO) += Duration::from_nanos(ns);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(frame: f64, gpu: Option<f64>) -> Split {
        Split {
            frame,
            main: frame / 4.0,
            render: Some(frame / 2.0),
            gpu,
            server_core: None,
        }
    }

    #[test]
    fn each_part_is_the_median_of_the_frames_that_measured_it() {
        let splits = [
            split(10.0, Some(1.0)),
            split(30.0, None),
            split(20.0, Some(3.0)),
        ];
        let median = median_split(&splits).unwrap();
        assert_eq!(median.frame, 20.0);
        assert_eq!(median.main, 5.0);
        assert_eq!(median.render, Some(10.0));
        // Of two, the upper (`quantile`'s rule).
        assert_eq!(median.gpu, Some(3.0));
        assert_eq!(median.server_core, None);
        assert_eq!(median_split(&[]), None);
        assert_eq!(
            describe_split(&median),
            "main 5.0 ms, render 10.0 ms, gpu 3.0 ms, server -"
        );
    }

    #[test]
    fn the_gpu_time_sums_the_top_level_passes_of_the_newest_readback() {
        use bevy::diagnostic::{Diagnostic, DiagnosticMeasurement, DiagnosticPath};
        let mut store = DiagnosticsStore::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(100);
        for (path, at, value) in [
            ("render/shadows/elapsed_gpu", t1, 2.0),
            ("render/main_opaque_pass_3d/elapsed_gpu", t1, 5.0),
            // Inside the pass above: not counted again.
            ("render/main_opaque_pass_3d/early/elapsed_gpu", t1, 4.0),
            ("render/main_opaque_pass_3d/elapsed_cpu", t1, 9.0),
            // An older readback of a pass this frame did not run.
            ("render/bloom/elapsed_gpu", t0, 7.0),
        ] {
            let path = DiagnosticPath::new(path);
            let mut diagnostic = Diagnostic::new(path.clone());
            diagnostic.add_measurement(DiagnosticMeasurement { time: at, value });
            store.add(diagnostic);
        }
        assert_eq!(gpu_ms(&store), Some(7.0));
        assert_eq!(gpu_ms(&DiagnosticsStore::default()), None);
    }

    #[test]
    fn the_embedded_server_threads_cpu_is_read_where_linux_keeps_it() {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinning = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sightline-server".into())
            .spawn(move || {
                let mut x = 0u64;
                while !spinning.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
            .unwrap();
        if cfg!(target_os = "linux") {
            // The thread names itself once it runs.
            let named_by = Instant::now() + Duration::from_secs(5);
            let before = std::iter::repeat_with(server_cpu)
                .find(|cpu| cpu.is_some() || Instant::now() > named_by)
                .flatten()
                .expect("the thread is found by its name");
            std::thread::sleep(Duration::from_millis(200));
            let used = server_cpu().unwrap().saturating_sub(before);
            assert!(used >= Duration::from_millis(20), "{used:?}");
        }
        stop.store(true, Ordering::Relaxed);
        thread.join().unwrap();
    }
}
