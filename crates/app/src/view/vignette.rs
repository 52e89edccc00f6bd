//! Feeling hurt: a red vignette that flashes with each loss of health and armour (more
//! for a bigger loss) and stays faintly while health is low, and a red arc around the
//! crosshair pointing to whoever hurt us, turning with the view as it fades; while a
//! power-up runs, a steady edge in its colour (blue for quad damage, red for
//! regeneration) says so.

use crate::MainCamera;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_client::{CombatCue, LatestSnapshot};
use sightline_prediction::Predicted;
use sightline_protocol::{KIT_QUAD, KIT_REGEN};
use sightline_sim::{PlayerId, SessionAppExt};

/// How long a hit's direction shows, seconds.
const ARC_SECONDS: f32 = 1.2;
/// Most arcs at once; the oldest goes.
const MAX_ARCS: usize = 8;
/// Health below which the vignette stays.
const LOW_HEALTH: u8 = 35;

/// What we felt lately.
#[derive(Resource, Debug, Default)]
struct Pain {
    /// The vignette's flash, 0 to 1, fading.
    flash: f32,
    /// Health and armour in the last snapshot seen, once we were alive.
    last: Option<(u8, u8)>,
    /// Health now (0 while dead or unknown).
    health: u8,
    /// Where hits came from, and how long ago, seconds.
    arcs: Vec<(Vec3, f32)>,
    /// Our power-ups running, as kit bits.
    power_ups: u8,
}

/// Draws the vignette and the hit directions.
pub struct VignettePlugin;

impl Plugin for VignettePlugin {
    fn build(&self, app: &mut App) {
        app.init_session_resource::<Pain>()
            .add_systems(
                Update,
                (feel_health_changes, note_hit_directions, fade_pain),
            )
            .add_systems(EguiPrimaryContextPass, draw_pain);
    }
}

/// The flash a loss of `lost` health and armour gives.
pub fn flash_for(lost: u32) -> f32 {
    (lost as f32 / 60.0).clamp(0.15, 0.8)
}

/// The vignette's strength (0 to 1) from the flash and the health: the flash, or a steady
/// tint while health is low, whichever is more.
pub fn vignette_intensity(flash: f32, health: u8) -> f32 {
    let low = if health > 0 && health < LOW_HEALTH {
        (LOW_HEALTH - health) as f32 / LOW_HEALTH as f32 * 0.45
    } else {
        0.0
    };
    flash.max(low).clamp(0.0, 1.0)
}

/// The edge colour (RGB and alpha) for our power-ups `kit`: quad damage's blue before
/// regeneration's red; none without either.
pub fn power_up_edge(kit: u8) -> Option<[u8; 4]> {
    if kit & KIT_QUAD != 0 {
        Some([40, 90, 255, 90])
    } else if kit & KIT_REGEN != 0 {
        Some([255, 60, 80, 70])
    } else {
        None
    }
}

/// The angle on screen (0 straight up, clockwise positive, radians) toward `from` for a
/// viewer at `me` looking along `forward`.
pub fn hit_angle(from: Vec3, me: Vec3, forward: Vec3) -> f32 {
    let ahead = Vec3::new(forward.x, 0.0, forward.z).normalize_or(Vec3::NEG_Z);
    let right = Vec3::new(-ahead.z, 0.0, ahead.x);
    let to = from - me;
    f32::atan2(to.dot(right), to.dot(ahead))
}

/// A loss of health or armour in the snapshots flashes the vignette.
fn feel_health_changes(
    latest: Res<LatestSnapshot>,
    me: Query<&PlayerId, With<Predicted>>,
    mut pain: ResMut<Pain>,
) {
    if !latest.is_changed() {
        return;
    }
    let Some(now) = me.single().ok().and_then(|id| {
        latest
            .0
            .as_ref()
            .and_then(|s| s.players.iter().find(|p| p.id == *id))
            .map(|p| (p.health, p.armor, p.kit))
    }) else {
        return;
    };
    pain.power_ups = now.2 & (KIT_QUAD | KIT_REGEN);
    let now = (now.0, now.1);
    pain.health = now.0;
    if let Some(before) = pain.last {
        let lost =
            (before.0.saturating_sub(now.0) as u32) + (before.1.saturating_sub(now.1) as u32);
        if lost > 0 && now.0 < before.0 {
            pain.flash = pain.flash.max(flash_for(lost));
        }
    }
    pain.last = if now.0 == 0 { None } else { Some(now) };
}

/// Each hurt notes where it came from.
fn note_hit_directions(mut cues: MessageReader<CombatCue>, mut pain: ResMut<Pain>) {
    for cue in cues.read() {
        if let CombatCue::Hurt { from } = *cue {
            if pain.arcs.len() >= MAX_ARCS {
                pain.arcs.remove(0);
            }
            pain.arcs.push((from, 0.0));
        }
    }
}

fn fade_pain(time: Res<Time>, mut pain: ResMut<Pain>) {
    let dt = time.delta_secs();
    pain.flash = (pain.flash - dt * 1.2).max(0.0);
    for arc in &mut pain.arcs {
        arc.1 += dt;
    }
    pain.arcs.retain(|a| a.1 < ARC_SECONDS);
}

/// The vignette as four bands from the screen's edges inward, red at the edge and clear
/// inside; then the arcs.
fn draw_pain(
    mut contexts: EguiContexts,
    pain: Res<Pain>,
    camera: Query<&GlobalTransform, With<MainCamera>>,
) -> Result {
    let intensity = vignette_intensity(pain.flash, pain.health);
    let edge = power_up_edge(pain.power_ups);
    if intensity <= 0.0 && pain.arcs.is_empty() && edge.is_none() {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Background,
        egui::Id::new("pain"),
    ));
    if let Some([r, g, b, a]) = edge {
        frame_edges(
            &painter,
            screen,
            egui::Color32::from_rgba_unmultiplied(r, g, b, a),
            egui::Color32::from_rgba_unmultiplied(r, g, b, 0),
        );
    }
    if intensity > 0.0 {
        frame_edges(
            &painter,
            screen,
            egui::Color32::from_rgba_unmultiplied(170, 0, 0, (intensity * 200.0) as u8),
            egui::Color32::from_rgba_unmultiplied(170, 0, 0, 0),
        );
    }

    let Ok(view) = camera.single() else {
        return Ok(());
    };
    let center = screen.center();
    let radius = screen.height() * 0.16;
    for &(from, age) in &pain.arcs {
        let angle = hit_angle(from, view.translation(), view.forward().into());
        let alpha = ((1.0 - age / ARC_SECONDS) * 220.0) as u8;
        let color = egui::Color32::from_rgba_unmultiplied(255, 40, 30, alpha);
        // An arc of 50 degrees about the crosshair, centred on the attacker.
        let points: Vec<egui::Pos2> = (0..=12)
            .map(|k| {
                let a = angle + (k as f32 / 12.0 - 0.5) * 50f32.to_radians();
                center + egui::vec2(a.sin(), -a.cos()) * radius
            })
            .collect();
        painter.add(egui::Shape::line(points, egui::Stroke::new(6.0, color)));
    }
    Ok(())
}

/// Four bands from the screen's edges inward, `edge` at the edge fading to `clear`.
fn frame_edges(
    painter: &egui::Painter,
    screen: egui::Rect,
    edge: egui::Color32,
    clear: egui::Color32,
) {
    let inset = screen.width().min(screen.height()) * 0.22;
    let inner = screen.shrink(inset);
    let outer = [
        screen.left_top(),
        screen.right_top(),
        screen.right_bottom(),
        screen.left_bottom(),
    ];
    let inner = [
        inner.left_top(),
        inner.right_top(),
        inner.right_bottom(),
        inner.left_bottom(),
    ];
    let mut mesh = egui::Mesh::default();
    for i in 0..4 {
        let j = (i + 1) % 4;
        let base = mesh.vertices.len() as u32;
        mesh.colored_vertex(outer[i], edge);
        mesh.colored_vertex(outer[j], edge);
        mesh.colored_vertex(inner[j], clear);
        mesh.colored_vertex(inner[i], clear);
        mesh.add_triangle(base, base + 1, base + 2);
        mesh.add_triangle(base, base + 2, base + 3);
    }
    painter.add(egui::Shape::mesh(mesh));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vignette_follows_damage_and_low_health() {
        assert_eq!(vignette_intensity(0.0, 100), 0.0);
        assert_eq!(vignette_intensity(0.0, 0), 0.0, "the dead see no vignette");
        assert!(vignette_intensity(0.0, 10) > vignette_intensity(0.0, 30));
        assert!(vignette_intensity(0.0, 1) <= 0.45);
        assert_eq!(vignette_intensity(0.6, 100), 0.6);
        assert_eq!(vignette_intensity(0.1, 5), vignette_intensity(0.0, 5));
        assert!(flash_for(100) > flash_for(20));
        assert!(flash_for(1) > 0.0);
        assert!(flash_for(10_000) <= 0.8);
    }

    #[test]
    fn power_ups_tint_the_edges_quad_first() {
        assert_eq!(power_up_edge(0), None);
        assert_eq!(power_up_edge(0b1_1111), None, "weapons are not power-ups");
        let quad = power_up_edge(KIT_QUAD).unwrap();
        assert!(quad[2] > quad[0]);
        let regen = power_up_edge(KIT_REGEN).unwrap();
        assert!(regen[0] > regen[2]);
        assert_eq!(power_up_edge(KIT_QUAD | KIT_REGEN), Some(quad));
    }

    #[test]
    fn hit_angles_point_to_the_attacker() {
        let me = Vec3::new(5.0, 0.0, 5.0);
        let forward = Vec3::NEG_Z;
        let ahead = hit_angle(me + Vec3::NEG_Z * 3.0, me, forward);
        let right = hit_angle(me + Vec3::X * 3.0, me, forward);
        let left = hit_angle(me + Vec3::NEG_X * 3.0, me, forward);
        let behind = hit_angle(me + Vec3::Z * 3.0, me, forward);
        assert!(ahead.abs() < 1e-5);
        assert!((right - std::f32::consts::FRAC_PI_2).abs() < 1e-5);
        assert!((left + std::f32::consts::FRAC_PI_2).abs() < 1e-5);
        assert!((behind.abs() - std::f32::consts::PI).abs() < 1e-5);
        // Looking right (+X), an attacker at +X is ahead; height does not matter.
        assert!(
            hit_angle(me + Vec3::new(3.0, 4.0, 0.0), me, Vec3::new(1.0, -0.5, 0.0)).abs() < 1e-5
        );
    }
}
