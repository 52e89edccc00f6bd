//! The renderer's quality settings, applied when the cvars change: `r_bloom` (bloom on
//! an HDR camera), `r_aa` (0 none, 1 FXAA, 2 MSAA 4x) and `r_shadows` (the sun's shadow
//! maps). `r_particles` is read by the particles themselves. A GPU that lacks what a
//! setting needs gets the setting's fallback, said once in the log.

use crate::MainCamera;
use crate::cvars::cvar;
use bevy::anti_alias::fxaa::Fxaa;
use bevy::camera::{Exposure, Hdr};
use bevy::post_process::bloom::Bloom;
use bevy::prelude::*;
use bevy::render::render_resource::{TextureFormat, WgpuFeatures};
use bevy::render::renderer::{RenderAdapter, RenderDevice};
use bevy::render::view::Msaa;
use sightline_console::Cvars;
use wgpu_types::DeviceType;

/// The camera's exposure: the maps' sunlight (about 12 000 lux) on their pale floors
/// burnt out to white at Bevy's default (9.7, for indoor scenes); this keeps their colours.
pub const EV100: f32 = 10.4;

/// Applies the quality cvars to the camera and the lights.
pub struct GraphicsPlugin;

impl Plugin for GraphicsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<GpuLimits>().add_systems(
            Update,
            (
                find_gpu_limits.run_if(resource_added::<RenderDevice>),
                apply_camera_quality,
                apply_shadows,
            )
                .chain(),
        );
    }
}

/// Anti-aliasing as `r_aa` asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AntiAliasing {
    /// None.
    Off,
    /// FXAA, a cheap filter after tone mapping.
    Fxaa,
    /// Four samples a pixel.
    Msaa4,
}

impl AntiAliasing {
    /// From `r_aa`'s value (values past the ends are the nearest end).
    pub fn from_cvar(value: i64) -> Self {
        match value {
            ..=0 => Self::Off,
            1 => Self::Fxaa,
            _ => Self::Msaa4,
        }
    }
}

/// What the GPU can do of what the settings ask, learnt once the renderer is up; until
/// then (and without a renderer) everything is assumed possible.
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct GpuLimits {
    /// Bloom renders to Rg11b10Ufloat textures.
    bloom: bool,
    /// MSAA 4x on the HDR target.
    msaa4: bool,
    /// The adapter is a software renderer (Mesa's lavapipe or llvmpipe, WARP): it gets no
    /// anisotropic filtering, see [`anisotropy`].
    pub(crate) software: bool,
}

impl Default for GpuLimits {
    fn default() -> Self {
        Self {
            bloom: true,
            msaa4: true,
            software: false,
        }
    }
}

/// The anisotropic filtering the world's textures get for `r_anisotropy`'s value: its
/// range, and 1 (none) on a software renderer. Mesa's llvmpipe filters anisotropically by
/// walking the texels of the whole footprint a pixel covers, with no cap, so a steep or
/// sub-pixel surface made one tile of the frame take seconds to minutes (frames of 1 to
/// 648 s on lavapipe, all in the opaque pass, none once filtering was plain).
pub(crate) fn anisotropy(requested: i64, software: bool) -> u16 {
    if software {
        1
    } else {
        requested.clamp(1, 16) as u16
    }
}

/// The settings as they can be had on this GPU: bloom only where it can render, MSAA
/// falling back to FXAA.
pub fn effective(
    bloom: bool,
    aa: AntiAliasing,
    can_bloom: bool,
    can_msaa4: bool,
) -> (bool, AntiAliasing) {
    let aa = match aa {
        AntiAliasing::Msaa4 if !can_msaa4 => AntiAliasing::Fxaa,
        other => other,
    };
    (bloom && can_bloom, aa)
}

/// Learns what the GPU allows, once the renderer is up.
pub(crate) fn find_gpu_limits(
    device: Res<RenderDevice>,
    adapter: Option<Res<RenderAdapter>>,
    mut limits: ResMut<GpuLimits>,
) {
    limits.bloom = device
        .features()
        .contains(WgpuFeatures::RG11B10UFLOAT_RENDERABLE);
    if !limits.bloom {
        warn!("r_bloom: this GPU cannot render to Rg11b10Ufloat textures; bloom stays off");
    }
    limits.msaa4 = adapter.as_ref().is_none_or(|a| {
        a.get_texture_format_features(TextureFormat::Rgba16Float)
            .flags
            .sample_count_supported(4)
    });
    if !limits.msaa4 {
        warn!("r_aa 2: this GPU has no 4x MSAA for HDR targets; FXAA instead");
    }
    if let Some(info) = adapter.map(|a| a.get_info()) {
        limits.software = info.device_type == DeviceType::Cpu;
        if limits.software {
            warn!(
                "r_anisotropy: {} renders in software; textures are filtered without \
                 anisotropy",
                info.name
            );
        }
    }
}

/// Bloom and anti-aliasing on the camera, whenever the cvars change or a camera appears.
fn apply_camera_quality(
    mut commands: Commands,
    cvars: Res<Cvars>,
    limits: Res<GpuLimits>,
    cameras: Query<Entity, With<MainCamera>>,
    added: Query<(), Added<MainCamera>>,
) {
    if !cvars.is_changed() && !limits.is_changed() && added.is_empty() {
        return;
    }
    let (bloom, aa) = effective(
        cvars.read(cvar::R_BLOOM),
        AntiAliasing::from_cvar(cvars.read(cvar::R_AA)),
        limits.bloom,
        limits.msaa4,
    );
    for camera in &cameras {
        let mut camera = commands.entity(camera);
        // HDR always: bright effects keep their colour through tone mapping.
        camera.insert((Hdr, Exposure { ev100: EV100 }));
        if bloom {
            camera.insert(Bloom::NATURAL);
        } else {
            camera.remove::<Bloom>();
        }
        match aa {
            AntiAliasing::Off => {
                camera.insert(Msaa::Off).remove::<Fxaa>();
            }
            AntiAliasing::Fxaa => {
                camera.insert((Msaa::Off, Fxaa::default()));
            }
            AntiAliasing::Msaa4 => {
                camera.insert(Msaa::Sample4).remove::<Fxaa>();
            }
        }
    }
}

/// The sun casts shadows while `r_shadows` is on (point lights never do: six shadow maps
/// each is too dear for these arenas).
fn apply_shadows(cvars: Res<Cvars>, mut suns: Query<&mut DirectionalLight>) {
    let on = cvars.read(cvar::R_SHADOWS);
    for mut sun in &mut suns {
        if (cvars.is_changed() || sun.is_added()) && sun.shadow_maps_enabled != on {
            sun.shadow_maps_enabled = on;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_aa_values_map_to_modes() {
        assert_eq!(AntiAliasing::from_cvar(0), AntiAliasing::Off);
        assert_eq!(AntiAliasing::from_cvar(1), AntiAliasing::Fxaa);
        assert_eq!(AntiAliasing::from_cvar(2), AntiAliasing::Msaa4);
        assert_eq!(AntiAliasing::from_cvar(-5), AntiAliasing::Off);
        assert_eq!(AntiAliasing::from_cvar(9), AntiAliasing::Msaa4);
    }

    #[test]
    fn a_software_renderer_gets_no_anisotropic_filtering() {
        assert_eq!(anisotropy(4, false), 4);
        assert_eq!(anisotropy(16, true), 1);
        assert_eq!(anisotropy(0, false), 1);
        assert_eq!(anisotropy(99, false), 16);
    }

    #[test]
    fn missing_gpu_features_fall_back() {
        use AntiAliasing::*;
        assert_eq!(effective(true, Msaa4, true, true), (true, Msaa4));
        assert_eq!(effective(true, Msaa4, false, false), (false, Fxaa));
        assert_eq!(effective(false, Off, true, true), (false, Off));
        assert_eq!(effective(true, Fxaa, true, false), (true, Fxaa));
    }
}
