//! The heads-up display: crosshair (`crosshair_style`, `crosshair_size`,
//! `crosshair_color`), connection state, scoreboard, health and weapon, kill feed, match
//! state, hit marker and a shot's verdict when the server judged it late or refused it
//! (where damage came from is the vignette's). The settings page draws its crosshair preview
//! with the same [`draw_crosshair`].

use crate::controls::input::{Action, Controls, MouseLook};
use crate::controls::overlays::{GameMenu, SettingsPage};
use crate::cvars::cvar;
use crate::session::{AppState, describe};
use crate::spectator::{SpectatorView, ViewMode};
use crate::view::deathcam::DeathView;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{
    CombatCue, ConnectionStatus, InputHistory, InputPacing, KillFeed, LatestSnapshot, MatchInfo,
    Roster, VoteInfo, Watching,
};
use sightline_combat::Team;
use sightline_console::{Console, Cvars};
use sightline_prediction::Predicted;
use sightline_protocol::{FlagSpot, KIT_QUAD, KIT_REGEN};
use sightline_sim::{PlayerId, SessionAppExt};

/// Short-lived combat feedback: the hit marker and the damage indicator.
#[derive(Resource, Debug, Default)]
struct Feedback {
    /// Until when (real seconds) the hit marker shows, whether it was a head hit, the
    /// damage done, and whether to a team mate (friendly fire).
    hit: Option<(f64, bool, u16, bool)>,
    /// Until when our last shot's verdict shows, if the server judged it late (how late,
    /// ms) or refused it (`None`).
    verdict: Option<(f64, Option<u16>)>,
}

/// Draws the HUD while playing.
pub struct HudPlugin;

impl Plugin for HudPlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Feedback>()
            .init_resource::<CrosshairLook>()
            .add_systems(Update, (take_feedback, read_crosshair_cvars))
            .add_systems(
                EguiPrimaryContextPass,
                (draw_hud, draw_combat_hud, draw_vote).run_if(in_state(AppState::Playing)),
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
    crosshair: Res<CrosshairLook>,
    death: Res<DeathView>,
    menu: Res<GameMenu>,
    settings: Res<SettingsPage>,
    (watching, spectator, demo_ui): (
        Option<Res<Watching>>,
        Res<SpectatorView>,
        Res<crate::playback::DemoUi>,
    ),
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("hud"),
    ));
    let center = ctx.content_rect().center();
    // The HUD's layer is above windows: nothing of it in the middle while a menu is there.
    let menus = menu.open || settings.open;
    // No crosshair over the death camera either, nor watching but through a player's
    // eyes: there is nothing to aim.
    let aimed = watching.is_none() || spectator.mode == ViewMode::FirstPerson;
    if !death.active() && !menus && aimed {
        draw_crosshair(&painter, center, &crosshair);
    }
    let banner = match &*status {
        // A spectator sends no input, so there is none to hold.
        ConnectionStatus::Connected(_)
            if watching.is_none() && pacing.holds_input(history.last_seq()) =>
        {
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
    if !look.0 && !console.open && !menus && status.is_connected() {
        painter.text(
            center + egui::vec2(0.0, 60.0),
            egui::Align2::CENTER_CENTER,
            match watching {
                None => "click to play  ·  Esc opens the menu  ·  ` opens the console",
                // The demo's controls have the mouse until `demoui` gives it back.
                Some(_) if demo_ui.open => "demoui gives the mouse back to the camera",
                Some(_) => "click to watch  ·  Esc opens the menu  ·  ` opens the console",
            },
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
                        // Captures first where they win the match.
                        let ctf = match_info.ctf;
                        let headings = ["name", "captures", "frags", "deaths", "lifetime K/D"];
                        for heading in headings.into_iter().filter(|h| ctf || *h != "captures") {
                            ui.strong(heading);
                        }
                        ui.strong("ping");
                        ui.end_row();
                        let mut rows: Vec<_> = roster.0.values().collect();
                        rows.sort_by_key(|p| {
                            std::cmp::Reverse((ctf.then_some(p.captures), p.frags))
                        });
                        for p in rows {
                            ui.label(&p.name);
                            if ctf {
                                ui.label(p.captures.to_string());
                            }
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

/// Turns combat cues into the hit marker (where damage came from is the vignette's).
fn take_feedback(
    time: Res<Time<Real>>,
    mut cues: MessageReader<CombatCue>,
    mut feedback: ResMut<Feedback>,
    roster: Option<Res<Roster>>,
    local: Query<&PlayerId, With<Predicted>>,
) {
    let now = time.elapsed_secs_f64();
    let team_of = |id: PlayerId| roster.as_ref().and_then(|r| r.0.get(&id)?.team);
    let own_team = local.single().ok().and_then(|id| team_of(*id));
    for cue in cues.read() {
        match *cue {
            CombatCue::HitConfirmed {
                target,
                head,
                damage,
            } => {
                let mate = own_team.is_some() && team_of(target) == own_team;
                feedback.hit = Some((now + 0.5, head, damage, mate));
            }
            CombatCue::ShotLate { excess_ms } => {
                feedback.verdict = Some((now + 1.0, Some(excess_ms)));
            }
            CombatCue::ShotRefused => feedback.verdict = Some((now + 1.0, None)),
            _ => {}
        }
    }
}

/// Health, armour, weapon and ammunition; the kill feed; the hit marker.
/// The awards of the match just ended, and how it went for this player, low on the
/// screen, below the scoreboard that the intermission shows.
fn draw_awards(
    painter: &egui::Painter,
    screen: egui::Rect,
    match_info: &MatchInfo,
    lifetime: Option<sightline_protocol::Lifetime>,
) {
    // Where the server keeps statistics: the lifetime record and this match's part in it.
    let record = lifetime.and_then(|now| {
        let (kills, deaths) = match_info.lifetime_change(now)?;
        Some(format!(
            "lifetime {} kills, {} deaths (K/D {}): {kills:+} and {deaths:+} this match",
            now.kills,
            now.deaths,
            kill_death_ratio(now)
        ))
    });
    let lines = match_info.awards.len() as f32
        + f32::from(u8::from(match_info.report.is_some()))
        + f32::from(u8::from(record.is_some()));
    let center = egui::pos2(screen.center().x, screen.bottom() - 90.0 - 26.0 * lines);
    let mut y = 0.0;
    for (title, name, what) in &match_info.awards {
        backed_text(
            painter,
            center + egui::vec2(0.0, y),
            egui::Align2::CENTER_TOP,
            format!("{title}: {name}  ({what})"),
            18.0,
            egui::Color32::WHITE,
        );
        y += 26.0;
    }
    let Some(report) = &match_info.report else {
        return;
    };
    let weapons: Vec<String> = report
        .weapons
        .iter()
        .map(|(weapon, shots, hits)| {
            let pct = u32::from(*hits) * 100 / u32::from((*shots).max(1));
            format!("{} {hits}/{shots} ({pct}%)", weapon.def().name)
        })
        .collect();
    backed_text(
        painter,
        center + egui::vec2(0.0, y + 10.0),
        egui::Align2::CENTER_TOP,
        format!(
            "You: {} damage, best streak {}   {}",
            report.damage,
            report.best_streak,
            weapons.join("   ")
        ),
        15.0,
        egui::Color32::from_rgb(200, 220, 255),
    );
    if let Some(record) = record {
        backed_text(
            painter,
            center + egui::vec2(0.0, y + 36.0),
            egui::Align2::CENTER_TOP,
            record,
            15.0,
            egui::Color32::from_rgb(200, 220, 255),
        );
    }
}

/// The vote running, under the match's line: the question, the tally and the time left,
/// with the keys that vote.
fn draw_vote(mut contexts: EguiContexts, vote: Res<VoteInfo>, time: Res<Time<Real>>) -> Result {
    let Some(tally) = &vote.tally else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("vote"),
    ));
    let left = vote.seconds_left(time.elapsed_secs_f64()).ceil();
    backed_text(
        &painter,
        egui::pos2(screen.center().x, screen.top() + 36.0),
        egui::Align2::CENTER_TOP,
        format!(
            "VOTE: {}   yes {}  no {}  of {}   {left:.0} s   (F1 yes, F2 no)",
            tally.question, tally.yes, tally.no, tally.voters
        ),
        16.0,
        egui::Color32::from_rgb(255, 220, 120),
    );
    Ok(())
}

/// A flag's state in words, for the HUD's flags line.
fn flag_status(team: Team, spot: FlagSpot, me: Option<PlayerId>, roster: &Roster) -> String {
    let flag = team.name().to_uppercase();
    match spot {
        FlagSpot::Home => format!("{flag} FLAG: home"),
        FlagSpot::Carried(by) if Some(by) == me => format!("{flag} FLAG: yours"),
        FlagSpot::Carried(by) => format!("{flag} FLAG: taken by {}", roster.name(by)),
        FlagSpot::Dropped(_) => format!("{flag} FLAG: dropped"),
    }
}

fn draw_combat_hud(
    mut contexts: EguiContexts,
    time: Res<Time<Real>>,
    latest: Res<LatestSnapshot>,
    local: Query<&PlayerId, With<Predicted>>,
    kills: Res<KillFeed>,
    feedback: Res<Feedback>,
    match_info: Res<MatchInfo>,
    roster: Res<Roster>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::new("combat"),
    ));
    let now = time.elapsed_secs_f64();
    // One's own state for a player; the rest (the kill feed, the match, its end) for
    // spectators and a demo's viewers too.
    let own_id = local.single().ok().copied();
    let own = own_id.and_then(|id| {
        let latest = latest.0.as_ref()?;
        latest.players.iter().find(|p| p.id == id)
    });
    if let Some(me) = own {
        let weapon = me.weapon.def().name;
        let powers = [(KIT_QUAD, "   QUAD DAMAGE"), (KIT_REGEN, "   REGENERATION")]
            .into_iter()
            .filter(|(bit, _)| me.kit & bit != 0)
            .map(|(_, name)| name)
            .collect::<String>();
        // Dead, the death camera says who killed us instead.
        if me.health > 0 {
            backed_text(
                &painter,
                egui::pos2(screen.left() + 16.0, screen.bottom() - 16.0),
                egui::Align2::LEFT_BOTTOM,
                format!(
                    "health {}   armour {}      {weapon} {}{powers}",
                    me.health, me.armor, me.ammo
                ),
                22.0,
                egui::Color32::WHITE,
            );
        }
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
    if match_info.ctf {
        status.push_str("capture the flag");
        let team_captures = |t: Team| -> u32 {
            roster
                .0
                .values()
                .filter(|p| p.team == Some(t))
                .map(|p| u32::from(p.captures))
                .sum()
        };
        status.push_str(&format!(
            "  ·  Red {} : {} Blue",
            team_captures(Team::Red),
            team_captures(Team::Blue)
        ));
        if match_info.capturelimit > 0 {
            status.push_str(&format!("  ·  to {} captures", match_info.capturelimit));
        }
    } else if match_info.team_game {
        status.push_str("team deathmatch");
    } else {
        status.push_str("deathmatch");
    }
    if match_info.fraglimit > 0 && !match_info.ctf {
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
    if let Some(flags) = latest.0.as_ref().and_then(|l| l.flags) {
        for (i, team) in Team::ALL.into_iter().enumerate() {
            let (r, g, b) = match team {
                Team::Red => (255, 110, 100),
                Team::Blue => (120, 170, 255),
            };
            backed_text(
                &painter,
                egui::pos2(center.x + (i as f32 - 0.5) * 260.0, screen.top() + 62.0),
                egui::Align2::CENTER_TOP,
                flag_status(team, flags[team.index()], own_id, &roster),
                15.0,
                egui::Color32::from_rgb(r, g, b),
            );
        }
        let carrying = own_id.is_some_and(|me| flags.contains(&FlagSpot::Carried(me)));
        if carrying {
            painter.text(
                center + egui::vec2(0.0, 120.0),
                egui::Align2::CENTER_CENTER,
                "YOU HAVE THE FLAG  ·  take it to your base",
                egui::FontId::proportional(22.0),
                egui::Color32::from_rgb(255, 220, 120),
            );
        }
    }
    if let Some(warmup) = match_info.warmup {
        let line = if warmup.countdown {
            format!("The match starts in {}", warmup.seconds_left)
        } else if warmup.needed > 0 {
            format!(
                "WARMUP  ·  {} of {} ready (F3)  ·  starts in {} s at the latest",
                warmup.ready, warmup.needed, warmup.seconds_left
            )
        } else {
            format!("WARMUP  ·  the match starts in {} s", warmup.seconds_left)
        };
        painter.text(
            center + egui::vec2(0.0, -90.0),
            egui::Align2::CENTER_CENTER,
            line,
            egui::FontId::proportional(24.0),
            egui::Color32::from_rgb(255, 220, 120),
        );
    }
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
        let lifetime = own_id.and_then(|id| roster.0.get(&id)?.lifetime);
        draw_awards(&painter, screen, &match_info, lifetime);
    }
    if let Some((until, head, damage, mate)) = feedback.hit
        && now < until
    {
        // Damage to a team mate (where the host allows friendly fire) is told apart.
        let team = egui::Color32::from_rgb(90, 200, 255);
        painter.text(
            center + egui::vec2(18.0, -22.0),
            egui::Align2::LEFT_BOTTOM,
            if mate {
                format!("TEAM {damage}")
            } else {
                damage.to_string()
            },
            egui::FontId::proportional(18.0),
            match (mate, head) {
                (true, _) => team,
                (false, true) => egui::Color32::from_rgb(255, 80, 80),
                (false, false) => egui::Color32::from_rgb(255, 230, 120),
            },
        );
        let color = match (mate, head) {
            (true, _) => team,
            (false, true) => egui::Color32::from_rgb(255, 60, 60),
            (false, false) => egui::Color32::WHITE,
        };
        for (dx, dy) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            let d = egui::vec2(dx, dy);
            painter.line_segment(
                [center + d * 6.0, center + d * 13.0],
                egui::Stroke::new(2.0, color),
            );
        }
    }
    // A shot judged late or refused is told apart from a hit or a miss: under the
    // crosshair, amber with how far to lead, or grey.
    if let Some((until, verdict)) = feedback.verdict
        && now < until
    {
        let (text, color) = match verdict {
            Some(ms) => (
                format!("late: lead by {ms} ms"),
                egui::Color32::from_rgb(255, 190, 60),
            ),
            None => (
                "shot refused".to_string(),
                egui::Color32::from_rgb(170, 170, 170),
            ),
        };
        painter.text(
            center + egui::vec2(0.0, 28.0),
            egui::Align2::CENTER_TOP,
            text,
            egui::FontId::proportional(14.0),
            color,
        );
    }
    Ok(())
}

/// How the crosshair looks, from its cvars.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct CrosshairLook {
    /// `crosshair_style`: 0 none, 1 cross, 2 cross and dot, 3 dot, 4 circle.
    pub style: i64,
    /// `crosshair_size`: from the centre to the strokes' outer ends, pixels.
    pub size: f32,
    /// `crosshair_color`, red, green, blue and alpha, not premultiplied (as written, so
    /// the settings' colour picker gives back exactly what it was given).
    pub color: [u8; 4],
}

impl Default for CrosshairLook {
    fn default() -> Self {
        Self {
            style: 1,
            size: 12.0,
            color: [255; 4],
        }
    }
}

impl CrosshairLook {
    /// The look the cvars ask for; a colour that does not parse is white (the `Err` says
    /// why, for the console).
    pub(crate) fn from_cvars(cvars: &Cvars) -> (Self, Result<(), String>) {
        let text = cvars.read(cvar::CROSSHAIR_COLOR);
        let (color, error) = match parse_color(&text) {
            Some(c) => (c, Ok(())),
            None => (
                [255; 4],
                Err(format!(
                    "crosshair_color: \"{text}\" is not #RRGGBB or #RRGGBBAA; drawing it white"
                )),
            ),
        };
        let look = Self {
            style: cvars.read(cvar::CROSSHAIR_STYLE),
            size: cvars.read(cvar::CROSSHAIR_SIZE) as f32,
            color,
        };
        (look, error)
    }
}

/// Follows the crosshair cvars; says once in the console when the colour is not one.
fn read_crosshair_cvars(
    cvars: Res<Cvars>,
    mut look: ResMut<CrosshairLook>,
    mut console: ResMut<Console>,
    mut warned: Local<Option<String>>,
) {
    if !cvars.is_changed() {
        return;
    }
    let (new, error) = CrosshairLook::from_cvars(&cvars);
    look.set_if_neq(new);
    match error {
        Err(e) if warned.as_deref() != Some(e.as_str()) => {
            console.print(format!("error: {e}"));
            *warned = Some(e);
        }
        Err(_) => {}
        Ok(()) => *warned = None,
    }
}

/// Parses `#RRGGBB` or `#RRGGBBAA` (the `#` may be left out), hexadecimal.
pub(crate) fn parse_color(text: &str) -> Option<[u8; 4]> {
    let hex = text.trim().trim_start_matches('#');
    if !matches!(hex.len(), 6 | 8) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    let alpha = if hex.len() == 8 { byte(6)? } else { 255 };
    Some([byte(0)?, byte(2)?, byte(4)?, alpha])
}

/// Writes a colour as `crosshair_color` holds it: `#RRGGBB`, or `#RRGGBBAA` when not opaque.
pub(crate) fn format_color([r, g, b, a]: [u8; 4]) -> String {
    if a == 255 {
        format!("#{r:02x}{g:02x}{b:02x}")
    } else {
        format!("#{r:02x}{g:02x}{b:02x}{a:02x}")
    }
}

/// A crosshair's shape around its centre, in pixels: line segments, a dot's radius and a
/// ring's radius.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CrosshairShape {
    /// Strokes, each from one offset to another.
    pub lines: Vec<[egui::Vec2; 2]>,
    /// A filled dot in the middle.
    pub dot: Option<f32>,
    /// A ring.
    pub ring: Option<f32>,
}

/// The shape of crosshair `style` at `size`: the cross's strokes run from a gap of a
/// third of the size out to the size; the dot grows slowly with the size.
pub(crate) fn crosshair_shape(style: i64, size: f32) -> CrosshairShape {
    let gap = (size / 3.0).max(2.0);
    let cross = || {
        [
            egui::vec2(1.0, 0.0),
            egui::vec2(-1.0, 0.0),
            egui::vec2(0.0, 1.0),
            egui::vec2(0.0, -1.0),
        ]
        .into_iter()
        .map(|d| [d * gap, d * size.max(gap + 1.0)])
        .collect()
    };
    let dot = (size / 8.0).clamp(1.5, 4.0);
    match style {
        1 => CrosshairShape {
            lines: cross(),
            dot: None,
            ring: None,
        },
        2 => CrosshairShape {
            lines: cross(),
            dot: Some(dot),
            ring: None,
        },
        3 => CrosshairShape {
            lines: Vec::new(),
            dot: Some(dot),
            ring: None,
        },
        4 => CrosshairShape {
            lines: Vec::new(),
            dot: Some(1.5),
            ring: Some(size),
        },
        _ => CrosshairShape {
            lines: Vec::new(),
            dot: None,
            ring: None,
        },
    }
}

/// Draws the crosshair at `center`, in its colour over a dark outline that keeps it
/// visible on bright walls.
pub(crate) fn draw_crosshair(painter: &egui::Painter, center: egui::Pos2, look: &CrosshairLook) {
    let shape = crosshair_shape(look.style, look.size);
    let [r, g, b, a] = look.color;
    let fill = egui::Color32::from_rgba_unmultiplied(r, g, b, a);
    let outline = egui::Color32::from_black_alpha(a.min(160));
    for (color, extra) in [(outline, 2.0), (fill, 0.0)] {
        for [from, to] in &shape.lines {
            painter.line_segment(
                [center + *from, center + *to],
                egui::Stroke::new(2.0 + extra, color),
            );
        }
        if let Some(r) = shape.ring {
            painter.circle_stroke(center, r, egui::Stroke::new(1.5 + extra, color));
        }
        if let Some(r) = shape.dot {
            painter.circle_filled(center, r + extra / 2.0, color);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_told_home_yours_taken_by_name_or_dropped() {
        let roster = Roster::default();
        let me = Some(PlayerId(3));
        let say = |spot| flag_status(Team::Blue, spot, me, &roster);
        assert_eq!(say(FlagSpot::Home), "BLUE FLAG: home");
        assert_eq!(say(FlagSpot::Carried(PlayerId(3))), "BLUE FLAG: yours");
        assert_eq!(say(FlagSpot::Carried(PlayerId(4))), "BLUE FLAG: taken by ?");
        assert_eq!(say(FlagSpot::Dropped([0.0; 3])), "BLUE FLAG: dropped");
    }

    #[test]
    fn colours_parse_with_or_without_alpha_and_write_back() {
        assert_eq!(parse_color("#00ff80"), Some([0, 255, 128, 255]));
        assert_eq!(parse_color(" FF000080"), Some([255, 0, 0, 128]));
        for bad in [
            "",
            "#fff",
            "#gg0000",
            "#00ff8",
            "#00ff80ff00",
            "green",
            "#+1ff00",
        ] {
            assert_eq!(parse_color(bad), None, "{bad}");
        }
        assert_eq!(format_color([0, 255, 128, 255]), "#00ff80");
        assert_eq!(format_color([255, 0, 0, 128]), "#ff000080");
        assert_eq!(
            parse_color(&format_color([12, 34, 56, 78])),
            Some([12, 34, 56, 78])
        );
    }

    #[test]
    fn the_crosshair_shapes_grow_with_their_size() {
        assert_eq!(crosshair_shape(0, 12.0), crosshair_shape(9, 12.0));
        assert!(crosshair_shape(0, 12.0).lines.is_empty());
        let cross = crosshair_shape(1, 12.0);
        assert_eq!(cross.lines.len(), 4);
        assert_eq!(cross.dot, None);
        // Each stroke runs outward from the gap to the size.
        for [from, to] in &cross.lines {
            assert_eq!(from.length(), 4.0);
            assert_eq!(to.length(), 12.0);
        }
        let big = crosshair_shape(2, 48.0);
        assert_eq!(big.lines[0][1].length(), 48.0);
        assert_eq!(big.dot, Some(4.0));
        // A tiny cross keeps a gap and strokes at least a pixel long.
        for [from, to] in crosshair_shape(1, 2.0).lines {
            assert!(to.length() > from.length());
        }
        let dot = crosshair_shape(3, 12.0);
        assert!(dot.lines.is_empty() && dot.dot == Some(1.5));
        assert_eq!(crosshair_shape(4, 20.0).ring, Some(20.0));
    }

    #[test]
    fn a_bad_colour_draws_white_and_says_why() {
        let mut cvars = Cvars::default();
        for d in cvar::client_cvars() {
            cvars.register(d);
        }
        let (look, ok) = CrosshairLook::from_cvars(&cvars);
        assert_eq!(look, CrosshairLook::default());
        assert!(ok.is_ok());
        cvars.set_handle(cvar::CROSSHAIR_COLOR, "#zz").unwrap();
        let (look, error) = CrosshairLook::from_cvars(&cvars);
        assert_eq!(look.color, [255; 4]);
        assert!(error.unwrap_err().contains("#zz"));
    }
}
