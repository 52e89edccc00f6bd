//! The sky: a cube map drawn behind everything, generated in code for each map from its
//! sky colour and its sun: a deeper blue overhead, a pale horizon, a dusky ground below
//! it, and the sun's disc and glow where its light comes from, bright enough to bloom.
//!
//! Bevy's `Atmosphere` was not used: it simulates scattering with compute passes every
//! frame, far too slow on the software renderers CI and many players' laptops fall back
//! to, and it ignores the map's chosen sky colour.

use crate::MainCamera;
use bevy::asset::RenderAssetUsages;
use bevy::core_pipeline::Skybox;
use bevy::prelude::*;
use bevy::render::render_resource::{
    Extent3d, TextureDimension, TextureFormat, TextureViewDescriptor, TextureViewDimension,
};
use sightline_map::{CurrentMap, Rgb};

/// Pixels along a side of each of the cube's faces.
const FACE_SIZE: u32 = 128;

/// The sky's brightness in cd/m² per unit of colour: at the camera's exposure
/// ([`crate::view::graphics::EV100`]) a colour of 1 shows as about white.
const SKY_NITS: f32 = 1000.0 * 1.625;

/// Angular radius of the sun's disc, radians.
const SUN_RADIUS: f32 = 0.02;

/// Draws the sky of the current map.
pub struct SkyPlugin;

impl Plugin for SkyPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            (
                put_up_sky.run_if(resource_exists_and_changed::<CurrentMap>),
                take_down_sky.run_if(resource_removed::<CurrentMap>),
            ),
        );
    }
}

/// What the sky is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkyLook {
    /// The map's sky colour, linear.
    pub sky: Vec3,
    /// Unit direction toward the sun.
    pub to_sun: Vec3,
    /// The sun's colour, linear.
    pub sun: Vec3,
}

impl SkyLook {
    /// The sky of a map with sky colour `sky`, sunlight travelling along `direction`, of
    /// colour `sun`.
    pub fn new(sky: Rgb, direction: Vec3, sun: Rgb) -> Self {
        Self {
            sky: Vec3::from_array(sky.0),
            to_sun: (-direction).normalize_or(Vec3::Y),
            sun: Vec3::from_array(sun.0),
        }
    }

    /// Linear radiance (in units of [`SKY_NITS`]) seen looking along unit `dir`.
    pub fn radiance(&self, dir: Vec3) -> Vec3 {
        let up = dir.y;
        let horizon = self.sky.lerp(Vec3::ONE, 0.25);
        // Deeper and bluer overhead.
        let zenith = self.sky * self.sky * 0.8;
        let ground = self.sky * 0.25 + Vec3::new(0.06, 0.055, 0.05);
        let base = if up >= 0.0 {
            horizon.lerp(zenith, up.sqrt())
        } else {
            horizon.lerp(ground, (-up * 6.0).min(1.0))
        };
        let cos = dir.dot(self.to_sun).clamp(-1.0, 1.0);
        let angle = cos.acos();
        // The disc, its edge a little soft so it does not alias; then a wide glow.
        let disc = ((SUN_RADIUS * 1.3 - angle) / (SUN_RADIUS * 0.3)).clamp(0.0, 1.0) * 40.0;
        let glow = cos.max(0.0).powi(200) * 2.0 + cos.max(0.0).powi(12) * 0.25;
        base + self.sun * (disc + glow) * if up < -0.02 { 0.0 } else { 1.0 }
    }
}

/// The world direction of the texel at `(u, v)` (each -1..1, v down the image) on cube
/// face `face` (+X, -X, +Y, -Y, +Z, -Z), as Bevy's skybox samples it: cube maps are
/// left-handed, so z is flipped from the usual cube-map convention.
pub fn face_direction(face: usize, u: f32, v: f32) -> Vec3 {
    let cube = match face {
        0 => Vec3::new(1.0, -v, -u),
        1 => Vec3::new(-1.0, -v, u),
        2 => Vec3::new(u, 1.0, v),
        3 => Vec3::new(u, -1.0, -v),
        4 => Vec3::new(u, -v, 1.0),
        _ => Vec3::new(-u, -v, -1.0),
    };
    Vec3::new(cube.x, cube.y, -cube.z).normalize()
}

/// `v` (0 or more) as the bits of a 16-bit float, rounding toward zero; values past the
/// largest 16-bit float become it.
pub fn f16_bits(v: f32) -> u16 {
    let v = if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 65504.0)
    };
    let bits = v.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    if exp <= 0 {
        // Subnormal in 16 bits, or too small for any.
        if exp < -10 {
            return 0;
        }
        return ((mantissa | 0x80_0000) >> (14 - exp)) as u16;
    }
    ((exp as u32) << 10 | mantissa >> 13) as u16
}

/// The six faces of the sky, `size` pixels square, as RGBA 16-bit float texels.
pub fn sky_texels(look: &SkyLook, size: u32) -> Vec<u8> {
    let mut data = Vec::with_capacity((6 * size * size * 8) as usize);
    for face in 0..6 {
        for y in 0..size {
            for x in 0..size {
                let u = (x as f32 + 0.5) / size as f32 * 2.0 - 1.0;
                let v = (y as f32 + 0.5) / size as f32 * 2.0 - 1.0;
                let c = look.radiance(face_direction(face, u, v));
                for channel in [c.x, c.y, c.z, 1.0] {
                    data.extend_from_slice(&f16_bits(channel).to_le_bytes());
                }
            }
        }
    }
    data
}

/// The sky as a cube-map image.
fn sky_image(look: &SkyLook) -> Image {
    let mut image = Image::new(
        Extent3d {
            width: FACE_SIZE,
            height: FACE_SIZE,
            depth_or_array_layers: 6,
        },
        TextureDimension::D2,
        sky_texels(look, FACE_SIZE),
        TextureFormat::Rgba16Float,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.texture_view_descriptor = Some(TextureViewDescriptor {
        dimension: Some(TextureViewDimension::Cube),
        ..default()
    });
    image
}

/// A new map: its sky behind the camera.
fn put_up_sky(
    mut commands: Commands,
    map: Res<CurrentMap>,
    images: Option<ResMut<Assets<Image>>>,
    cameras: Query<Entity, With<MainCamera>>,
) {
    // The windowless app has no images and draws nothing.
    let Some(mut images) = images else {
        return;
    };
    let def = &map.def;
    let image = images.add(sky_image(&SkyLook::new(
        def.sky,
        def.sun.direction,
        def.sun.color,
    )));
    for camera in &cameras {
        commands.entity(camera).insert(Skybox {
            image: Some(image.clone()),
            brightness: SKY_NITS,
            ..default()
        });
    }
}

/// No map: the plain clear colour again.
fn take_down_sky(mut commands: Commands, cameras: Query<Entity, With<MainCamera>>) {
    for camera in &cameras {
        commands.entity(camera).remove::<Skybox>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_encode_known_values() {
        assert_eq!(f16_bits(0.0), 0);
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(0.5), 0x3800);
        assert_eq!(f16_bits(2.0), 0x4000);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(1e9), 0x7bff, "clamped, never infinity");
        assert_eq!(f16_bits(-3.0), 0);
        assert_eq!(f16_bits(f32::NAN), 0);
        // The smallest subnormal, 2^-24.
        assert_eq!(f16_bits(2f32.powi(-24)), 1);
        assert_eq!(f16_bits(2f32.powi(-15)), 0x0200);
    }

    #[test]
    fn face_centres_look_along_the_axes() {
        // Bevy's skybox samples (x, y, -z): +Z in the cube is -Z in the world.
        let centres = [
            Vec3::X,
            Vec3::NEG_X,
            Vec3::Y,
            Vec3::NEG_Y,
            Vec3::NEG_Z,
            Vec3::Z,
        ];
        for (face, want) in centres.into_iter().enumerate() {
            assert!(
                face_direction(face, 0.0, 0.0).distance(want) < 1e-6,
                "{face}"
            );
        }
        // Up in the image (v = -1) is up in the world on the side faces.
        for face in [0, 1, 4, 5] {
            assert!(face_direction(face, 0.0, -0.9).y > 0.5, "{face}");
        }
    }

    #[test]
    fn the_sun_is_brightest_and_the_sky_darkens_overhead_and_below() {
        let look = SkyLook::new(
            Rgb([0.6, 0.7, 0.85]),
            Vec3::new(0.4, -1.0, 0.3),
            Rgb([1.0, 0.96, 0.88]),
        );
        let at_sun = look.radiance(look.to_sun);
        let away = look.radiance(-look.to_sun);
        assert!(at_sun.x > 10.0, "the disc blooms: {at_sun}");
        assert!(away.max_element() < 2.0);
        let level = Vec3::new(-0.4, 0.0, -0.3).normalize();
        let horizon = look.radiance(level);
        let zenith = look.radiance((level + Vec3::Y * 20.0).normalize());
        let ground = look.radiance((level - Vec3::Y).normalize());
        assert!(zenith.length() < horizon.length());
        assert!(ground.length() < horizon.length());
    }

    #[test]
    fn texels_fill_six_faces() {
        let look = SkyLook::new(Rgb([0.5, 0.5, 0.5]), Vec3::NEG_Y, Rgb([1.0, 1.0, 1.0]));
        let data = sky_texels(&look, 8);
        assert_eq!(data.len(), 6 * 8 * 8 * 8);
        assert_eq!(data, sky_texels(&look, 8));
    }
}
