//! Surfaces for the map's brushes, generated in code at start-up: concrete, metal, trim,
//! painted panels and glowing strips, each a small tileable texture (with its mip chain)
//! that multiplies the brush's own colour, so maps keep their colours and gain detail.
//!
//! The map format has no material names, only a colour per brush, so a brush's surface is
//! chosen from its colour and shape ([`surface_for`]). Brushes are drawn with
//! [`box_mesh`], whose texture coordinates are in metres, so a texture keeps its scale on
//! a long wall and a small crate alike.

use bevy::asset::RenderAssetUsages;
use bevy::image::{ImageAddressMode, ImageFilterMode, ImageSampler, ImageSamplerDescriptor};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use sightline_console::Cvars;

use crate::cvars::cvar;
use crate::view::graphics::{GpuLimits, anisotropy, find_gpu_limits};

/// Pixels along a side of every generated texture (a power of two, for the mip chain).
pub const TEXTURE_SIZE: u32 = 128;

/// Metres one repeat of a texture covers.
pub const METRES_PER_TILE: f32 = 2.0;

/// The kinds of surface a brush can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// Poured concrete: mottled, with pits and a form seam (warm and neutral greys).
    Concrete,
    /// Brushed steel plates with seams and rivets (cool greys and blues).
    Metal,
    /// Ribbed trim for beams, posts and rails (long thin brushes).
    Trim,
    /// Painted panels (saturated colours that do not glow).
    Painted,
    /// Light strips that glow in the brush's colour (bright, saturated colours).
    Glow,
}

impl Surface {
    /// Every surface, for generating them all at start-up.
    pub const ALL: [Surface; 5] = [
        Surface::Concrete,
        Surface::Metal,
        Surface::Trim,
        Surface::Painted,
        Surface::Glow,
    ];

    /// How metallic and how rough it is.
    pub fn metallic_roughness(self) -> (f32, f32) {
        match self {
            Surface::Concrete => (0.0, 0.92),
            Surface::Metal => (0.55, 0.45),
            Surface::Trim => (0.4, 0.5),
            Surface::Painted => (0.1, 0.6),
            Surface::Glow => (0.0, 0.4),
        }
    }
}

/// The surface for a brush of linear colour `rgb` and half extents `half`.
pub fn surface_for(rgb: [f32; 3], half: Vec3) -> Surface {
    let [r, g, b] = rgb;
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let saturation = if max > 0.0 { (max - min) / max } else { 0.0 };
    let mut sides = half.to_array();
    sides.sort_by(f32::total_cmp);
    if max >= 0.9 && saturation >= 0.4 {
        Surface::Glow
    } else if sides[1] <= 0.3 && sides[2] >= 4.0 * sides[1] {
        // Two thin sides and one long one: a post, beam or rail.
        Surface::Trim
    } else if saturation >= 0.4 {
        Surface::Painted
    } else if b - r > 0.05 {
        Surface::Metal
    } else {
        Surface::Concrete
    }
}

/// A hash of a lattice point to 0..1, the same on every platform.
fn hash(x: u32, y: u32, seed: u32) -> f32 {
    let mut h = x
        .wrapping_mul(0x8da6_b343)
        .wrapping_add(y.wrapping_mul(0xd816_3841))
        .wrapping_add(seed.wrapping_mul(0xcb1a_b31f));
    h ^= h >> 13;
    h = h.wrapping_mul(0x5bd1_e995);
    h ^= h >> 15;
    (h & 0xff_ffff) as f32 / 0x100_0000 as f32
}

/// Value noise at `(u, v)` in 0..1 (one tile) over a lattice of `fx` by `fy` cells that
/// wraps at the tile's edges, so the texture tiles without a seam.
fn periodic_noise(u: f32, v: f32, fx: u32, fy: u32, seed: u32) -> f32 {
    let (x, y) = (u * fx as f32, v * fy as f32);
    let (x0, y0) = (x.floor(), y.floor());
    let (tx, ty) = (x - x0, y - y0);
    let (sx, sy) = (tx * tx * (3.0 - 2.0 * tx), ty * ty * (3.0 - 2.0 * ty));
    let (ix, iy) = (
        (x0 as i64).rem_euclid(fx as i64) as u32,
        (y0 as i64).rem_euclid(fy as i64) as u32,
    );
    let (jx, jy) = ((ix + 1) % fx, (iy + 1) % fy);
    let a = hash(ix, iy, seed);
    let b = hash(jx, iy, seed);
    let c = hash(ix, jy, seed);
    let d = hash(jx, jy, seed);
    let top = a + (b - a) * sx;
    let bottom = c + (d - c) * sx;
    top + (bottom - top) * sy
}

/// Fractal noise: octaves of [`periodic_noise`] from `base` cells up, each half as strong.
fn fbm(u: f32, v: f32, base: u32, octaves: u32, seed: u32) -> f32 {
    let (mut sum, mut weight, mut total) = (0.0, 1.0, 0.0);
    for o in 0..octaves {
        let f = base << o;
        sum += periodic_noise(u, v, f, f, seed.wrapping_add(o)) * weight;
        total += weight;
        weight *= 0.5;
    }
    sum / total
}

/// How far `t` (0..1 across a tile) is from the tile's edge, in tiles: 0 on the edge.
fn edge_distance(t: f32) -> f32 {
    t.min(1.0 - t)
}

/// The albedo factor (0..1, linear) of `surface` at `(u, v)` in one tile; for
/// [`Surface::Glow`], the strength of its glow.
pub fn surface_value(surface: Surface, u: f32, v: f32) -> f32 {
    match surface {
        Surface::Concrete => {
            let mottle = fbm(u, v, 4, 4, 11);
            let pits = periodic_noise(u, v, 48, 48, 12);
            // A form seam along the tile's edge, where the shuttering met.
            let seam = if edge_distance(v) < 0.008 { 0.8 } else { 1.0 };
            let pit = if pits > 0.9 { 0.75 } else { 1.0 };
            (0.72 + 0.28 * mottle) * pit * seam
        }
        Surface::Metal => {
            // Brushed along u: fine streaks, long in one direction.
            let streaks = periodic_noise(u, v, 4, 96, 21);
            let blotches = fbm(u, v, 2, 3, 22);
            let seam = edge_distance(u).min(edge_distance(v));
            let seam_shade = if seam < 0.01 { 0.45 } else { 1.0 };
            // Four rivets, an eighth of a tile in from each corner.
            let (cu, cv) = (edge_distance(u) - 0.0625, edge_distance(v) - 0.0625);
            let rivet = if cu * cu + cv * cv < 0.018 * 0.018 {
                1.15
            } else {
                1.0
            };
            ((0.78 + 0.12 * streaks + 0.1 * blotches) * seam_shade * rivet).min(1.0)
        }
        Surface::Trim => {
            // Ribs across v, eight a tile, with a little wear.
            let rib = (v * 8.0 * std::f32::consts::TAU).cos() * 0.5 + 0.5;
            let wear = fbm(u, v, 8, 2, 31);
            0.6 + 0.3 * rib + 0.1 * wear
        }
        Surface::Painted => {
            let chips = periodic_noise(u, v, 32, 32, 41);
            let grime = fbm(u, v, 4, 3, 42);
            let panel = edge_distance(u).min(edge_distance(v));
            let groove = if panel < 0.012 { 0.55 } else { 1.0 };
            let chip = if chips > 0.93 { 0.7 } else { 1.0 };
            (0.8 + 0.2 * grime) * groove * chip
        }
        Surface::Glow => {
            // Two bright strips a tile, with dark breaks between lamps.
            let across = (v * 2.0).fract();
            let strip = (1.0 - (across - 0.5).abs() * 6.0).clamp(0.0, 1.0);
            let lamp = if (u * 4.0).fract() < 0.08 { 0.2 } else { 1.0 };
            0.05 + 0.95 * strip * lamp
        }
    }
}

/// Linear 0..1 to an sRGB byte.
fn srgb_byte(linear: f32) -> u8 {
    let l = linear.clamp(0.0, 1.0);
    let s = if l <= 0.003_130_8 {
        l * 12.92
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    };
    (s * 255.0 + 0.5) as u8
}

/// The texture of `surface`, `size` pixels square (a power of two), as sRGB RGBA bytes,
/// row by row; the same bytes every time.
pub fn generate(surface: Surface, size: u32) -> Vec<u8> {
    let mut data = Vec::with_capacity((size * size * 4) as usize);
    for y in 0..size {
        for x in 0..size {
            let (u, v) = (
                (x as f32 + 0.5) / size as f32,
                (y as f32 + 0.5) / size as f32,
            );
            let b = srgb_byte(surface_value(surface, u, v));
            data.extend_from_slice(&[b, b, b, 255]);
        }
    }
    data
}

/// `level` (RGBA bytes, `size` pixels square) followed by each smaller mip level down to
/// one pixel, each a 2x2 average of the one before.
pub fn with_mips(level: Vec<u8>, size: u32) -> (Vec<u8>, u32) {
    let mut all = level.clone();
    let (mut previous, mut side, mut count) = (level, size, 1);
    while side > 1 {
        let half = side / 2;
        let mut next = Vec::with_capacity((half * half * 4) as usize);
        for y in 0..half {
            for x in 0..half {
                for c in 0..4 {
                    let at = |dx: u32, dy: u32| {
                        previous[(((y * 2 + dy) * side + x * 2 + dx) * 4 + c) as usize] as u32
                    };
                    next.push(((at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1) + 2) / 4) as u8);
                }
            }
        }
        all.extend_from_slice(&next);
        previous = next;
        side = half;
        count += 1;
    }
    (all, count)
}

/// A repeating, mip-mapped sRGB texture of `surface`.
pub fn texture(surface: Surface) -> Image {
    let (data, mips) = with_mips(generate(surface, TEXTURE_SIZE), TEXTURE_SIZE);
    let mut image = Image::new_uninit(
        Extent3d {
            width: TEXTURE_SIZE,
            height: TEXTURE_SIZE,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.data = Some(data);
    image.texture_descriptor.mip_level_count = mips;
    // Plain filtering until the renderer is known and `r_anisotropy` is applied.
    image.sampler = sampler(1);
    image
}

/// The surfaces' sampler: tiling, trilinear, with up to `anisotropy` samples.
pub fn sampler(anisotropy: u16) -> ImageSampler {
    ImageSampler::Descriptor(ImageSamplerDescriptor {
        address_mode_u: ImageAddressMode::Repeat,
        address_mode_v: ImageAddressMode::Repeat,
        mag_filter: ImageFilterMode::Linear,
        min_filter: ImageFilterMode::Linear,
        mipmap_filter: ImageFilterMode::Linear,
        anisotropy_clamp: anisotropy,
        ..default()
    })
}

/// The generated textures, one per surface, made once at start-up.
#[derive(Resource, Debug, Clone)]
pub struct SurfaceTextures(Vec<(Surface, Handle<Image>)>);

impl SurfaceTextures {
    /// The texture of `surface`.
    pub fn get(&self, surface: Surface) -> Handle<Image> {
        self.0
            .iter()
            .find(|(s, _)| *s == surface)
            .map(|(_, h)| h.clone())
            .unwrap_or_default()
    }

    /// A material for a brush of colour `color` with `surface`.
    pub fn material(&self, surface: Surface, color: Color) -> StandardMaterial {
        let (metallic, roughness) = surface.metallic_roughness();
        let texture = self.get(surface);
        let mut material = StandardMaterial {
            base_color: color,
            base_color_texture: Some(texture.clone()),
            metallic,
            perceptual_roughness: roughness,
            ..default()
        };
        if surface == Surface::Glow {
            // Bright enough to bloom: the strips read as lamps.
            material.emissive = LinearRgba::from(color) * 6.0;
            material.emissive_texture = Some(texture);
        }
        material
    }
}

/// Generates the surface textures at start-up.
pub struct MaterialsPlugin;

impl Plugin for MaterialsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(PreStartup, generate_textures)
            .add_systems(Update, apply_anisotropy.after(find_gpu_limits));
    }
}

/// Gives the surfaces' textures the anisotropic filtering `r_anisotropy` asks for and the
/// renderer allows, whenever either changes.
fn apply_anisotropy(
    cvars: Res<Cvars>,
    limits: Option<Res<GpuLimits>>,
    textures: Option<Res<SurfaceTextures>>,
    images: Option<ResMut<Assets<Image>>>,
    mut applied: Local<Option<u16>>,
) {
    let (Some(limits), Some(textures), Some(mut images)) = (limits, textures, images) else {
        return;
    };
    let wanted = anisotropy(cvars.read(cvar::R_ANISOTROPY), limits.software);
    if *applied == Some(wanted) {
        return;
    }
    for (_, handle) in &textures.0 {
        if let Some(mut image) = images.get_mut(handle) {
            image.sampler = sampler(wanted);
        }
    }
    *applied = Some(wanted);
}

/// Without images (the windowless app draws nothing) every surface is plain white.
fn generate_textures(mut commands: Commands, images: Option<ResMut<Assets<Image>>>) {
    let textures = match images {
        Some(mut images) => Surface::ALL
            .iter()
            .map(|&s| (s, images.add(texture(s))))
            .collect(),
        None => Vec::new(),
    };
    commands.insert_resource(SurfaceTextures(textures));
}

/// A sphere for small things (a muzzle flash, a plasma ball): an icosphere of 180
/// triangles. Bevy's default sphere has 720, most of them specks at a few centimetres
/// across, and vertex work (on a software renderer, the CPU's) every frame it is drawn.
pub fn small_sphere(radius: f32) -> Mesh {
    Sphere::new(radius)
        .mesh()
        .ico(2)
        .expect("two subdivisions are within the icosphere's limit")
}

/// A box of half extents `half` about the origin, its texture coordinates in tiles of
/// `metres_per_tile`, so the texture keeps its scale whatever the box's size.
pub fn box_mesh(half: Vec3, metres_per_tile: f32) -> Mesh {
    // Each face: its normal and two axes along it, u x v = normal (counter-clockwise seen
    // from outside).
    let faces = [
        (Vec3::X, Vec3::NEG_Z, Vec3::Y),
        (Vec3::NEG_X, Vec3::Z, Vec3::Y),
        (Vec3::Y, Vec3::X, Vec3::NEG_Z),
        (Vec3::NEG_Y, Vec3::X, Vec3::Z),
        (Vec3::Z, Vec3::X, Vec3::Y),
        (Vec3::NEG_Z, Vec3::NEG_X, Vec3::Y),
    ];
    let (mut positions, mut normals, mut uvs, mut indices) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (n, u, v) in faces {
        let (hn, hu, hv) = (
            (n * half).abs().max_element(),
            (u * half).abs().max_element(),
            (v * half).abs().max_element(),
        );
        let base = positions.len() as u32;
        for (s, t) in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)] {
            let p = n * hn + u * hu * (s * 2.0 - 1.0) + v * hv * (t * 2.0 - 1.0);
            positions.push(p.to_array());
            normals.push(n.to_array());
            // Image rows run down, so v grows downwards.
            uvs.push([
                s * hu * 2.0 / metres_per_tile,
                (1.0 - t) * hv * 2.0 / metres_per_tile,
            ]);
        }
        indices.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, uvs)
    .with_inserted_indices(Indices::U32(indices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::mesh::VertexAttributeValues;

    #[test]
    fn textures_are_deterministic_and_the_right_size() {
        for s in Surface::ALL {
            let a = generate(s, 64);
            assert_eq!(a.len(), 64 * 64 * 4, "{s:?}");
            assert_eq!(a, generate(s, 64), "{s:?}");
            // Not flat: there is detail to see.
            let (lo, hi) = a
                .chunks(4)
                .fold((255, 0), |(lo, hi), p| (lo.min(p[0]), hi.max(p[0])));
            assert!(hi - lo > 20, "{s:?}: {lo}..{hi}");
        }
    }

    #[test]
    fn textures_tile_without_a_seam() {
        // Across the wrap (last column to first) the texture changes no more than between
        // neighbours inside it: the noise lattice wraps at the edges.
        let size = 128;
        for s in Surface::ALL {
            let a = generate(s, size);
            let px = |x: u32, y: u32| a[((y * size + x) * 4) as usize] as i32;
            let inner = |f: &dyn Fn(u32) -> i32| (0..size).map(f).sum::<i32>();
            let across_edge = inner(&|y| (px(size - 1, y) - px(0, y)).abs());
            let inside = inner(&|y| (px(size / 2, y) - px(size / 2 - 1, y)).abs());
            let down_edge = inner(&|x| (px(x, size - 1) - px(x, 0)).abs());
            let down_inside = inner(&|x| (px(x, size / 2) - px(x, size / 2 - 1)).abs());
            assert!(
                across_edge <= inside * 3 + 8 * size as i32,
                "{s:?}: {across_edge} vs {inside}"
            );
            assert!(
                down_edge <= down_inside * 3 + 8 * size as i32,
                "{s:?}: {down_edge} vs {down_inside}"
            );
            // The noise itself is exactly periodic.
            for i in 0..20 {
                let t = i as f32 / 20.0;
                assert!(
                    (periodic_noise(0.0, t, 4, 4, 7) - periodic_noise(1.0, t, 4, 4, 7)).abs()
                        < 1e-5
                );
                assert!(
                    (periodic_noise(t, 0.0, 4, 4, 7) - periodic_noise(t, 1.0, 4, 4, 7)).abs()
                        < 1e-5
                );
            }
        }
    }

    #[test]
    fn a_small_sphere_is_a_few_hundred_triangles() {
        let triangles = |mesh: Mesh| mesh.indices().expect("indexed").len() / 3;
        assert_eq!(triangles(small_sphere(0.04)), 180);
        assert_eq!(triangles(Mesh::from(Sphere::new(0.04))), 720);
    }

    #[test]
    fn mips_halve_down_to_one_pixel() {
        let (data, mips) = with_mips(generate(Surface::Concrete, 8), 8);
        assert_eq!(mips, 4);
        assert_eq!(data.len(), (64 + 16 + 4 + 1) * 4);
        let flat = vec![200u8; 4 * 4 * 4];
        let (data, _) = with_mips(flat, 4);
        assert!(data.iter().all(|&b| b == 200));
    }

    #[test]
    fn surfaces_follow_colour_and_shape() {
        let block = Vec3::new(2.0, 1.5, 2.0);
        assert_eq!(surface_for([0.62, 0.58, 0.52], block), Surface::Concrete);
        assert_eq!(
            surface_for([0.42, 0.43, 0.46], Vec3::new(30.0, 0.5, 30.0)),
            Surface::Concrete
        );
        assert_eq!(surface_for([0.3, 0.32, 0.36], block), Surface::Metal);
        assert_eq!(surface_for([0.35, 0.45, 0.55], block), Surface::Metal);
        assert_eq!(
            surface_for([0.3, 0.32, 0.36], Vec3::new(0.25, 1.35, 0.25)),
            Surface::Trim
        );
        assert_eq!(surface_for([0.7, 0.25, 0.2], block), Surface::Painted);
        assert_eq!(surface_for([1.0, 0.3, 0.1], block), Surface::Glow);
        assert_eq!(surface_for([0.0, 0.0, 0.0], block), Surface::Concrete);
    }

    #[test]
    fn box_mesh_faces_point_out_and_tile_in_metres() {
        let half = Vec3::new(3.0, 0.5, 1.0);
        let mesh = box_mesh(half, 2.0);
        let Some(VertexAttributeValues::Float32x3(pos)) = mesh.attribute(Mesh::ATTRIBUTE_POSITION)
        else {
            panic!("positions");
        };
        let Some(VertexAttributeValues::Float32x3(normals)) =
            mesh.attribute(Mesh::ATTRIBUTE_NORMAL)
        else {
            panic!("normals");
        };
        let Some(VertexAttributeValues::Float32x2(uvs)) = mesh.attribute(Mesh::ATTRIBUTE_UV_0)
        else {
            panic!("uvs");
        };
        assert_eq!(pos.len(), 24);
        let Some(Indices::U32(indices)) = mesh.indices() else {
            panic!("indices");
        };
        for tri in indices.chunks(3) {
            let [a, b, c] = [0, 1, 2].map(|i| Vec3::from(pos[tri[i] as usize]));
            let n = Vec3::from(normals[tri[0] as usize]);
            assert!(
                (b - a).cross(c - a).dot(n) > 0.0,
                "winding faces the normal"
            );
            assert!(a.dot(n) > 0.0, "the face is on the normal's side");
        }
        for p in pos {
            assert_eq!(Vec3::from(*p).abs(), half);
        }
        // The top face (6 m by 2 m) spans 3 by 1 tiles.
        let top = &uvs[8..12];
        let span = |i: usize| {
            top.iter().map(|uv| uv[i]).fold(f32::MIN, f32::max)
                - top.iter().map(|uv| uv[i]).fold(f32::MAX, f32::min)
        };
        assert!((span(0) - 3.0).abs() < 1e-5 && (span(1) - 1.0).abs() < 1e-5);
    }
}
