//! Watching a demo: pause, speed and seeking from the console (Source's `demo_*`
//! commands) and from a timeline at the foot of the screen with the demo's kills marked
//! (`demoui` frees the mouse to use it). The drawn world runs on the demo's pace
//! ([`StreamTime`]), so a slower, faster or paused demo is drawn as smoothly as a live
//! game.

use crate::offline::DemoPlayback;
use crate::session::{Session, SessionRequest};
use bevy::prelude::*;
use bevy_egui::egui;
use sightline_client::Watching;
use sightline_console::{Console, ConsoleCommands, RunCommand};
use sightline_interpolation::{RenderTime, StreamTime};
use sightline_server::{FASTEST, SLOWEST};

/// The demo controls and timeline.
pub struct DemoControlsPlugin;

impl Plugin for DemoControlsPlugin {
    fn build(&self, app: &mut App) {
        let mut commands = app
            .world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default);
        commands.register("demo_pause", "watching a demo: pause it");
        commands.register(
            "demo_resume",
            "watching a demo: go on from where it was paused",
        );
        commands.register("demo_togglepause", "watching a demo: pause it, or go on");
        commands.register(
            "demo_timescale",
            "demo_timescale [SPEED]: watching a demo: play it at 0.25 to 4 times real time",
        );
        commands.register(
            "demo_gototick",
            "demo_gototick TICK|+N|-N: watching a demo: go to a tick (from its start) or N ticks on or back",
        );
        commands.register(
            "demoui",
            "watching a demo: free the mouse for the timeline's controls, or take it back",
        );
        app.init_resource::<DemoUi>()
            .add_systems(Update, (demo_commands, follow_demo_pace))
            .add_systems(
                bevy_egui::EguiPrimaryContextPass,
                draw_timeline.run_if(resource_exists::<Watching>),
            );
    }
}

/// Whether the demo's controls have the mouse (`demoui`).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DemoUi {
    /// The cursor is free and the timeline takes clicks.
    pub open: bool,
}

/// The tick of the demo (counted from its start) drawn now.
fn drawn_tick(demo: &DemoPlayback, render: &RenderTime) -> Option<u32> {
    let index = &demo.index;
    let t = render.server_time?;
    let tick = (t * f64::from(index.tick_hz)).round().max(0.0) as u32;
    Some(
        tick.clamp(index.first, index.end)
            .saturating_sub(index.first),
    )
}

/// The console's demo commands.
fn demo_commands(
    mut run: MessageReader<RunCommand>,
    session: Res<Session>,
    render: Res<RenderTime>,
    mut ui: ResMut<DemoUi>,
    mut console: ResMut<Console>,
    mut requests: MessageWriter<SessionRequest>,
) {
    for cmd in run.read() {
        let name = cmd.name.as_str();
        if !matches!(
            name,
            "demo_pause"
                | "demo_resume"
                | "demo_togglepause"
                | "demo_timescale"
                | "demo_gototick"
                | "demoui"
        ) {
            continue;
        }
        let Some(demo) = session.demo() else {
            console.print(format!("{name}: no demo is playing"));
            continue;
        };
        let control = &demo.control;
        match (name, cmd.args.as_slice()) {
            ("demo_pause", _) => control.set_paused(true),
            ("demo_resume", _) => control.set_paused(false),
            ("demo_togglepause", _) => control.set_paused(!control.paused()),
            ("demo_timescale", []) => {
                console.print(format!("demo_timescale is {}", control.speed()));
            }
            ("demo_timescale", [speed]) => match speed.parse::<f32>() {
                Ok(speed) if speed.is_finite() => {
                    let set = control.set_speed(speed);
                    console.print(format!("demo_timescale {set}"));
                }
                _ => console.print(format!(
                    "demo_timescale: a speed from {SLOWEST} to {FASTEST}, not \"{speed}\""
                )),
            },
            ("demo_gototick", [to]) => {
                let now = drawn_tick(demo, &render).unwrap_or(0);
                match goto_tick(to, now) {
                    Some(tick) => {
                        requests.write(SessionRequest::Seek(demo.index.first.saturating_add(tick)));
                    }
                    None => console.print(format!(
                        "demo_gototick: a tick from the demo's start, or +N or -N; not \"{to}\""
                    )),
                }
            }
            ("demoui", _) => ui.open = !ui.open,
            _ => console.print(format!("usage: {}", usage(name))),
        }
    }
}

fn usage(name: &str) -> &'static str {
    match name {
        "demo_gototick" => "demo_gototick TICK|+N|-N",
        "demo_timescale" => "demo_timescale [SPEED]",
        _ => "",
    }
}

/// The tick `arg` asks for, from the demo's start: a number, or `+N` / `-N` from `now`.
fn goto_tick(arg: &str, now: u32) -> Option<u32> {
    if let Some(n) = arg.strip_prefix('+') {
        return Some(now.saturating_add(n.parse().ok()?));
    }
    if let Some(n) = arg.strip_prefix('-') {
        return Some(now.saturating_sub(n.parse().ok()?));
    }
    arg.parse().ok()
}

/// The drawn world's clock runs at the demo's pace: its speed, stopped while paused, and
/// real time otherwise; the mouse goes back to the camera when no demo plays.
fn follow_demo_pace(session: Res<Session>, mut stream: ResMut<StreamTime>, mut ui: ResMut<DemoUi>) {
    let rate = session.demo().map_or(1.0, |d| f64::from(d.control.rate()));
    if stream.rate != rate {
        stream.rate = rate;
    }
    if ui.open && session.demo().is_none() {
        ui.open = false;
    }
}

/// Speeds the timeline offers.
const SPEEDS: [f32; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// The timeline at the foot of the screen: where the drawn world is in the demo, its
/// kills marked, the speed and whether it is paused; with `demoui`, a click on it goes
/// there, and buttons pause and change the speed.
fn draw_timeline(
    mut contexts: bevy_egui::EguiContexts,
    session: Res<Session>,
    render: Res<RenderTime>,
    ui_state: Res<DemoUi>,
    mut requests: MessageWriter<SessionRequest>,
) -> Result {
    let Some(demo) = session.demo() else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let index = &demo.index;
    let hz = index.tick_hz.max(1);
    let length = index.ticks().max(1);
    let now = drawn_tick(demo, &render).unwrap_or(0);
    let control = &demo.control;
    let width = (ctx.content_rect().width() * 0.6).max(240.0);
    egui::Area::new(egui::Id::new("demo timeline"))
        .anchor(egui::Align2::CENTER_BOTTOM, egui::vec2(0.0, -72.0))
        .interactable(ui_state.open)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(150))
                .corner_radius(6.0)
                .inner_margin(8.0)
                .show(ui, |ui| {
                    ui.set_width(width);
                    let (rect, response) =
                        ui.allocate_exact_size(egui::vec2(width, 16.0), egui::Sense::click());
                    let x = |tick: u32| {
                        rect.left() + rect.width() * (tick.min(length) as f32 / length as f32)
                    };
                    let painter = ui.painter();
                    painter.rect_filled(rect, 3.0, egui::Color32::from_white_alpha(40));
                    let played = egui::Rect::from_min_max(rect.min, egui::pos2(x(now), rect.max.y));
                    painter.rect_filled(played, 3.0, egui::Color32::from_white_alpha(110));
                    for k in &index.keyframes {
                        let at = x(k.saturating_sub(index.first));
                        painter.circle_filled(
                            egui::pos2(at, rect.bottom() + 3.0),
                            1.5,
                            egui::Color32::from_white_alpha(120),
                        );
                    }
                    if let Some(Ok(kills)) = demo.kills.get() {
                        for kill in kills {
                            let at = x(kill.tick.saturating_sub(index.first));
                            painter.line_segment(
                                [
                                    egui::pos2(at, rect.top() - 3.0),
                                    egui::pos2(at, rect.bottom()),
                                ],
                                egui::Stroke::new(2.0, egui::Color32::from_rgb(230, 70, 60)),
                            );
                        }
                    }
                    painter.line_segment(
                        [
                            egui::pos2(x(now), rect.top() - 4.0),
                            egui::pos2(x(now), rect.bottom() + 4.0),
                        ],
                        egui::Stroke::new(2.0, egui::Color32::WHITE),
                    );
                    if let Some(pos) = response
                        .interact_pointer_pos()
                        .filter(|_| response.clicked())
                    {
                        let share = ((pos.x - rect.left()) / rect.width()).clamp(0.0, 1.0);
                        let tick = (share * length as f32) as u32;
                        requests.write(SessionRequest::Seek(index.first.saturating_add(tick)));
                    }
                    let state = if control.paused() {
                        "paused".to_string()
                    } else {
                        format!("{}x", control.speed())
                    };
                    let kills = match demo.kills.get() {
                        Some(Ok(kills)) => format!("{} kills", kills.len()),
                        Some(Err(_)) => "kills unknown".into(),
                        None => "finding the kills".into(),
                    };
                    ui.horizontal(|ui| {
                        ui.label(text(format!(
                            "{} / {}  ·  tick {now}  ·  {state}  ·  {kills}",
                            clock(now, hz),
                            clock(length, hz)
                        )));
                        if ui_state.open {
                            let pause = if control.paused() { "play" } else { "pause" };
                            if ui.button(pause).clicked() {
                                control.set_paused(!control.paused());
                            }
                            for speed in SPEEDS {
                                if ui
                                    .selectable_label(
                                        control.speed() == speed,
                                        text(format!("{speed}x")),
                                    )
                                    .clicked()
                                {
                                    control.set_speed(speed);
                                }
                            }
                        } else {
                            ui.label(text("  ·  demoui: controls".into()));
                        }
                    });
                });
        });
    Ok(())
}

/// Text light enough to read on the timeline's dark ground.
fn text(s: String) -> egui::RichText {
    egui::RichText::new(s).color(egui::Color32::from_white_alpha(230))
}

/// `ticks` at `hz` as minutes and seconds.
fn clock(ticks: u32, hz: u32) -> String {
    let seconds = ticks / hz.max(1);
    format!("{}:{:02}", seconds / 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_is_asked_for_outright_or_from_where_the_demo_is() {
        assert_eq!(goto_tick("640", 100), Some(640));
        assert_eq!(goto_tick("+640", 100), Some(740));
        assert_eq!(goto_tick("-640", 100), Some(0), "not before the start");
        assert_eq!(goto_tick("soon", 100), None);
        assert_eq!(goto_tick("+", 100), None);
        assert_eq!(clock(128 * 75, 128), "1:15");
    }
}
