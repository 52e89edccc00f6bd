//! Particles and decals: sparks, smoke, fire, rocket trails and plasma glow as pooled
//! entities with a velocity and a lifetime, and marks left on walls by bullets and
//! explosions. Others ask for them with [`Emit`] and [`Mark`] messages; how many show
//! follows `r_particles` (0 none, 1 a third, 2 all).
//!
//! Entities are pooled: a finished particle is hidden and handed to the next emission
//! rather than despawned, so a firefight does not churn the world's archetypes. Fading
//! swaps among a few shared materials (one per look and fade step) instead of giving
//! each particle its own.

use crate::cvars::cvar;
use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use sightline_console::Cvars;
use sightline_sim::EndSession;

/// Most particles alive at once at `r_particles 2`.
pub const MAX_PARTICLES: usize = 600;
/// Most marks on the walls at once; the oldest makes way.
pub const MAX_MARKS: usize = 96;
/// How long a mark stays, seconds.
const MARK_LIFE: f32 = 20.0;
/// Fade steps: each look has this many materials from opaque to clear.
const FADE_STEPS: usize = 4;

/// What a particle looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Look {
    /// Grey smoke, blended.
    Smoke,
    /// Hot sparks, glowing.
    Spark,
    /// Fire, glowing orange.
    Fire,
    /// Plasma, glowing cyan.
    Plasma,
    /// Bits of wall, dark.
    Debris,
}

impl Look {
    const ALL: [Look; 5] = [
        Look::Smoke,
        Look::Spark,
        Look::Fire,
        Look::Plasma,
        Look::Debris,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn material(self, step: usize) -> StandardMaterial {
        let fade = 1.0 - step as f32 / FADE_STEPS as f32;
        match self {
            Look::Smoke => StandardMaterial {
                base_color: Color::srgba(0.62, 0.62, 0.64, 0.35 * fade),
                // A little light of its own: lit only from the sun, the shaded side of a
                // puff went black and read as a stone.
                emissive: LinearRgba::rgb(0.1, 0.1, 0.1) * fade,
                alpha_mode: AlphaMode::Blend,
                perceptual_roughness: 1.0,
                ..default()
            },
            Look::Debris => StandardMaterial {
                base_color: Color::srgba(0.2, 0.19, 0.18, fade),
                alpha_mode: AlphaMode::Blend,
                ..default()
            },
            Look::Spark | Look::Fire | Look::Plasma => {
                let glow = match self {
                    Look::Spark => LinearRgba::rgb(8.0, 4.0, 1.0),
                    // Orange after tone mapping, even where a few overlap.
                    Look::Fire => LinearRgba::rgb(3.0, 0.9, 0.15),
                    _ => LinearRgba::rgb(1.5, 5.0, 12.0),
                };
                // Unlit materials show their base colour as it is (no lighting, no
                // exposure): values above 1 make them glow and bloom.
                StandardMaterial {
                    base_color: Color::LinearRgba(glow.with_alpha(fade)),
                    unlit: true,
                    alpha_mode: AlphaMode::Add,
                    ..default()
                }
            }
        }
    }
}

/// A request for particles: `count` of `look` at `at`, flying along `dir` at `speed`
/// within `spread` (0 along `dir`, 1 any way at all), living about `life` seconds, of
/// size `size` metres growing to `grow` times that.
#[derive(Message, Debug, Clone, Copy)]
pub struct Emit {
    /// Their look.
    pub look: Look,
    /// Where.
    pub at: Vec3,
    /// Which way (unit, or zero for every way).
    pub dir: Vec3,
    /// How many at `r_particles 2`.
    pub count: u16,
    /// Speed, m/s.
    pub speed: f32,
    /// How far from `dir` they scatter, 0 to 1.
    pub spread: f32,
    /// Lifetime, seconds.
    pub life: f32,
    /// Size, metres.
    pub size: f32,
    /// Size at the end of life, times `size`.
    pub grow: f32,
    /// Gravity's share: 1 falls as a stone, negative rises as smoke.
    pub gravity: f32,
    /// Air drag, per second.
    pub drag: f32,
}

impl Emit {
    /// Sparks and grit off a wall struck at `at`, facing `normal`.
    pub fn impact(at: Vec3, normal: Vec3) -> [Emit; 2] {
        [
            Emit {
                look: Look::Spark,
                at,
                dir: normal,
                count: 6,
                speed: 6.0,
                spread: 0.7,
                life: 0.3,
                size: 0.025,
                grow: 0.5,
                gravity: 1.0,
                drag: 1.0,
            },
            Emit {
                look: Look::Debris,
                at,
                dir: normal,
                count: 4,
                speed: 2.5,
                spread: 0.5,
                life: 0.6,
                size: 0.05,
                grow: 0.6,
                gravity: 1.0,
                drag: 0.5,
            },
        ]
    }

    /// A wisp of smoke at a muzzle at `at`, drifting along `dir`.
    pub fn muzzle_smoke(at: Vec3, dir: Vec3) -> Emit {
        Emit {
            look: Look::Smoke,
            at,
            dir,
            count: 2,
            speed: 0.8,
            spread: 0.3,
            life: 0.7,
            size: 0.06,
            grow: 4.0,
            gravity: -0.05,
            drag: 2.0,
        }
    }

    /// One puff of a rocket's trail at `at`.
    pub fn trail(at: Vec3) -> Emit {
        Emit {
            look: Look::Smoke,
            at,
            dir: Vec3::ZERO,
            count: 1,
            speed: 0.3,
            spread: 1.0,
            life: 0.9,
            size: 0.12,
            grow: 3.5,
            gravity: -0.03,
            drag: 1.0,
        }
    }

    /// The glow a plasma bolt leaves behind at `at`.
    pub fn plasma_trail(at: Vec3) -> Emit {
        Emit {
            look: Look::Plasma,
            at,
            dir: Vec3::ZERO,
            count: 1,
            speed: 0.2,
            spread: 1.0,
            life: 0.2,
            size: 0.08,
            grow: 0.2,
            gravity: 0.0,
            drag: 0.0,
        }
    }

    /// An explosion at `at`: a fireball, sparks flung out and smoke rising after.
    pub fn explosion(at: Vec3) -> [Emit; 3] {
        [
            Emit {
                look: Look::Fire,
                at,
                dir: Vec3::ZERO,
                count: 18,
                speed: 5.0,
                spread: 1.0,
                life: 0.45,
                size: 0.35,
                grow: 2.5,
                gravity: -0.1,
                drag: 4.0,
            },
            Emit {
                look: Look::Spark,
                at,
                dir: Vec3::ZERO,
                count: 24,
                speed: 14.0,
                spread: 1.0,
                life: 0.7,
                size: 0.03,
                grow: 0.5,
                gravity: 1.0,
                drag: 1.5,
            },
            Emit {
                look: Look::Smoke,
                at,
                dir: Vec3::Y,
                count: 14,
                speed: 2.0,
                spread: 0.9,
                life: 2.2,
                size: 0.4,
                grow: 4.0,
                gravity: -0.04,
                drag: 1.2,
            },
        ]
    }

    /// A small blue-white burst where plasma splashes, at `at`.
    pub fn plasma_burst(at: Vec3) -> Emit {
        Emit {
            look: Look::Plasma,
            at,
            dir: Vec3::ZERO,
            count: 12,
            speed: 4.0,
            spread: 1.0,
            life: 0.35,
            size: 0.06,
            grow: 0.3,
            gravity: 0.2,
            drag: 3.0,
        }
    }
}

/// A request for a mark on a wall at `at`, facing `normal`.
#[derive(Message, Debug, Clone, Copy)]
pub struct Mark {
    /// Where on the wall.
    pub at: Vec3,
    /// The wall's outward normal (unit).
    pub normal: Vec3,
    /// A scorch (an explosion's) rather than a bullet hole.
    pub scorch: bool,
}

/// One particle's motion and age.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub struct Particle {
    /// Velocity, m/s.
    pub vel: Vec3,
    /// Seconds lived.
    pub age: f32,
    /// Seconds it lives.
    pub life: f32,
    /// Size at birth and growth by death.
    pub size: f32,
    /// Size at death, times `size`.
    pub grow: f32,
    /// Share of gravity.
    pub gravity: f32,
    /// Drag per second.
    pub drag: f32,
    /// Its look.
    pub look: Look,
}

/// Standard gravity, m/s².
const GRAVITY: f32 = 9.81;

impl Particle {
    /// Moves a particle at `pos` on by `dt` seconds; false once its life is over.
    pub fn step(&mut self, pos: &mut Vec3, dt: f32) -> bool {
        self.vel.y -= GRAVITY * self.gravity * dt;
        self.vel *= (1.0 - self.drag * dt).max(0.0);
        *pos += self.vel * dt;
        self.age += dt;
        self.age < self.life
    }

    /// Its share of life lived, 0 to 1.
    pub fn progress(&self) -> f32 {
        (self.age / self.life.max(1e-3)).clamp(0.0, 1.0)
    }

    /// Its size now.
    pub fn current_size(&self) -> f32 {
        self.size * (1.0 + (self.grow - 1.0) * self.progress())
    }

    /// Which fade material it wears now: the last quarter of life fades out in steps.
    pub fn fade_step(&self) -> usize {
        ((self.progress() * FADE_STEPS as f32) as usize).min(FADE_STEPS - 1)
    }
}

/// How many of `count` particles to show at `r_particles` `level`.
pub fn scaled_count(count: u16, level: i64) -> usize {
    match level {
        ..=0 => 0,
        1 => (count as usize).div_ceil(3),
        _ => count as usize,
    }
}

/// The most particles alive at `r_particles` `level`.
pub fn budget(level: i64) -> usize {
    scaled_count(MAX_PARTICLES as u16, level)
}

/// A small, fast random number source (xorshift), the same sequence every run.
#[derive(Debug, Clone)]
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        (self.0 >> 8) as f32 / (1u32 << 24) as f32
    }

    /// A direction within `spread` of `dir` (any direction for a zero `dir`).
    fn direction(&mut self, dir: Vec3, spread: f32) -> Vec3 {
        let random = loop {
            let v = Vec3::new(self.next(), self.next(), self.next()) * 2.0 - 1.0;
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                break v / l.sqrt();
            }
        };
        match dir.try_normalize() {
            Some(d) => d.lerp(random, spread.clamp(0.0, 1.0)).normalize_or(d),
            None => random,
        }
    }
}

/// Shared meshes and materials, and the pools.
#[derive(Resource)]
struct ParticleAssets {
    mesh: Handle<Mesh>,
    /// Per look, per fade step.
    materials: Vec<Vec<Handle<StandardMaterial>>>,
    mark_mesh: Handle<Mesh>,
    hole: Handle<StandardMaterial>,
    scorch: Handle<StandardMaterial>,
}

/// Particles hidden and ready to be used again, and the random source.
#[derive(Resource)]
struct Pool {
    free: Vec<Entity>,
    alive: usize,
    rng: Rng,
}

/// Marks on the walls, oldest first.
#[derive(Resource, Default)]
struct Marks(std::collections::VecDeque<(Entity, f32)>);

/// A mark's age.
#[derive(Component)]
struct MarkVisual;

/// Draws particles and marks.
pub struct ParticlesPlugin;

impl Plugin for ParticlesPlugin {
    fn build(&self, app: &mut App) {
        app.add_message::<Emit>()
            .add_message::<Mark>()
            .insert_resource(Pool {
                free: Vec::new(),
                alive: 0,
                rng: Rng(0x9e37_79b9),
            })
            .init_resource::<Marks>()
            .add_systems(Startup, make_particle_assets)
            .add_systems(
                Update,
                (emit_particles, age_particles, place_marks, age_marks)
                    .run_if(resource_exists::<ParticleAssets>),
            )
            .add_systems(EndSession, clear_particles_and_marks);
    }
}

fn make_particle_assets(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    images: Option<ResMut<Assets<Image>>>,
) {
    let per_look = Look::ALL
        .iter()
        .map(|look| {
            (0..FADE_STEPS)
                .map(|step| materials.add(look.material(step)))
                .collect()
        })
        .collect();
    let (hole_texture, scorch_texture) = match images {
        Some(mut images) => (
            Some(images.add(mark_image(false))),
            Some(images.add(mark_image(true))),
        ),
        None => (None, None),
    };
    let mark = |texture: Option<Handle<Image>>, color: Color| StandardMaterial {
        base_color: color,
        base_color_texture: texture,
        alpha_mode: AlphaMode::Blend,
        perceptual_roughness: 1.0,
        // Drawn over the wall it lies on, not fighting it for depth.
        depth_bias: 8.0,
        ..default()
    };
    commands.insert_resource(ParticleAssets {
        // Smooth enough that smoke reads as puffs, not stones.
        mesh: meshes.add(Sphere::new(0.5).mesh().ico(2).expect("a small ico sphere")),
        materials: per_look,
        mark_mesh: meshes.add(Rectangle::new(1.0, 1.0)),
        hole: materials.add(mark(hole_texture, Color::srgb(0.08, 0.08, 0.08))),
        scorch: materials.add(mark(scorch_texture, Color::srgb(0.05, 0.045, 0.04))),
    });
}

/// A mark's opacity at `(u, v)` (-1..1 from its centre): a soft round spot, a small hard
/// hole or a ragged scorch; clear at the edges so no square shows.
pub fn mark_alpha(scorch: bool, u: f32, v: f32) -> f32 {
    let r = (u * u + v * v).sqrt();
    if scorch {
        // Ragged: the radius wobbles with the angle.
        let a = v.atan2(u);
        let edge = 0.75 + 0.12 * (a * 5.0).sin() + 0.06 * (a * 11.0).cos();
        ((edge - r) / 0.35).clamp(0.0, 1.0) * 0.9
    } else {
        let hole = if r < 0.25 { 1.0 } else { 0.0 };
        let ring = ((0.9 - r) / 0.6).clamp(0.0, 1.0) * 0.5;
        f32::max(hole, ring)
    }
}

/// The texture of a mark, 64 pixels square: white, its shape in the alpha.
fn mark_image(scorch: bool) -> Image {
    const SIZE: u32 = 64;
    let mut data = Vec::with_capacity((SIZE * SIZE * 4) as usize);
    for y in 0..SIZE {
        for x in 0..SIZE {
            let u = (x as f32 + 0.5) / SIZE as f32 * 2.0 - 1.0;
            let v = (y as f32 + 0.5) / SIZE as f32 * 2.0 - 1.0;
            let a = (mark_alpha(scorch, u, v) * 255.0).round() as u8;
            data.extend_from_slice(&[255, 255, 255, a]);
        }
    }
    Image::new(
        Extent3d {
            width: SIZE,
            height: SIZE,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    )
}

/// New particles, from the pool first, within `r_particles`'s budget.
fn emit_particles(
    mut commands: Commands,
    mut emits: MessageReader<Emit>,
    cvars: Res<Cvars>,
    assets: Res<ParticleAssets>,
    mut pool: ResMut<Pool>,
    mut hidden: Query<(
        &mut Particle,
        &mut Transform,
        &mut Visibility,
        &mut MeshMaterial3d<StandardMaterial>,
    )>,
) {
    let level = cvars.read(cvar::R_PARTICLES);
    let budget = budget(level);
    for emit in emits.read() {
        for _ in 0..scaled_count(emit.count, level) {
            if pool.alive >= budget {
                return;
            }
            let dir = pool.rng.direction(emit.dir, emit.spread);
            let speed = emit.speed * (0.6 + 0.8 * pool.rng.next());
            let particle = Particle {
                vel: dir * speed,
                age: 0.0,
                life: emit.life * (0.7 + 0.6 * pool.rng.next()),
                size: emit.size,
                grow: emit.grow,
                gravity: emit.gravity,
                drag: emit.drag,
                look: emit.look,
            };
            let transform = Transform::from_translation(emit.at).with_scale(Vec3::splat(emit.size));
            let material = assets.materials[emit.look.index()][0].clone();
            pool.alive += 1;
            match pool.free.pop() {
                Some(e) => {
                    if let Ok((mut p, mut t, mut v, mut m)) = hidden.get_mut(e) {
                        *p = particle;
                        *t = transform;
                        *v = Visibility::Inherited;
                        m.0 = material;
                    }
                }
                None => {
                    commands.spawn((
                        particle,
                        transform,
                        Visibility::Inherited,
                        Mesh3d(assets.mesh.clone()),
                        MeshMaterial3d(material),
                        bevy::light::NotShadowCaster,
                    ));
                }
            }
        }
    }
}

/// Particles move, grow and fade; the finished go back to the pool.
fn age_particles(
    time: Res<Time>,
    assets: Res<ParticleAssets>,
    mut pool: ResMut<Pool>,
    mut particles: Query<(
        Entity,
        &mut Particle,
        &mut Transform,
        &mut Visibility,
        &mut MeshMaterial3d<StandardMaterial>,
    )>,
) {
    let dt = time.delta_secs().min(0.1);
    for (entity, mut p, mut transform, mut visibility, mut material) in &mut particles {
        if *visibility == Visibility::Hidden {
            continue;
        }
        let step_before = p.fade_step();
        if !p.step(&mut transform.translation, dt) {
            *visibility = Visibility::Hidden;
            pool.free.push(entity);
            pool.alive = pool.alive.saturating_sub(1);
            continue;
        }
        let size = p.current_size();
        transform.scale = if p.look == Look::Spark {
            // Streaks along their flight.
            if let Some(dir) = p.vel.try_normalize() {
                transform.look_to(dir, if dir.y.abs() > 0.99 { Vec3::X } else { Vec3::Y });
            }
            Vec3::new(size, size, size * 6.0)
        } else {
            Vec3::splat(size)
        };
        if p.fade_step() != step_before {
            material.0 = assets.materials[p.look.index()][p.fade_step()].clone();
        }
    }
}

/// New marks on the walls, the oldest making way past [`MAX_MARKS`].
fn place_marks(
    mut commands: Commands,
    time: Res<Time>,
    cvars: Res<Cvars>,
    mut requests: MessageReader<Mark>,
    assets: Res<ParticleAssets>,
    mut marks: ResMut<Marks>,
    mut pool: ResMut<Pool>,
) {
    if cvars.read(cvar::R_PARTICLES) == 0 {
        requests.clear();
        return;
    }
    let now = time.elapsed_secs();
    for mark in requests.read() {
        let Some(normal) = mark.normal.try_normalize() else {
            continue;
        };
        if marks.0.len() >= MAX_MARKS
            && let Some((old, _)) = marks.0.pop_front()
        {
            commands.entity(old).despawn();
        }
        let size = if mark.scorch { 2.2 } else { 0.14 };
        let up = if normal.y.abs() > 0.9 {
            Vec3::X
        } else {
            Vec3::Y
        };
        let turn = pool.rng.next() * std::f32::consts::TAU;
        // The quad faces +Z; turned so +Z is the wall's normal, then spun about it.
        let transform = Transform::from_translation(mark.at + normal * 0.01)
            .looking_to(-normal, up)
            .with_scale(Vec3::splat(size));
        let transform = transform.with_rotation(transform.rotation * Quat::from_rotation_z(turn));
        let entity = commands
            .spawn((
                Mesh3d(assets.mark_mesh.clone()),
                MeshMaterial3d(if mark.scorch {
                    assets.scorch.clone()
                } else {
                    assets.hole.clone()
                }),
                transform,
                MarkVisual,
                bevy::light::NotShadowCaster,
            ))
            .id();
        marks.0.push_back((entity, now));
    }
}

/// Marks go after [`MARK_LIFE`] seconds.
fn age_marks(mut commands: Commands, time: Res<Time>, mut marks: ResMut<Marks>) {
    let now = time.elapsed_secs();
    while let Some(&(entity, born)) = marks.0.front() {
        if now - born < MARK_LIFE {
            break;
        }
        commands.entity(entity).despawn();
        marks.0.pop_front();
    }
}

/// A session's particles and marks go with it; the pool starts afresh.
fn clear_particles_and_marks(
    mut commands: Commands,
    particles: Query<Entity, With<Particle>>,
    marks: Query<Entity, With<MarkVisual>>,
    mut pool: ResMut<Pool>,
    mut kept: ResMut<Marks>,
) {
    for e in particles.iter().chain(marks.iter()) {
        commands.entity(e).despawn();
    }
    pool.free.clear();
    pool.alive = 0;
    kept.0.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spark() -> Particle {
        Particle {
            vel: Vec3::new(2.0, 5.0, 0.0),
            age: 0.0,
            life: 1.0,
            size: 0.1,
            grow: 3.0,
            gravity: 1.0,
            drag: 0.0,
            look: Look::Spark,
        }
    }

    #[test]
    fn particles_age_fall_and_die_on_time() {
        let mut p = spark();
        let mut pos = Vec3::ZERO;
        let mut steps = 0;
        while p.step(&mut pos, 0.01) {
            steps += 1;
            assert!(steps < 1000);
        }
        // 1 s at 100 steps a second, give or take the float sum.
        assert!((99..=100).contains(&steps), "{steps}");
        assert!(pos.x > 1.9 && pos.x < 2.1, "{pos}");
        // Thrown up at 5 m/s for 1 s under gravity: back below where it started.
        assert!(pos.y < 0.5, "{pos}");
        assert_eq!(p.progress(), 1.0);
    }

    #[test]
    fn size_grows_and_fade_steps_advance_with_age() {
        let mut p = spark();
        assert_eq!(p.current_size(), 0.1);
        assert_eq!(p.fade_step(), 0);
        p.age = 0.5;
        assert!((p.current_size() - 0.2).abs() < 1e-6);
        assert_eq!(p.fade_step(), 2);
        p.age = 5.0;
        assert!((p.current_size() - 0.3).abs() < 1e-6);
        assert_eq!(p.fade_step(), FADE_STEPS - 1);
    }

    #[test]
    fn drag_slows_and_never_reverses() {
        let mut p = Particle {
            drag: 50.0,
            gravity: 0.0,
            ..spark()
        };
        let mut pos = Vec3::ZERO;
        p.step(&mut pos, 0.1);
        assert_eq!(p.vel, Vec3::ZERO);
    }

    #[test]
    fn r_particles_scales_counts_and_budget() {
        assert_eq!(scaled_count(10, 0), 0);
        assert_eq!(scaled_count(10, 1), 4);
        assert_eq!(scaled_count(1, 1), 1);
        assert_eq!(scaled_count(10, 2), 10);
        assert_eq!(budget(0), 0);
        assert!(budget(1) < budget(2));
        assert_eq!(budget(2), MAX_PARTICLES);
    }

    #[test]
    fn directions_stay_within_their_spread() {
        let mut rng = Rng(7);
        for _ in 0..200 {
            let d = rng.direction(Vec3::Y, 0.3);
            assert!((d.length() - 1.0).abs() < 1e-4);
            assert!(d.y > 0.5, "{d}");
            let any = rng.direction(Vec3::ZERO, 1.0);
            assert!((any.length() - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn marks_are_clear_at_their_edges() {
        for scorch in [false, true] {
            assert!(mark_alpha(scorch, 0.0, 0.0) > 0.8, "{scorch}");
            for (u, v) in [(1.0, 0.0), (0.0, -1.0), (0.99, 0.99)] {
                assert_eq!(mark_alpha(scorch, u, v), 0.0, "{scorch} {u} {v}");
            }
        }
    }
}
