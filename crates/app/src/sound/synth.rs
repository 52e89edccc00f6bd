//! The game's sounds, synthesised from noise, sines and resonant filters: pure functions
//! from a [`SoundId`] to samples, so the same sound comes out on every run and every
//! machine that computes `sin` alike, and nothing is downloaded or licensed.

use super::announcer::Announcement;
use super::steps::Surface;
use sightline_combat::{ProjectileKind, WeaponKind};
use sightline_map::ItemKind;
use sightline_sim::hash::{hash, unit};
use std::f32::consts::TAU;

/// Samples per second of the generated sounds.
pub const RATE: u32 = 22_050;

/// Footstep recordings per surface, taken in turn so steps do not repeat one sample.
pub const STEP_VARIANTS: u8 = 4;

/// Every sound the game makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoundId {
    /// A weapon going off.
    Shot(WeaponKind),
    /// A hitscan shot striking the map.
    Impact(Surface),
    /// A projectile bursting: a rocket's explosion, a plasma bolt's splash.
    Burst(ProjectileKind),
    /// A footstep on a surface, one of [`STEP_VARIANTS`].
    Step(Surface, u8),
    /// Pushing off the ground.
    Jump,
    /// Coming down on a surface.
    Land(Surface),
    /// Our shot struck someone.
    Hit,
    /// Our shot struck someone's head.
    HeadHit,
    /// We killed someone.
    Kill,
    /// We were hurt.
    Hurt,
    /// An item taken.
    Pickup(ItemKind),
    /// An item back on its spot.
    ItemBack,
    /// A power-up back on its spot: heard across the map.
    PowerUpBack,
    /// The announcer.
    Announce(Announcement),
    /// A projectile in flight, looping for as long as it flies.
    Flight(ProjectileKind),
    /// Our weapon reloading, as long as its reload.
    Reload(WeaponKind),
    /// Our railgun charging.
    Charge,
    /// Our weapon changing hands.
    Switch,
    /// The hum over our shots while quad damage runs.
    QuadShot,
    /// A jump pad launching someone.
    JumpPad,
    /// Someone dying.
    Death,
}

impl SoundId {
    /// The sounds made at start-up: all but the pick-ups, which follow the map's items.
    pub fn made_at_start() -> Vec<SoundId> {
        let mut ids = vec![
            SoundId::Jump,
            SoundId::Hit,
            SoundId::HeadHit,
            SoundId::Kill,
            SoundId::Hurt,
            SoundId::ItemBack,
            SoundId::PowerUpBack,
            SoundId::Charge,
            SoundId::Switch,
            SoundId::QuadShot,
            SoundId::JumpPad,
            SoundId::Death,
        ];
        ids.extend(WeaponKind::ALL.map(SoundId::Shot));
        ids.extend(WeaponKind::ALL.map(SoundId::Reload));
        ids.extend(ProjectileKind::ALL.map(SoundId::Burst));
        ids.extend(ProjectileKind::ALL.map(SoundId::Flight));
        for surface in Surface::ALL {
            ids.push(SoundId::Impact(surface));
            ids.push(SoundId::Land(surface));
            ids.extend((0..STEP_VARIANTS).map(|v| SoundId::Step(surface, v)));
        }
        ids.extend(Announcement::ALL.map(SoundId::Announce));
        ids
    }
}

/// The samples of a sound, each within -1..=1, at [`RATE`].
pub fn samples(id: SoundId) -> Vec<f32> {
    let raw = match id {
        SoundId::Shot(weapon) => shot(weapon),
        SoundId::Impact(surface) => impact(surface),
        SoundId::Burst(kind) => burst(kind),
        SoundId::Step(surface, variant) => step(surface, variant, false),
        SoundId::Jump => jump(),
        SoundId::Land(surface) => step(surface, 0, true),
        SoundId::Hit => hit(),
        SoundId::HeadHit => head_hit(),
        SoundId::Kill => kill(),
        SoundId::Hurt => hurt(),
        SoundId::Pickup(kind) => pickup(kind),
        SoundId::ItemBack => item_back(),
        SoundId::PowerUpBack => power_up_back(),
        SoundId::Announce(a) => announcement(a),
        SoundId::Flight(kind) => return finish_loop(flight(kind)),
        SoundId::Reload(weapon) => reload(weapon),
        SoundId::Charge => charge(),
        SoundId::Switch => switch(),
        SoundId::QuadShot => quad_shot(),
        SoundId::JumpPad => jump_pad(),
        SoundId::Death => death(),
    };
    finish(raw)
}

/// A mono 16-bit PCM WAV file of `samples` (each -1..=1).
pub fn wav(samples: &[f32]) -> Vec<u8> {
    let data_len = (samples.len() * 2) as u32;
    let mut out = Vec::with_capacity(44 + data_len as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&(RATE * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&((s.clamp(-1.0, 1.0) * i16::MAX as f32) as i16).to_le_bytes());
    }
    out
}

// ---- Building blocks -------------------------------------------------------------

/// The time of sample `i`, seconds.
fn time(i: usize) -> f32 {
    i as f32 / RATE as f32
}

fn len(seconds: f32) -> usize {
    (seconds * RATE as f32) as usize
}

/// White noise in -1..1, the same for the same seed and index.
fn noise(seed: u64, i: usize) -> f32 {
    unit(hash(seed, i as u64, 0)) * 2.0 - 1.0
}

/// `seconds` of `f(t, i)`.
fn render(seconds: f32, mut f: impl FnMut(f32, usize) -> f32) -> Vec<f32> {
    (0..len(seconds)).map(|i| f(time(i), i)).collect()
}

/// Rises over `attack` seconds, then decays by e every `decay` seconds.
fn env(t: f32, attack: f32, decay: f32) -> f32 {
    (t / attack).min(1.0) * (-(t - attack).max(0.0) / decay).exp()
}

/// Adds `other` into `into` starting `at` seconds in, times `gain`, growing `into` as
/// needed.
fn mix(into: &mut Vec<f32>, other: &[f32], at: f32, gain: f32) {
    let start = len(at);
    if into.len() < start + other.len() {
        into.resize(start + other.len(), 0.0);
    }
    for (i, s) in other.iter().enumerate() {
        into[start + i] += s * gain;
    }
}

/// A one-pole low-pass: `keep` near 1 keeps only the low end.
fn low_pass(samples: &[f32], keep: f32) -> Vec<f32> {
    let mut y = 0.0;
    samples
        .iter()
        .map(|&x| {
            y = y * keep + x * (1.0 - keep);
            y
        })
        .collect()
}

/// A resonant band-pass (RBJ biquad, 0 dB peak), its centre free to move each sample.
#[derive(Default)]
struct BandPass {
    x1: f32,
    x2: f32,
    y1: f32,
    y2: f32,
}

impl BandPass {
    fn run(&mut self, x: f32, centre: f32, q: f32) -> f32 {
        let w = TAU * centre.clamp(20.0, RATE as f32 * 0.45) / RATE as f32;
        let alpha = w.sin() / (2.0 * q);
        let a0 = 1.0 + alpha;
        let (b0, b2) = (alpha / a0, -alpha / a0);
        let (a1, a2) = (-2.0 * w.cos() / a0, (1.0 - alpha) / a0);
        let y = b0 * x + b2 * self.x2 - a1 * self.y1 - a2 * self.y2;
        (self.x2, self.x1) = (self.x1, x);
        (self.y2, self.y1) = (self.y1, y);
        y
    }
}

/// Noise through a band-pass at `centre(t)` Hz, shaped by `shape(t)`.
fn band_noise(
    seconds: f32,
    seed: u64,
    q: f32,
    centre: impl Fn(f32) -> f32,
    shape: impl Fn(f32) -> f32,
) -> Vec<f32> {
    let mut filter = BandPass::default();
    render(seconds, |t, i| {
        filter.run(noise(seed, i), centre(t), q) * shape(t)
    })
}

/// A sine whose frequency follows `freq(t)` (integrated, so sweeps stay smooth), shaped
/// by `shape(t)`.
fn sweep(seconds: f32, freq: impl Fn(f32) -> f32, shape: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut phase = 0.0f32;
    render(seconds, |t, _| {
        phase = (phase + freq(t) / RATE as f32).fract();
        (TAU * phase).sin() * shape(t)
    })
}

/// Struck metal: inharmonic partials `(Hz, amplitude, decay seconds)`.
fn ring(seconds: f32, partials: &[(f32, f32, f32)]) -> Vec<f32> {
    render(seconds, |t, _| {
        partials
            .iter()
            .map(|&(f, a, d)| (TAU * f * t).sin() * a * env(t, 0.001, d))
            .sum()
    })
}

/// A low thud: a sine falling from `from` to `to` Hz, decaying by e every `decay` s.
fn thud(seconds: f32, from: f32, to: f32, decay: f32) -> Vec<f32> {
    sweep(
        seconds,
        |t| to + (from - to) * (-t / decay).exp(),
        |t| env(t, 0.002, decay),
    )
}

/// A voiced vowel: a buzz at `pitch(t)` Hz through three formant resonators, shaped by
/// `shape(t)`. Enough for a grunt; the formants are a vowel's F1-F3.
fn vowel(
    seconds: f32,
    formants: [f32; 3],
    pitch: impl Fn(f32) -> f32,
    shape: impl Fn(f32) -> f32,
) -> Vec<f32> {
    let mut filters: [BandPass; 3] = Default::default();
    let mut phase = 0.0f32;
    render(seconds, |t, i| {
        phase = (phase + pitch(t) / RATE as f32).fract();
        // A sawtooth glottal buzz with a breath of noise.
        let source = (1.0 - 2.0 * phase) + noise(77, i) * 0.15;
        let gains = [1.0, 0.6, 0.3];
        let voiced: f32 = filters
            .iter_mut()
            .zip(formants)
            .zip(gains)
            .map(|((f, centre), g)| f.run(source, centre, 8.0) * g)
            .sum();
        voiced * shape(t)
    })
}

/// A musical note at `freq` Hz, `seconds` long: `partials` harmonics falling off as 1/k,
/// a soft attack and a decay, with a slight vibrato when `vibrato`.
fn note(freq: f32, seconds: f32, partials: u32, decay: f32, vibrato: bool) -> Vec<f32> {
    let mut phase = 0.0f32;
    render(seconds, |t, _| {
        let wobble = if vibrato {
            1.0 + 0.006 * (TAU * 5.5 * t).sin()
        } else {
            1.0
        };
        phase = (phase + freq * wobble / RATE as f32).fract();
        let tone: f32 = (1..=partials)
            .map(|k| (TAU * phase * k as f32).sin() / k as f32)
            .sum();
        // Release over the last 40 ms so notes never click.
        let release = ((seconds - t) / 0.04).clamp(0.0, 1.0);
        tone * env(t, 0.008, decay) * release
    })
}

/// A short echo, as off nearby walls.
fn echo(samples: &[f32], delay: f32, gain: f32) -> Vec<f32> {
    let mut out = samples.to_vec();
    mix(&mut out, samples, delay, gain);
    out
}

/// Scales to a peak of 0.9, fades the last 5 ms (no click) and clamps into range.
fn finish(mut samples: Vec<f32>) -> Vec<f32> {
    let peak = samples
        .iter()
        .filter(|s| s.is_finite())
        .fold(0.0f32, |m, s| m.max(s.abs()));
    let gain = if peak > 1e-6 { 0.9 / peak } else { 0.0 };
    let n = samples.len();
    let fade = len(0.005).min(n);
    for (i, s) in samples.iter_mut().enumerate() {
        let tail = ((n - i) as f32 / fade.max(1) as f32).min(1.0);
        *s = if s.is_finite() {
            (*s * gain * tail).clamp(-1.0, 1.0)
        } else {
            0.0
        };
    }
    samples
}

/// Length of the crossfade that joins a loop's end to its start, s.
const LOOP_JOIN: f32 = 0.05;

/// A loop of `samples` less [`LOOP_JOIN`]: its last moments faded into its first, so it
/// repeats without a seam, scaled to a peak of 0.9.
fn finish_loop(samples: Vec<f32>) -> Vec<f32> {
    let join = len(LOOP_JOIN).min(samples.len() / 2);
    let body = samples.len() - join;
    let mut out = samples[..body].to_vec();
    for i in 0..join {
        let w = i as f32 / join as f32;
        out[i] = samples[i] * w + samples[body + i] * (1.0 - w);
    }
    let peak = out.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let gain = if peak > 1e-6 { 0.9 / peak } else { 0.0 };
    out.iter().map(|s| (s * gain).clamp(-1.0, 1.0)).collect()
}

/// A semitone above A4 (440 Hz) by `n`.
fn pitch(n: i32) -> f32 {
    440.0 * 2f32.powf(n as f32 / 12.0)
}

// ---- The sounds ------------------------------------------------------------------

fn shot(weapon: WeaponKind) -> Vec<f32> {
    match weapon {
        WeaponKind::Rifle => {
            let mut s = render(0.22, |t, i| noise(1, i) * (-t * 45.0).exp());
            let body = low_pass(&render(0.22, |t, i| noise(11, i) * (-t * 14.0).exp()), 0.7);
            mix(&mut s, &body, 0.0, 1.5);
            mix(&mut s, &thud(0.22, 160.0, 70.0, 0.05), 0.0, 0.7);
            echo(&s, 0.05, 0.25)
        }
        WeaponKind::Shotgun => {
            let mut s = low_pass(&render(0.5, |t, i| noise(2, i) * (-t * 9.0).exp()), 0.6);
            mix(
                &mut s,
                &render(0.1, |t, i| noise(12, i) * (-t * 60.0).exp()),
                0.0,
                0.4,
            );
            mix(&mut s, &thud(0.4, 110.0, 50.0, 0.09), 0.0, 0.8);
            echo(&s, 0.07, 0.3)
        }
        WeaponKind::Rockets => {
            let whoosh = band_noise(0.6, 3, 1.2, |t| 400.0 + 2200.0 * t, |t| env(t, 0.03, 0.25));
            let mut s = whoosh;
            mix(&mut s, &thud(0.3, 130.0, 60.0, 0.07), 0.0, 0.12);
            mix(
                &mut s,
                &render(0.05, |t, i| noise(13, i) * (-t * 80.0).exp()),
                0.0,
                0.08,
            );
            s
        }
        WeaponKind::Railgun => {
            // A charged zap: a falling whine, an electric hum and a sizzle.
            let mut s = sweep(
                0.8,
                |t| 300.0 + 2700.0 * (-t * 9.0).exp(),
                |t| env(t, 0.002, 0.18),
            );
            mix(
                &mut s,
                &sweep(0.8, |_| 180.0, |t| env(t, 0.002, 0.3) * 0.5),
                0.0,
                0.6,
            );
            let sizzle = band_noise(0.8, 4, 0.8, |_| 5000.0, |t| env(t, 0.001, 0.12));
            mix(&mut s, &sizzle, 0.0, 0.8);
            s
        }
        WeaponKind::Plasma => {
            // A short buzzy "pew": a saturated falling tone.
            let tone = sweep(
                0.14,
                |t| 500.0 + 900.0 * (-t * 25.0).exp(),
                |t| env(t, 0.002, 0.045),
            );
            let mut s: Vec<f32> = tone.iter().map(|x| (x * 3.0).tanh()).collect();
            mix(
                &mut s,
                &render(0.03, |t, i| noise(14, i) * (-t * 120.0).exp()),
                0.0,
                0.2,
            );
            s
        }
    }
}

fn impact(surface: Surface) -> Vec<f32> {
    match surface {
        Surface::Concrete => {
            let mut s = band_noise(0.1, 21, 1.5, |_| 2500.0, |t| env(t, 0.0005, 0.015));
            let grit = low_pass(&render(0.1, |t, i| noise(22, i) * env(t, 0.001, 0.02)), 0.6);
            mix(&mut s, &grit, 0.0, 1.0);
            s
        }
        Surface::Metal => {
            let mut s = ring(
                0.3,
                &[
                    (1850.0, 1.0, 0.08),
                    (2960.0, 0.6, 0.06),
                    (4230.0, 0.4, 0.04),
                ],
            );
            mix(
                &mut s,
                &render(0.01, |t, i| noise(23, i) * (-t * 400.0).exp()),
                0.0,
                0.8,
            );
            s
        }
        Surface::Hollow => {
            let mut s = band_noise(0.14, 24, 4.0, |_| 520.0, |t| env(t, 0.0005, 0.025));
            mix(&mut s, &thud(0.14, 360.0, 300.0, 0.025), 0.0, 0.4);
            s
        }
    }
}

fn burst(kind: ProjectileKind) -> Vec<f32> {
    match kind {
        ProjectileKind::Rocket => explosion(),
        ProjectileKind::Plasma => {
            // A wet electric pop.
            let mut s = band_noise(
                0.2,
                43,
                2.0,
                |t| 2500.0 - 8000.0 * t,
                |t| env(t, 0.001, 0.04),
            );
            mix(
                &mut s,
                &sweep(0.2, |t| 900.0 - 2500.0 * t, |t| env(t, 0.001, 0.03)),
                0.0,
                0.5,
            );
            s
        }
        ProjectileKind::PlasmaBall => {
            let mut s = low_pass(&render(0.7, |t, i| noise(44, i) * env(t, 0.003, 0.15)), 0.8);
            mix(
                &mut s,
                &sweep(
                    0.7,
                    |t| 120.0 + 600.0 * (-t * 12.0).exp(),
                    |t| env(t, 0.002, 0.12),
                ),
                0.0,
                0.8,
            );
            let sizzle = band_noise(0.5, 45, 1.0, |_| 4500.0, |t| env(t, 0.002, 0.1));
            mix(&mut s, &sizzle, 0.0, 0.6);
            s
        }
    }
}

/// A reload over the weapon's reload time: the magazine out, the new one in two thirds
/// of the way through, the action worked at the end.
fn reload(weapon: WeaponKind) -> Vec<f32> {
    let length = weapon.def().reload_time.clamp(0.3, 3.0);
    let seed = 80 + weapon.index() as u64 * 3;
    let click = |seed, centre: f32, decay| {
        band_noise(
            0.08,
            seed,
            1.5,
            move |_| centre,
            move |t| env(t, 0.0005, decay),
        )
    };
    let mut s = vec![0.0; len(length)];
    mix(&mut s, &click(seed, 2200.0, 0.01), 0.05, 0.8);
    let slide = band_noise(
        0.15,
        seed + 1,
        1.0,
        |t| 1500.0 + 3000.0 * t,
        |t| env(t, 0.04, 0.04),
    );
    mix(&mut s, &slide, 0.1, 0.4);
    mix(&mut s, &click(seed + 2, 1500.0, 0.015), length * 0.66, 1.0);
    mix(&mut s, &thud(0.08, 200.0, 120.0, 0.02), length * 0.66, 0.3);
    mix(&mut s, &click(seed + 3, 2800.0, 0.008), length - 0.2, 0.8);
    mix(&mut s, &click(seed + 4, 2000.0, 0.012), length - 0.12, 1.0);
    s.truncate(len(length));
    s
}

/// The railgun's capacitor charging: a whine rising over its charge time.
fn charge() -> Vec<f32> {
    let length = WeaponKind::Railgun.def().charge_time.clamp(0.1, 2.0) + 0.1;
    let mut s = sweep(
        length,
        |t| 400.0 + 2400.0 * t / length,
        |t| (t / length).min(1.0),
    );
    mix(
        &mut s,
        &sweep(
            length,
            |t| 1200.0 + 7200.0 * t / length,
            |t| (t / length).powi(2),
        ),
        0.0,
        0.3,
    );
    s
}

/// A weapon brought up: cloth and a latch.
fn switch() -> Vec<f32> {
    let mut s = band_noise(0.12, 91, 0.8, |_| 1500.0, |t| env(t, 0.02, 0.03));
    mix(
        &mut s,
        &band_noise(0.05, 92, 2.0, |_| 3000.0, |t| env(t, 0.0005, 0.006)),
        0.1,
        1.0,
    );
    s
}

/// Quad damage over a shot: a deep, distorted throb.
fn quad_shot() -> Vec<f32> {
    let tone = sweep(
        0.45,
        |t| 55.0 + 20.0 * (-t * 8.0).exp(),
        |t| env(t, 0.005, 0.15),
    );
    let mut s: Vec<f32> = tone.iter().map(|x| (x * 2.5).tanh()).collect();
    mix(&mut s, &note(pitch(-21), 0.45, 6, 0.15, true), 0.0, 0.4);
    s
}

/// A jump pad's launch: a deep rising whoomp and a rush of air.
fn jump_pad() -> Vec<f32> {
    let mut s = sweep(0.5, |t| 70.0 + 500.0 * t * t, |t| env(t, 0.01, 0.15));
    let rush = band_noise(0.5, 93, 0.9, |t| 500.0 + 3000.0 * t, |t| env(t, 0.05, 0.12));
    mix(&mut s, &rush, 0.0, 1.2);
    s
}

/// What a projectile sounds like in flight (steady, to loop).
fn flight(kind: ProjectileKind) -> Vec<f32> {
    match kind {
        // A rocket motor: a low roar and a hiss.
        ProjectileKind::Rocket => {
            let mut s = low_pass(&render(0.6, |_, i| noise(71, i)), 0.9);
            mix(
                &mut s,
                &band_noise(0.6, 72, 0.8, |_| 3000.0, |_| 1.0),
                0.0,
                0.3,
            );
            s
        }
        // A plasma bolt: a thin buzz.
        ProjectileKind::Plasma => {
            let buzz = sweep(0.3, |_| 330.0, |_| 1.0);
            buzz.iter().map(|x| (x * 4.0).tanh()).collect()
        }
        // A plasma ball: a warbling electric hum.
        ProjectileKind::PlasmaBall => sweep(
            0.6,
            |t| 150.0 + 25.0 * (TAU * 5.0 * t).sin(),
            |t| 0.8 + 0.2 * (TAU * 10.0 * t).sin(),
        ),
    }
}

fn explosion() -> Vec<f32> {
    // Noise low-passed twice (12 dB an octave above 300 Hz): a boom, not a hiss.
    let roar = render(1.4, |t, i| noise(4, i) * env(t, 0.004, 0.35));
    let mut s = low_pass(&low_pass(&roar, 0.92), 0.92);
    mix(&mut s, &thud(1.2, 70.0, 38.0, 0.3), 0.0, 0.1);
    // Debris: sparse crackles dying away.
    let crackle = render(1.0, |_, i| {
        let h = unit(hash(41, i as u64, 1));
        if h > 0.997 { noise(42, i) } else { 0.0 }
    });
    let crackle: Vec<f32> = crackle
        .iter()
        .enumerate()
        .map(|(i, c)| c * (-time(i) * 4.0).exp())
        .collect();
    mix(&mut s, &low_pass(&crackle, 0.6), 0.05, 0.02);
    s
}

/// A footstep, or a landing (`heavy`: both feet, lower and longer).
fn step(surface: Surface, variant: u8, heavy: bool) -> Vec<f32> {
    let seed = 100 + u64::from(variant) * 7 + surface as u64 * 1000 + u64::from(heavy) * 500;
    // Each variant a little higher or lower, so a run does not sound like one sample.
    let tune = 1.0 + 0.05 * (f32::from(variant) - 1.5);
    let weight = if heavy { 1.8 } else { 1.0 };
    let heel = low_pass(
        &render(0.12 * weight, |t, i| {
            noise(seed, i) * env(t, 0.002, 0.022 * weight)
        }),
        0.85,
    );
    let mut s = heel;
    mix(
        &mut s,
        &thud(0.1 * weight, 120.0 * tune, 60.0, 0.02 * weight),
        0.0,
        0.05,
    );
    let scuff = band_noise(
        0.08,
        seed + 1,
        1.0,
        |_| 3200.0 * tune,
        |t| env(t, 0.01, 0.02),
    );
    mix(&mut s, &scuff, 0.01, 0.25);
    match surface {
        Surface::Concrete => {}
        Surface::Metal => {
            let clang = ring(
                0.25 * weight,
                &[
                    (420.0 * tune, 0.5, 0.05),
                    (1130.0 * tune, 0.35, 0.04),
                    (2380.0 * tune, 0.25, 0.03),
                ],
            );
            mix(&mut s, &clang, 0.0, 0.12);
        }
        Surface::Hollow => {
            let knock = band_noise(
                0.18 * weight,
                seed + 2,
                5.0,
                |_| 190.0 * tune,
                |t| env(t, 0.002, 0.04),
            );
            mix(&mut s, &knock, 0.0, 2.5);
        }
    }
    if heavy {
        // The second foot, a moment later.
        let first = s.clone();
        mix(&mut s, &first, 0.035, 0.6);
    }
    s
}

fn jump() -> Vec<f32> {
    // A short "hup" and the rustle of clothes.
    let mut s = vowel(
        0.2,
        [640.0, 1190.0, 2390.0],
        |t| 140.0 + 200.0 * t,
        |t| env(t, 0.02, 0.05),
    );
    let cloth = band_noise(0.15, 31, 0.7, |_| 1800.0, |t| env(t, 0.01, 0.04));
    mix(&mut s, &cloth, 0.0, 0.3);
    s
}

fn hurt() -> Vec<f32> {
    // "Ah", falling, over a body blow.
    let mut s = vowel(
        0.35,
        [730.0, 1090.0, 2440.0],
        |t| 200.0 - 180.0 * t,
        |t| env(t, 0.01, 0.12),
    );
    mix(&mut s, &thud(0.15, 100.0, 50.0, 0.04), 0.0, 0.15);
    s
}

fn death() -> Vec<f32> {
    // A long "argh" sliding down, and the body hitting the floor.
    let mut s = vowel(
        0.7,
        [700.0, 1200.0, 2500.0],
        |t| 230.0 - 180.0 * t,
        |t| env(t, 0.02, 0.25),
    );
    mix(&mut s, &thud(0.3, 90.0, 45.0, 0.06), 0.55, 0.4);
    s
}

fn hit() -> Vec<f32> {
    render(0.07, |t, _| (TAU * 1900.0 * t).sin() * (-t * 50.0).exp())
}

fn head_hit() -> Vec<f32> {
    ring(0.16, &[(2600.0, 1.0, 0.04), (3900.0, 0.5, 0.03)])
}

fn kill() -> Vec<f32> {
    let mut s = note(pitch(15), 0.2, 3, 0.08, false);
    mix(&mut s, &note(pitch(22), 0.35, 3, 0.12, false), 0.09, 1.0);
    s
}

fn pickup(kind: ItemKind) -> Vec<f32> {
    match kind {
        ItemKind::Health => {
            // A soft rising fifth.
            let mut s = note(pitch(3), 0.16, 2, 0.1, false);
            mix(&mut s, &note(pitch(10), 0.25, 2, 0.12, false), 0.08, 0.9);
            s
        }
        ItemKind::Armor => {
            let mut s = ring(
                0.35,
                &[(310.0, 0.6, 0.1), (770.0, 0.5, 0.08), (1560.0, 0.3, 0.05)],
            );
            mix(
                &mut s,
                &sweep(0.3, |t| 300.0 + 600.0 * t, |t| env(t, 0.02, 0.1)),
                0.05,
                0.5,
            );
            s
        }
        ItemKind::Ammo => {
            // Two clicks of a magazine going home.
            let click = |seed| band_noise(0.04, seed, 2.0, |_| 3500.0, |t| env(t, 0.0005, 0.006));
            let mut s = click(51);
            mix(&mut s, &click(52), 0.08, 1.2);
            mix(&mut s, &ring(0.1, &[(1200.0, 0.3, 0.02)]), 0.08, 0.5);
            s
        }
        ItemKind::Railgun | ItemKind::Plasma => {
            // A weapon taken up: a heavy clack and the bolt racked, the railgun's with its
            // capacitor's whine, the plasma gun's with a hum.
            let clack = |seed| band_noise(0.06, seed, 1.5, |_| 1800.0, |t| env(t, 0.0005, 0.012));
            let mut s = clack(53);
            mix(&mut s, &thud(0.1, 150.0, 80.0, 0.03), 0.0, 0.3);
            let slide = band_noise(
                0.12,
                54,
                1.0,
                |t| 2500.0 + 4000.0 * t,
                |t| env(t, 0.03, 0.04),
            );
            mix(&mut s, &slide, 0.1, 0.6);
            mix(&mut s, &clack(55), 0.22, 1.0);
            let charge = if kind == ItemKind::Railgun {
                sweep(0.45, |t| 600.0 + 3000.0 * t, |t| env(t, 0.2, 0.1))
            } else {
                sweep(0.45, |_| 220.0, |t| env(t, 0.1, 0.15))
            };
            mix(&mut s, &charge, 0.25, 0.3);
            s
        }
        ItemKind::Quad => {
            // A deep, throbbing power chord.
            let mut s = Vec::new();
            for (n, gain) in [(-21, 1.0), (-14, 0.7), (-9, 0.5)] {
                mix(&mut s, &note(pitch(n), 1.0, 8, 0.5, true), 0.0, gain);
            }
            render(s.len() as f32 / RATE as f32, |t, i| {
                s[i.min(s.len() - 1)] * (0.7 + 0.3 * (TAU * 8.0 * t).sin())
            })
        }
        ItemKind::Regeneration => {
            // A rising, shimmering arpeggio.
            let notes: Vec<_> = [3, 7, 10, 15, 19, 22]
                .iter()
                .enumerate()
                .map(|(i, &n)| (n, i as f32 * 0.07, 0.4))
                .collect();
            phrase(&notes, 2, true)
        }
    }
}

fn power_up_back() -> Vec<f32> {
    // A long swell with a bright chord on top.
    let mut s = band_noise(1.0, 62, 1.5, |t| 200.0 + 2500.0 * t, |t| env(t, 0.5, 0.2));
    mix(
        &mut s,
        &phrase(&[(3, 0.0, 0.8), (10, 0.0, 0.8), (15, 0.0, 0.8)], 4, true),
        0.45,
        0.5,
    );
    s
}

fn item_back() -> Vec<f32> {
    let mut s = band_noise(0.5, 61, 2.0, |t| 300.0 + 3400.0 * t, |t| env(t, 0.15, 0.12));
    mix(&mut s, &note(pitch(15), 0.3, 1, 0.1, false), 0.2, 0.15);
    s
}

/// A phrase of `(semitones above A4, start s, length s)` notes.
fn phrase(notes: &[(i32, f32, f32)], partials: u32, vibrato: bool) -> Vec<f32> {
    let mut s = Vec::new();
    for &(n, at, length) in notes {
        mix(
            &mut s,
            &note(pitch(n), length, partials, length * 0.6, vibrato),
            at,
            1.0,
        );
    }
    s
}

/// Each announcement its own jingle: brass for the frag lead, bells for the clock, a
/// fanfare or a falling cadence at the end of a match.
fn announcement(a: Announcement) -> Vec<f32> {
    let (c5, e5, g5, c6) = (3, 7, 10, 15);
    match a {
        Announcement::LeadTaken => phrase(
            &[
                (c5, 0.0, 0.12),
                (e5, 0.1, 0.12),
                (g5, 0.2, 0.12),
                (c6, 0.3, 0.6),
            ],
            6,
            true,
        ),
        Announcement::LeadTied => phrase(
            &[
                (e5, 0.0, 0.15),
                (e5, 0.18, 0.15),
                (0, 0.36, 0.6),
                (e5, 0.36, 0.6),
            ],
            6,
            true,
        ),
        Announcement::LeadLost => phrase(
            &[
                (g5 - 12, 0.0, 0.18),
                (c5 - 9, 0.17, 0.18),
                (c5 - 12, 0.34, 0.7),
            ],
            6,
            true,
        ),
        Announcement::FiveMinutes => {
            let mut pips: Vec<(i32, f32, f32)> =
                (0..5).map(|i| (12, i as f32 * 0.14, 0.12)).collect();
            pips.push((c5, 0.75, 0.8));
            phrase(&pips, 3, false)
        }
        Announcement::OneMinute => phrase(
            &[
                (19, 0.0, 0.16),
                (c6, 0.16, 0.16),
                (19, 0.32, 0.16),
                (c6, 0.48, 0.16),
                (19, 0.64, 0.7),
            ],
            3,
            false,
        ),
        Announcement::MatchWon => phrase(
            &[
                (c5, 0.0, 0.12),
                (c5, 0.13, 0.12),
                (c5, 0.26, 0.12),
                (g5, 0.39, 0.35),
                (c6, 0.75, 1.2),
                (g5, 0.75, 1.2),
                (e5, 0.75, 1.2),
            ],
            6,
            true,
        ),
        // Flags: a bright rising call when we take theirs, a low alarm when they take
        // ours, a chime when one goes home, and a short fanfare for a capture (a
        // falling one for theirs).
        Announcement::FlagTaken => phrase(
            &[(c5, 0.0, 0.14), (g5, 0.14, 0.14), (c6, 0.28, 0.5)],
            4,
            false,
        ),
        Announcement::FlagLost => phrase(
            &[
                (c5 - 12, 0.0, 0.2),
                (6 - 12, 0.22, 0.2),
                (c5 - 12, 0.44, 0.2),
                (6 - 12, 0.66, 0.4),
            ],
            5,
            false,
        ),
        Announcement::FlagReturned => phrase(&[(g5, 0.0, 0.3), (e5, 0.2, 0.6)], 2, false),
        Announcement::TeamScored => phrase(
            &[
                (g5, 0.0, 0.12),
                (c6, 0.12, 0.12),
                (e5 + 12, 0.24, 0.7),
                (c6, 0.24, 0.7),
            ],
            6,
            true,
        ),
        Announcement::EnemyScored => phrase(
            &[(e5, 0.0, 0.2), (c5, 0.2, 0.2), (g5 - 12, 0.4, 0.7)],
            6,
            true,
        ),
        Announcement::MatchOver => phrase(
            &[
                (g5 - 12, 0.0, 0.22),
                (5 - 12, 0.22, 0.22),
                (e5 - 12, 0.44, 0.22),
                (2 - 12, 0.66, 0.22),
                (c5 - 12, 0.88, 1.1),
                (c5 - 24, 0.88, 1.1),
            ],
            6,
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sound that ends (flight loops have their own test), pick-ups included.
    fn every_sound() -> Vec<SoundId> {
        let mut ids: Vec<SoundId> = SoundId::made_at_start()
            .into_iter()
            .filter(|id| !matches!(id, SoundId::Flight(_)))
            .collect();
        ids.extend(
            [
                ItemKind::Health,
                ItemKind::Armor,
                ItemKind::Ammo,
                ItemKind::Railgun,
                ItemKind::Plasma,
                ItemKind::Quad,
                ItemKind::Regeneration,
            ]
            .map(SoundId::Pickup),
        );
        ids
    }

    #[test]
    fn flight_loops_repeat_without_a_seam() {
        for kind in ProjectileKind::ALL {
            let s = samples(SoundId::Flight(kind));
            assert_eq!(s, samples(SoundId::Flight(kind)));
            assert!(s.len() as f32 / RATE as f32 >= 0.2, "{kind:?}");
            assert!(s.iter().all(|x| x.is_finite() && (-1.0..=1.0).contains(x)));
            // Across the join the wave moves no more than it does within the loop.
            let largest_step = s
                .windows(2)
                .map(|w| (w[1] - w[0]).abs())
                .fold(0.0, f32::max);
            let join = (s[0] - s[s.len() - 1]).abs();
            assert!(join <= largest_step, "{kind:?} jumps {join} at the seam");
        }
    }

    #[test]
    fn every_sound_is_deterministic_in_range_audible_and_ends_quietly() {
        for id in every_sound() {
            let s = samples(id);
            assert_eq!(s, samples(id), "{id:?} the same every time");
            let seconds = s.len() as f32 / RATE as f32;
            assert!((0.03..=2.5).contains(&seconds), "{id:?} lasts {seconds} s");
            assert!(
                s.iter().all(|x| x.is_finite() && (-1.0..=1.0).contains(x)),
                "{id:?} in range"
            );
            let peak = s.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!((0.85..=0.91).contains(&peak), "{id:?} peaks at {peak}");
            let last = s[s.len() - 1].abs();
            assert!(last < 0.01, "{id:?} ends on {last}, a click");
        }
    }

    #[test]
    fn sounds_differ_from_one_another() {
        let ids = every_sound();
        let all: Vec<_> = ids.iter().map(|&id| samples(id)).collect();
        for (i, a) in all.iter().enumerate() {
            for (j, b) in all.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{:?} and {:?} are the same sound", ids[i], ids[j]);
            }
        }
    }

    #[test]
    fn sound_energy_sits_where_the_recipe_puts_it() {
        // The energy-weighted mean frequency, Hz: for a sine of f Hz the differences
        // between samples carry (2 pi f / RATE)^2 times its energy.
        let centre = |id| {
            let s = samples(id);
            let energy: f32 = s.iter().map(|x| x * x).sum();
            let change: f32 = s.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
            (change / energy).sqrt() * RATE as f32 / TAU
        };
        let explosion = centre(SoundId::Burst(ProjectileKind::Rocket));
        let metal = centre(SoundId::Impact(Surface::Metal));
        let (kill, hurt) = (centre(SoundId::Kill), centre(SoundId::Hurt));
        let hit = centre(SoundId::Hit);
        assert!(explosion < 600.0, "an explosion rumbles: {explosion} Hz");
        assert!(metal > 1500.0, "metal rings: {metal} Hz");
        assert!(kill > hurt, "a chime {kill} Hz over a grunt {hurt} Hz");
        assert!(
            (1700.0..2100.0).contains(&hit),
            "the hit tick at 1900 Hz: {hit} Hz"
        );
    }

    #[test]
    fn generated_wav_files_are_well_formed() {
        let s = samples(SoundId::Hit);
        let bytes = wav(&s);
        assert_eq!(&bytes[0..4], b"RIFF");
        assert_eq!(&bytes[8..16], b"WAVEfmt ");
        let data_len = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
        assert_eq!(data_len, s.len() * 2);
        assert_eq!(bytes.len(), 44 + data_len);
        assert_eq!(
            u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize,
            bytes.len() - 8
        );
        // Samples beyond full scale are clamped, not wrapped.
        let loud = wav(&[2.0, -2.0]);
        assert_eq!(i16::from_le_bytes([loud[44], loud[45]]), i16::MAX);
        assert_eq!(i16::from_le_bytes([loud[46], loud[47]]), -i16::MAX);
    }
}
