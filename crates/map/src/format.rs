//! The map format, as read from `maps/*.ron`. Every value is checked while it is read, so
//! an error carries the line it came from.

use bevy::math::{Quat, Vec3};
use serde::Deserialize;

/// A colour, linear RGB in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "(f32, f32, f32)")]
pub struct Rgb(pub [f32; 3]);

impl TryFrom<(f32, f32, f32)> for Rgb {
    type Error = String;
    fn try_from((r, g, b): (f32, f32, f32)) -> Result<Self, String> {
        let c = [r, g, b];
        if c.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)) {
            Ok(Self(c))
        } else {
            Err(format!(
                "colour ({r}, {g}, {b}) must have components between 0 and 1"
            ))
        }
    }
}

/// A point or extent: finite numbers only, within a kilometre of the origin.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "(f32, f32, f32)")]
struct Coord(Vec3);

const WORLD_LIMIT: f32 = 1000.0;

impl TryFrom<(f32, f32, f32)> for Coord {
    type Error = String;
    fn try_from((x, y, z): (f32, f32, f32)) -> Result<Self, String> {
        let v = Vec3::new(x, y, z);
        if v.is_finite() && v.abs().max_element() <= WORLD_LIMIT {
            Ok(Self(v))
        } else {
            Err(format!(
                "({x}, {y}, {z}) must be finite and within {WORLD_LIMIT} m of the origin"
            ))
        }
    }
}

/// Direct sunlight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sun {
    /// Direction the light travels (normalised).
    pub direction: Vec3,
    /// Light colour.
    pub color: Rgb,
    /// Illuminance in lux.
    pub illuminance: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SunFile {
    direction: Coord,
    color: Rgb,
    illuminance: f32,
}

impl<'de> Deserialize<'de> for Sun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = SunFile::deserialize(d)?;
        // Normalised in f64: in f32 the squared length of a tiny vector such as
        // (1e-22, 0, 0) is subnormal, and the result is far from unit length.
        let direction = f
            .direction
            .0
            .as_dvec3()
            .try_normalize()
            .map(|d| d.as_vec3())
            .ok_or_else(|| serde::de::Error::custom("sun direction must not be zero"))?;
        if !(f.illuminance.is_finite() && f.illuminance >= 0.0) {
            return Err(serde::de::Error::custom(
                "sun illuminance must be a finite number of lux, 0 or more",
            ));
        }
        Ok(Self {
            direction,
            color: f.color,
            illuminance: f.illuminance,
        })
    }
}

/// Light that reaches everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "AmbientFile")]
pub struct Ambient {
    /// Light colour.
    pub color: Rgb,
    /// Brightness in Bevy's ambient units.
    pub brightness: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AmbientFile {
    color: Rgb,
    brightness: f32,
}

impl TryFrom<AmbientFile> for Ambient {
    type Error = String;
    fn try_from(f: AmbientFile) -> Result<Self, String> {
        if !(f.brightness.is_finite() && f.brightness >= 0.0) {
            return Err("ambient brightness must be a finite number, 0 or more".into());
        }
        Ok(Self {
            color: f.color,
            brightness: f.brightness,
        })
    }
}

/// A solid piece of level geometry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Brush {
    /// An axis-aligned box between two corners.
    Box {
        /// Lowest corner.
        min: Vec3,
        /// Highest corner.
        max: Vec3,
        /// Surface colour.
        color: Rgb,
    },
    /// A box turned by yaw, pitch and roll (degrees): ramps, tilted walls.
    Rotated {
        /// Centre of the box.
        center: Vec3,
        /// Half its size along its own axes.
        half_extents: Vec3,
        /// Rotation about Y, then X, then Z, in degrees.
        yaw_pitch_roll: Vec3,
        /// Surface colour.
        color: Rgb,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
enum BrushFile {
    Box {
        min: Coord,
        max: Coord,
        color: Rgb,
    },
    Rotated {
        center: Coord,
        half_extents: Coord,
        #[serde(default = "zero")]
        yaw: f32,
        #[serde(default = "zero")]
        pitch: f32,
        #[serde(default = "zero")]
        roll: f32,
        color: Rgb,
    },
}

fn zero() -> f32 {
    0.0
}

impl<'de> Deserialize<'de> for Brush {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match BrushFile::deserialize(d)? {
            BrushFile::Box { min, max, color } => {
                if !min.0.cmplt(max.0).all() {
                    return Err(D::Error::custom(format!(
                        "box min {} must be below max {} on every axis",
                        min.0, max.0
                    )));
                }
                Ok(Brush::Box {
                    min: min.0,
                    max: max.0,
                    color,
                })
            }
            BrushFile::Rotated {
                center,
                half_extents,
                yaw,
                pitch,
                roll,
                color,
            } => {
                if !half_extents.0.cmpgt(Vec3::ZERO).all() {
                    return Err(D::Error::custom(format!(
                        "rotated box half_extents {} must be positive on every axis",
                        half_extents.0
                    )));
                }
                let angles = Vec3::new(yaw, pitch, roll);
                if !angles.is_finite() || angles.abs().max_element() > 360.0 {
                    return Err(D::Error::custom(
                        "rotated box angles must be finite degrees within -360..360",
                    ));
                }
                Ok(Brush::Rotated {
                    center: center.0,
                    half_extents: half_extents.0,
                    yaw_pitch_roll: angles,
                    color,
                })
            }
        }
    }
}

impl Brush {
    /// The box's centre, half extents and orientation.
    pub fn oriented_box(&self) -> (Vec3, Vec3, Quat) {
        match *self {
            Brush::Box { min, max, .. } => ((min + max) * 0.5, (max - min) * 0.5, Quat::IDENTITY),
            Brush::Rotated {
                center,
                half_extents,
                yaw_pitch_roll,
                ..
            } => (center, half_extents, rotation_from_degrees(yaw_pitch_roll)),
        }
    }

    /// The brush's colour hint.
    pub fn color(&self) -> Rgb {
        match *self {
            Brush::Box { color, .. } | Brush::Rotated { color, .. } => color,
        }
    }
}

/// Yaw (Y), then pitch (X), then roll (Z), built with libm so every platform gets the
/// same bits (std's sin/cos may differ between C libraries).
fn rotation_from_degrees(ypr: Vec3) -> Quat {
    let axis_angle = |x: f32, y: f32, z: f32, deg: f32| {
        let half = deg.to_radians() * 0.5;
        let s = libm::sinf(half);
        Quat::from_xyzw(x * s, y * s, z * s, libm::cosf(half))
    };
    axis_angle(0.0, 1.0, 0.0, ypr.x)
        * axis_angle(1.0, 0.0, 0.0, ypr.y)
        * axis_angle(0.0, 0.0, 1.0, ypr.z)
}

/// Where a player may spawn, and which way it faces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpawnPoint {
    /// Feet position.
    pub pos: Vec3,
    /// Facing, radians (0 looks down -Z).
    pub yaw: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnFile {
    pos: Coord,
    #[serde(default = "zero")]
    yaw: f32,
}

impl<'de> Deserialize<'de> for SpawnPoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = SpawnFile::deserialize(d)?;
        if !(f.yaw.is_finite() && f.yaw.abs() <= 360.0) {
            return Err(serde::de::Error::custom(
                "spawn yaw must be finite degrees within -360..360",
            ));
        }
        Ok(Self {
            pos: f.pos.0,
            yaw: f.yaw.to_radians(),
        })
    }
}

/// What an item spot hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum ItemKind {
    /// Restores health.
    Health,
    /// Adds armour.
    Armor,
    /// Refills ammunition.
    Ammo,
    /// The railgun, with a magazine and its reserve.
    Railgun,
    /// The plasma gun, with a magazine and its reserve.
    Plasma,
    /// Quad damage: the holder's damage is tripled for a while.
    Quad,
    /// Regeneration: health comes back by itself for a while.
    Regeneration,
}

impl ItemKind {
    /// Whether it is a power-up (a rare item with a long respawn, announced).
    pub fn is_power_up(self) -> bool {
        matches!(self, ItemKind::Quad | ItemKind::Regeneration)
    }
}

/// A place where an item appears.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemSpot {
    /// What appears here.
    pub kind: ItemKind,
    /// Where it rests.
    pub pos: Vec3,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemFile {
    kind: ItemKind,
    pos: Coord,
}

impl<'de> Deserialize<'de> for ItemSpot {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = ItemFile::deserialize(d)?;
        Ok(Self {
            kind: f.kind,
            pos: f.pos.0,
        })
    }
}

/// Fastest a jump pad may launch a player, m/s.
pub const MAX_PAD_SPEED: f32 = 40.0;

/// A jump pad: a player whose feet are in its box is given its launch velocity (as
/// Quake 3's trigger_push sets it), whatever it was doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JumpPad {
    /// The box's low corner.
    pub min: Vec3,
    /// The box's high corner.
    pub max: Vec3,
    /// The velocity it gives, m/s.
    pub launch: Vec3,
}

impl JumpPad {
    /// Whether feet at `feet` stand in it.
    pub fn holds(&self, feet: Vec3) -> bool {
        feet.cmpge(self.min).all() && feet.cmple(self.max).all()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JumpPadFile {
    min: Coord,
    max: Coord,
    launch: Coord,
}

impl<'de> Deserialize<'de> for JumpPad {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = JumpPadFile::deserialize(d)?;
        if !f.min.0.cmplt(f.max.0).all() {
            return Err(serde::de::Error::custom(format!(
                "jump pad min {} must be below max {} on every axis",
                f.min.0, f.max.0
            )));
        }
        if f.launch.0.length() > MAX_PAD_SPEED {
            return Err(serde::de::Error::custom(format!(
                "jump pad launch {} is faster than {MAX_PAD_SPEED} m/s",
                f.launch.0
            )));
        }
        Ok(Self {
            min: f.min.0,
            max: f.max.0,
            launch: f.launch.0,
        })
    }
}

/// A point light hint for the renderer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Light {
    /// Where the light is.
    pub pos: Vec3,
    /// Light colour.
    pub color: Rgb,
    /// Luminous power in lumens.
    pub intensity: f32,
    /// How far it reaches, metres.
    pub range: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LightFile {
    pos: Coord,
    color: Rgb,
    intensity: f32,
    range: f32,
}

impl<'de> Deserialize<'de> for Light {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = LightFile::deserialize(d)?;
        if !(f.intensity.is_finite() && f.intensity >= 0.0 && f.range.is_finite() && f.range > 0.0)
        {
            return Err(serde::de::Error::custom(
                "light intensity must be 0 or more and range above 0",
            ));
        }
        Ok(Self {
            pos: f.pos.0,
            color: f.color,
            intensity: f.intensity,
            range: f.range,
        })
    }
}

/// Closest two flag bases may stand, m: nearer, a capture is a step.
pub const MIN_BASE_DISTANCE: f32 = 16.0;

/// Where each team's flag stands, on a map made for capture the flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagBases {
    /// The red flag's stand: where red captures.
    pub red: Vec3,
    /// The blue flag's stand.
    pub blue: Vec3,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlagBasesFile {
    red: Coord,
    blue: Coord,
}

impl<'de> Deserialize<'de> for FlagBases {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = FlagBasesFile::deserialize(d)?;
        if f.red.0.distance(f.blue.0) < MIN_BASE_DISTANCE {
            return Err(serde::de::Error::custom(format!(
                "flag bases {} and {} must stand at least {MIN_BASE_DISTANCE} m apart",
                f.red.0, f.blue.0
            )));
        }
        Ok(Self {
            red: f.red.0,
            blue: f.blue.0,
        })
    }
}

/// A field that is there when written: `Some` of it.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A whole map.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapDef {
    /// Name shown to players and sent in the Welcome message.
    pub name: String,
    /// Sky colour.
    pub sky: Rgb,
    /// Sunlight.
    pub sun: Sun,
    /// Ambient light.
    pub ambient: Ambient,
    /// Solid geometry.
    pub brushes: Vec<Brush>,
    /// Spawn points; at least one.
    pub spawns: Vec<SpawnPoint>,
    /// Item spots.
    #[serde(default)]
    pub items: Vec<ItemSpot>,
    /// Point light hints.
    #[serde(default)]
    pub lights: Vec<Light>,
    /// Jump pads.
    #[serde(default)]
    pub jump_pads: Vec<JumpPad>,
    /// The flags' bases, on a map that suits capture the flag (written without `Some`).
    #[serde(default, deserialize_with = "present")]
    pub flags: Option<FlagBases>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_bases_stand_apart() {
        let ok = ron::from_str::<FlagBases>("(red: (-20.0, 0.0, 0.0), blue: (20.0, 0.0, 0.0))");
        assert_eq!(ok.unwrap().blue, Vec3::new(20.0, 0.0, 0.0));
        let near = ron::from_str::<FlagBases>("(red: (0.0, 0.0, 0.0), blue: (3.0, 0.0, 0.0))");
        assert!(near.unwrap_err().to_string().contains("apart"));
        let nan = ron::from_str::<FlagBases>("(red: (NaN, 0.0, 0.0), blue: (30.0, 0.0, 0.0))");
        assert!(nan.is_err());
    }

    #[test]
    fn ambient_brightness_must_be_a_finite_amount() {
        // Found by fuzzing: 1e391 reads as infinity, and NaN and negatives were taken too.
        for bad in ["1e391", "NaN", "inf", "-1.0"] {
            let text = format!("(color: (1.0, 1.0, 1.0), brightness: {bad})");
            let err = ron::from_str::<Ambient>(&text).unwrap_err();
            assert!(
                err.to_string().contains("ambient brightness"),
                "{bad}: {err}"
            );
        }
        let ok = ron::from_str::<Ambient>("(color: (1.0, 1.0, 1.0), brightness: 0.0)").unwrap();
        assert_eq!(ok.brightness, 0.0);
    }

    #[test]
    fn jump_pads_are_boxes_with_a_bounded_launch() {
        let pad = ron::from_str::<JumpPad>(
            "(min: (-1.0, 0.0, -1.0), max: (1.0, 0.3, 1.0), launch: (0.0, 16.0, -12.0))",
        )
        .unwrap();
        assert!(pad.holds(Vec3::new(0.5, 0.0, 0.5)));
        assert!(!pad.holds(Vec3::new(0.5, 0.5, 0.5)), "above it");
        let inverted = "(min: (1.0, 0.0, -1.0), max: (-1.0, 0.3, 1.0), launch: (0.0, 1.0, 0.0))";
        assert!(ron::from_str::<JumpPad>(inverted).is_err());
        let cannon = "(min: (-1.0, 0.0, -1.0), max: (1.0, 0.3, 1.0), launch: (0.0, 99.0, 0.0))";
        let err = ron::from_str::<JumpPad>(cannon).unwrap_err();
        assert!(err.to_string().contains("faster than"), "{err}");
    }

    #[test]
    fn tiny_sun_directions_normalise_to_unit_length() {
        for dir in [
            "(1e-22, 0.0, 0.0)",
            "(1e-20, 1e-21, 0.0)",
            "(0.0, -1000.0, 1e-30)",
        ] {
            let text = format!("(direction: {dir}, color: (1.0, 1.0, 1.0), illuminance: 1.0)");
            let sun = ron::from_str::<Sun>(&text).unwrap_or_else(|e| panic!("{dir}: {e}"));
            assert!(sun.direction.is_normalized(), "{dir}: {}", sun.direction);
        }
        let zero = "(direction: (0.0, 0.0, 0.0), color: (1.0, 1.0, 1.0), illuminance: 1.0)";
        assert!(ron::from_str::<Sun>(zero).is_err());
    }
}
