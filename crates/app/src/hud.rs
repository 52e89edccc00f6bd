//! The heads-up display: crosshair, connection state, scoreboard, health and weapon,
//! kill feed, match state, hit marker and damage direction.

use crate::input::{Action, Controls, MouseLook};
use crate::session::{AppState, describe};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{
    CombatCue, ConnectionStatus, InputHistory, InputPacing, KillFeed, LatestSnapshot, MatchInfo,
    Roster,
};
use sightline_console::Console;
use sightline_movement::PlayerState;
use sightline_prediction::Predicted;
use sightline_sim::{PlayerId, SessionAppExt};

/// Short-lived combat feedback: the hit marker and the damage indicator.
#[derive(Resource, Debug, Default)]
struct Feedback {
    /// Until when (real seconds) the hit marker shows, whether it was a head hit, and the
    /// damage done.
    hit: Option<(f64, bool, u16)>,
    /// Until when the damage indicator shows, and where the attacker stood.
    hurt: Option<(f64, Vec3)>,
}

/// Draws the HUD while playing.
pub struct HudPlugin;

impl Plugin for HudPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Feedback>()
            .add_systems(Update, take_feedback)
            .add_systems(
                EguiPrimaryContextPass,
                (draw_hud, draw_combat_hud).run_if(in_state(AppState::Playing)),
            );
    }
}

fn draw_hud(
    mut contexts: EguiContexts,
    status: Res<ConnectionStatus>,
    pacing: Res<InputPacing>,
    history: Res<InputHistory>,
    roster: Res<Roster>,
    actions: Single<&ActionState<Action>, With<Controls>>,
    match_info: Res<MatchInfo>,
    look: Res<MouseLook>,
    console: Res<Console>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("hud"),
    ));
    let center = ctx.content_rect().center();
    // Crosshair: four short strokes around the centre with a gap, white on a dark outline.
    for (color, width) in [
        (egui::Color32::from_black_alpha(160), 4.0),
        (egui::Color32::WHITE, 2.0),
    ] {
        for dir in [
            egui::vec2(1.0, 0.0),
            egui::vec2(-1.0, 0.0),
            egui::vec2(0.0, 1.0),
            egui::vec2(0.0, -1.0),
        ] {
            painter.line_segment(
                [center + dir * 4.0, center + dir * 11.0],
                egui::Stroke::new(width, color),
            );
        }
    }
    let banner = match &*status {
        ConnectionStatus::Connected(_) if pacing.holds_input(history.last_seq()) => {
            Some("synchronizing with the server...".to_string())
        }
        ConnectionStatus::Connected(_) => None,
        other => Some(describe(other)),
    };
    if let Some(text) = banner {
        painter.text(
            center + egui::vec2(0.0, -120.0),
            egui::Align2::CENTER_CENTER,
            text,
            egui::FontId::proportional(22.0),
            egui::Color32::from_rgb(255, 230, 160),
        );
    }
    if !look.0 && !console.open && status.is_connected() {
        painter.text(
            center + egui::vec2(0.0, 60.0),
            egui::Align2::CENTER_CENTER,
            "click to play  ·  Esc frees the mouse  ·  ` opens the console",
            egui::FontId::proportional(16.0),
            egui::Color32::from_white_alpha(200),
        );
    }
    // The scoreboard on its key, and by itself between matches.
    if actions.pressed(&Action::Scores) || match_info.intermission {
        egui::Window::new("Players")
            .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                egui::Grid::new("scores")
                    .striped(true)
                    .min_col_width(80.0)
                    .show(ui, |ui| {
                        for heading in ["name", "frags", "deaths", "lifetime K/D", "ping"] {
                            ui.strong(heading);
                        }
                        ui.end_row();
                        let mut rows: Vec<_> = roster.0.values().collect();
                        rows.sort_by_key(|p| std::cmp::Reverse(p.frags));
                        for p in rows {
                            ui.label(&p.name);
                            ui.label(p.frags.to_string());
                            ui.label(p.deaths.to_string());
                            ui.label(p.lifetime.map_or("-".to_string(), kill_death_ratio));
                            ui.label(match (p.bot, p.ping_ms) {
                                (true, _) => "BOT".to_string(),
                                (false, Some(ms)) => format!("{ms} ms"),
                                (false, None) => "-".to_string(),
                            });
                            ui.end_row();
                        }
                    });
            });
    }
    Ok(())
}

/// Kills per death as a scoreboard shows it (kills alone before the first death).
fn kill_death_ratio(lifetime: sightline_protocol::Lifetime) -> String {
    match lifetime.deaths {
        0 => format!("{}", lifetime.kills),
        deaths => format!("{:.2}", f64::from(lifetime.kills) / f64::from(deaths)),
    }
}

/// Turns combat cues into the hit marker and the damage indicator.
fn take_feedback(
    time: Res<Time<Real>>,
    mut cues: MessageReader<CombatCue>,
    mut feedback: ResMut<Feedback>,
) {
    let now = time.elapsed_secs_f64();
    for cue in cues.read() {
        match *cue {
            CombatCue::HitConfirmed { head, damage } => {
                feedback.hit = Some((now + 0.5, head, damage));
            }
            CombatCue::Hurt { from } => feedback.hurt = Some((now + 0.8, from)),
            _ => {}
        }
    }
}

/// Health, armour, weapon and ammunition; the kill feed; hit marker and damage direction.
fn draw_combat_hud(
    mut contexts: EguiContexts,
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    local: Query<(&PlayerId, &PlayerState), With<Predicted>>,
    input: Res<sightline_client::LocalInput>,
    kills: Res<KillFeed>,
    feedback: Res<Feedback>,
    match_info: Res<MatchInfo>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("combat"),
    ));
    let now = time.elapsed_secs_f64();
    let Ok((id, state)) = local.single() else {
        return Ok(());
    };
    if let Some(me) = latest
        .0
        .as_ref()
        .and_then(|s| s.players.iter().find(|p| p.id == *id))
    {
        let weapon = me.weapon.def().name;
        let (text, color) = if me.health == 0 {
            (
                "dead: respawning...".to_string(),
                egui::Color32::from_rgb(255, 90, 80),
            )
        } else {
            (
                format!(
                    "health {}   armour {}      {weapon} {}",
                    me.health, me.armor, me.ammo
                ),
                egui::Color32::WHITE,
            )
        };
        backed_text(
            &painter,
            egui::pos2(screen.left() + 16.0, screen.bottom() - 16.0),
            egui::Align2::LEFT_BOTTOM,
            text,
            22.0,
            color,
        );
    }
    for (i, k) in kills.0.iter().rev().take(5).enumerate() {
        let weapon = k.weapon.def().name;
        backed_text(
            &painter,
            egui::pos2(screen.right() - 12.0, screen.top() + 12.0 + i as f32 * 24.0),
            egui::Align2::RIGHT_TOP,
            format!("{} [{weapon}] {}", k.killer, k.victim),
            15.0,
            egui::Color32::WHITE,
        );
    }
    let center = screen.center();
    let mut status = String::new();
    if match_info.team_game {
        status.push_str("team deathmatch");
    } else {
        status.push_str("deathmatch");
    }
    if match_info.fraglimit > 0 {
        status.push_str(&format!("  ·  to {} frags", match_info.fraglimit));
    }
    if match_info.time_left_s > 0 {
        let t = match_info.time_left_s;
        status.push_str(&format!("  ·  {}:{:02}", t / 60, t % 60));
    }
    backed_text(
        &painter,
        egui::pos2(center.x, screen.top() + 10.0),
        egui::Align2::CENTER_TOP,
        status,
        16.0,
        egui::Color32::WHITE,
    );
    if match_info.intermission {
        let text = match_info
            .winner
            .clone()
            .unwrap_or_else(|| "match over".into());
        painter.text(
            center + egui::vec2(0.0, -60.0),
            egui::Align2::CENTER_CENTER,
            format!("{text}  —  next match shortly"),
            egui::FontId::proportional(28.0),
            egui::Color32::from_rgb(255, 220, 120),
        );
    }
    if let Some((until, head, damage)) = feedback.hit
        && now < until
    {
        painter.text(
            center + egui::vec2(18.0, -22.0),
            egui::Align2::LEFT_BOTTOM,
            damage.to_string(),
            egui::FontId::proportional(18.0),
            if head {
                egui::Color32::from_rgb(255, 80, 80)
            } else {
                egui::Color32::from_rgb(255, 230, 120)
            },
        );
        let color = if head {
            egui::Color32::from_rgb(255, 60, 60)
        } else {
            egui::Color32::WHITE
        };
        for (dx, dy) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            let d = egui::vec2(dx, dy);
            painter.line_segment(
                [center + d * 6.0, center + d * 13.0],
                egui::Stroke::new(2.0, color),
            );
        }
    }
    if let Some((until, from)) = feedback.hurt
        && now < until
    {
        // Where the attacker stands relative to where we look: up is ahead.
        let to = from - state.pos;
        let angle = f32::atan2(-to.x, -to.z) - input.yaw;
        let dir = egui::vec2(-angle.sin(), -angle.cos());
        let at = center + dir * 120.0;
        painter.circle_filled(
            at,
            10.0,
            egui::Color32::from_rgba_unmultiplied(255, 40, 40, 180),
        );
    }
    Ok(())
}

/// Text on a dark rounded backdrop, readable against any sky or wall.
fn backed_text(
    painter: &egui::Painter,
    at: egui::Pos2,
    align: egui::Align2,
    text: String,
    size: f32,
    color: egui::Color32,
) {
    let galley = painter.layout_no_wrap(text, egui::FontId::proportional(size), color);
    let rect = align.anchor_size(at, galley.size());
    painter.rect_filled(rect.expand(4.0), 4.0, egui::Color32::from_black_alpha(140));
    painter.galley(rect.min, galley, color);
}
