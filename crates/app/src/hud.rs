//! The heads-up display: crosshair, connection state, scoreboard, chat.

use crate::input::{Action, Controls, MouseLook};
use crate::session::{AppState, describe};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{
    ChatLog, CombatFeed, ConnectionStatus, InputPacing, KillFeed, LatestSnapshot, MatchInfo, Roster,
};
use sightline_combat::WeaponKind;
use sightline_console::Console;
use sightline_movement::PlayerState;
use sightline_net::RenetClient;
use sightline_prediction::Predicted;
use sightline_protocol::{Channel, ClientMessage, MAX_CHAT_LEN, ServerMessage};
use sightline_sim::PlayerId;

/// The chat line being typed, while the chat box is open.
#[derive(Resource, Debug, Default)]
pub struct ChatInput(pub Option<String>);

/// Effects the renderer should draw: explosions and other players' shots.
#[derive(Resource, Debug, Default)]
pub struct PendingEffects(pub Vec<ServerMessage>);

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
        app.init_resource::<ChatInput>()
            .init_resource::<Feedback>()
            .init_resource::<PendingEffects>()
            .add_systems(
                Update,
                (open_chat, take_combat_messages).run_if(in_state(AppState::Playing)),
            )
            .add_systems(
                EguiPrimaryContextPass,
                (draw_hud, draw_combat_hud, draw_chat).run_if(in_state(AppState::Playing)),
            );
    }
}

fn open_chat(
    actions: Single<&ActionState<Action>, With<Controls>>,
    console: Res<Console>,
    mut chat: ResMut<ChatInput>,
) {
    if actions.just_pressed(&Action::Chat) && !console.open && chat.0.is_none() {
        chat.0 = Some(String::new());
    }
}

fn draw_hud(
    mut contexts: EguiContexts,
    status: Res<ConnectionStatus>,
    pacing: Res<InputPacing>,
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
        ConnectionStatus::Connected(_) if !pacing.settled() => {
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
                        ui.strong("name");
                        ui.strong("ping");
                        ui.end_row();
                        for p in roster.0.values() {
                            ui.label(&p.name);
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

fn draw_chat(
    mut contexts: EguiContexts,
    mut chat: ResMut<ChatInput>,
    log: Res<ChatLog>,
    client: Option<ResMut<RenetClient>>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    egui::Area::new(egui::Id::new("chat"))
        .anchor(egui::Align2::LEFT_BOTTOM, [12.0, -12.0])
        .show(ctx, |ui| {
            for (name, text) in log.0.iter().rev().take(6).rev() {
                ui.label(
                    egui::RichText::new(format!("{name}: {text}"))
                        .color(egui::Color32::WHITE)
                        .background_color(egui::Color32::from_black_alpha(120)),
                );
            }
            let Some(line) = chat.0.as_mut() else {
                return;
            };
            let edit = ui.add(
                egui::TextEdit::singleline(line)
                    .char_limit(MAX_CHAT_LEN)
                    .desired_width(360.0)
                    .hint_text("say (Enter sends, Esc cancels)"),
            );
            edit.request_focus();
            let (enter, escape) = ui.input(|i| {
                (
                    i.key_pressed(egui::Key::Enter),
                    i.key_pressed(egui::Key::Escape),
                )
            });
            if escape {
                chat.0 = None;
            } else if enter {
                let text = chat.0.take().unwrap_or_default();
                if let Some(mut client) = client
                    && !text.trim().is_empty()
                {
                    // Long lines are cut here: the server refuses (and counts) oversized chat.
                    let text =
                        sightline_protocol::clean_text(&text, sightline_protocol::MAX_CHAT_LEN);
                    sightline_client::send_to_server(
                        &mut client,
                        Channel::Reliable,
                        &ClientMessage::Chat { text },
                    );
                }
            }
        });
    Ok(())
}

/// Turns the server's combat messages into hit markers and damage indicators.
fn take_combat_messages(
    time: Res<Time<Real>>,
    mut feed: ResMut<CombatFeed>,
    mut feedback: ResMut<Feedback>,
    mut effects: ResMut<PendingEffects>,
    mut sounds: ResMut<crate::sound::PendingSounds>,
) {
    use crate::sound::Cue;
    let now = time.elapsed_secs_f64();
    for msg in feed.0.drain(..) {
        match msg {
            ServerMessage::HitConfirm { head, damage, .. } => {
                feedback.hit = Some((now + 0.5, head, damage));
                sounds.0.push(Cue::Hit);
            }
            ServerMessage::Damaged { from, .. } => {
                feedback.hurt = Some((now + 0.8, Vec3::from_array(from)))
            }
            ServerMessage::Fired { weapon, origin, .. } => {
                if let Some(w) = WeaponKind::ALL.get(weapon as usize) {
                    sounds.0.push(Cue::Shot(*w, Vec3::from_array(origin)));
                }
                effects.0.push(msg);
            }
            ServerMessage::Exploded { at } => {
                sounds.0.push(Cue::Explosion(Vec3::from_array(at)));
                effects.0.push(msg);
            }
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
        let weapon = WeaponKind::ALL
            .get(me.weapon as usize)
            .map_or("?", |w| w.def().name);
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
        let weapon = WeaponKind::ALL
            .get(k.weapon as usize)
            .map_or("?", |w| w.def().name);
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
