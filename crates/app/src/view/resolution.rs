//! `r_scale`: the 3D world is drawn at a share of the window's resolution and stretched
//! to fill it, while the HUD and menus stay sharp at the window's own. On a software
//! renderer or a weak GPU the cost of a frame is mostly per pixel, so 0.5 draws a quarter
//! of the pixels.
//!
//! The first-person camera ([`MainCamera`]) always draws into an image ([`WorldImage`]);
//! the only camera on the window ([`ScreenCamera`]) holds egui, which paints that image
//! under everything else. One path at every scale keeps 1.0 and 0.5 the same code (a
//! full-screen copy costs little beside drawing the world).

use crate::MainCamera;
use crate::cvars::cvar;
use bevy::camera::{ImageRenderTarget, RenderTarget};
use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::Msaa;
use bevy::window::PrimaryWindow;
use bevy_egui::{
    EguiContexts, EguiGlobalSettings, EguiPrimaryContextPass, EguiTextureHandle, EguiUserTextures,
    PrimaryEguiContext, egui,
};
use sightline_console::Cvars;

/// Draws the world at `r_scale` and puts it on the window.
pub struct ResolutionPlugin;

impl Plugin for ResolutionPlugin {
    fn build(&self, app: &mut App) {
        // The window camera holds the primary egui context; without this egui would
        // also take the first camera it sees, which may be the world's.
        match app.world_mut().get_resource_mut::<EguiGlobalSettings>() {
            Some(mut settings) => settings.auto_create_primary_context = false,
            None => {
                app.insert_resource(EguiGlobalSettings {
                    auto_create_primary_context: false,
                    ..default()
                });
            }
        }
        app.add_systems(Startup, spawn_screen_camera)
            .add_systems(
                PostUpdate,
                fit_world_image
                    .run_if(resource_exists::<EguiUserTextures>)
                    .before(bevy::camera::CameraUpdateSystems),
            )
            .add_systems(EguiPrimaryContextPass, paint_world_image);
    }
}

/// The camera on the window: it draws nothing of its own, only egui, which shows the
/// world's image first and the HUD over it. Ordered after the world's camera, so the
/// image it shows is this frame's.
#[derive(Component)]
pub struct ScreenCamera;

/// The image the world is drawn into, its size in pixels, and its egui texture.
#[derive(Resource)]
pub struct WorldImage {
    handle: Handle<Image>,
    size: UVec2,
    texture: egui::TextureId,
}

fn spawn_screen_camera(mut commands: Commands) {
    commands.spawn((
        Camera2d,
        Camera {
            order: 1,
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        Msaa::Off,
        PrimaryEguiContext,
        ScreenCamera,
    ));
}

/// The size of the world's image for a window of `physical` pixels at `r_scale`
/// `scale`: each side scaled and rounded, never under one pixel; `None` for a window
/// with no area (minimised), which keeps the image it had.
pub fn scaled_size(physical: UVec2, scale: f64) -> Option<UVec2> {
    if physical.x == 0 || physical.y == 0 {
        return None;
    }
    let scale = scale.clamp(0.5, 1.0);
    let side = |pixels: u32| ((f64::from(pixels) * scale).round() as u32).max(1);
    Some(UVec2::new(side(physical.x), side(physical.y)))
}

/// Makes a new image for the world whenever the window's size or `r_scale` asks for
/// another size, and points the world's camera at it. The image's scale factor makes
/// its logical size the window's, so points projected through the world's camera (name
/// plates) land where they belong on the window.
fn fit_world_image(
    mut commands: Commands,
    cvars: Res<Cvars>,
    window: Query<&Window, With<PrimaryWindow>>,
    cameras: Query<Entity, With<MainCamera>>,
    added: Query<(), Added<MainCamera>>,
    images: Option<ResMut<Assets<Image>>>,
    current: Option<Res<WorldImage>>,
    mut contexts: EguiContexts,
) {
    let (Ok(window), Some(mut images)) = (window.single(), images) else {
        return;
    };
    let scale: f64 = cvars.read(cvar::R_SCALE);
    let Some(size) = scaled_size(window.physical_size(), scale) else {
        return;
    };
    if current.as_ref().is_some_and(|c| c.size == size) && added.is_empty() {
        return;
    }
    let handle = match current {
        Some(ref c) if c.size == size => c.handle.clone(),
        _ => {
            if let Some(old) = &current {
                contexts.remove_image(&old.handle);
                images.remove(&old.handle);
            }
            let image =
                Image::new_target_texture(size.x, size.y, TextureFormat::Rgba8UnormSrgb, None);
            let handle = images.add(image);
            let texture = contexts.add_image(EguiTextureHandle::Strong(handle.clone()));
            commands.insert_resource(WorldImage {
                handle: handle.clone(),
                size,
                texture,
            });
            handle
        }
    };
    let target = RenderTarget::Image(ImageRenderTarget {
        handle,
        scale_factor: (scale.clamp(0.5, 1.0) as f32) * window.scale_factor(),
    });
    for camera in &cameras {
        commands.entity(camera).insert(target.clone());
    }
}

/// The world's image across the whole window, under every other layer: an area of the
/// background order is drawn before the layers that are only painted on.
fn paint_world_image(mut contexts: EguiContexts, world: Option<Res<WorldImage>>) -> Result {
    let Some(world) = world else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    egui::Area::new(egui::Id::new("world image"))
        .order(egui::Order::Background)
        .fixed_pos(screen.min)
        .interactable(false)
        .show(ctx, |ui| {
            ui.painter().with_clip_rect(screen).image(
                world.texture,
                screen,
                egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                egui::Color32::WHITE,
            );
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_the_window_scaled_and_never_empty() {
        assert_eq!(
            scaled_size(UVec2::new(1280, 720), 1.0),
            Some(UVec2::new(1280, 720))
        );
        assert_eq!(
            scaled_size(UVec2::new(1280, 720), 0.5),
            Some(UVec2::new(640, 360))
        );
        assert_eq!(
            scaled_size(UVec2::new(1281, 721), 0.75),
            Some(UVec2::new(961, 541))
        );
        // Out-of-range scales are the nearest end (the cvar clamps; this holds anyway).
        assert_eq!(
            scaled_size(UVec2::new(100, 100), 0.1),
            Some(UVec2::new(50, 50))
        );
        assert_eq!(scaled_size(UVec2::new(1, 1), 0.5), Some(UVec2::new(1, 1)));
        assert_eq!(scaled_size(UVec2::new(0, 720), 1.0), None);
    }
}
