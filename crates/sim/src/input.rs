//! The input command: everything a player may ask of the simulation in one tick, and the
//! sanitizer every command passes through before the simulation sees it.

use serde::{Deserialize, Serialize};
use std::f32::consts::{PI, TAU};
use std::fmt;

/// Largest pitch a command may carry, in degrees; more would flip the view over the pole.
pub const MAX_PITCH_DEG: f32 = 89.0;
/// Number of selectable weapon slots (1..=WEAPON_SLOTS); 0 means "keep the current one".
pub const WEAPON_SLOTS: u8 = 5;

/// Buttons held during a command, as bits.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Buttons(pub u8);

impl Buttons {
    /// Jump (edge-triggered by the movement code: hold does not bunny-hop).
    pub const JUMP: Self = Self(1 << 0);
    /// Crouch: smaller hull, slower movement.
    pub const CROUCH: Self = Self(1 << 1);
    /// Primary fire.
    pub const FIRE: Self = Self(1 << 2);
    /// Secondary fire.
    pub const ALT_FIRE: Self = Self(1 << 3);
    /// Reload the current weapon.
    pub const RELOAD: Self = Self(1 << 4);
    /// Every bit that means something; others are cleared by the sanitizer.
    pub const ALL: Self = Self(0b1_1111);
    /// The buttons whose press is a moment, not a state: jump, fire, alternate fire,
    /// reload. A repeat standing in for a missing command releases them, and a press of
    /// one the server never ran is carried to the next command rather than lost.
    pub const ONE_SHOT: Self = Self::JUMP
        .with(Self::FIRE)
        .with(Self::ALT_FIRE)
        .with(Self::RELOAD);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// These buttons with `other`'s bits set too.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// These buttons with `other`'s bits cleared.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The [`Self::ONE_SHOT`] buttons pressed here that were not held in `before`.
    pub const fn presses_after(self, before: Self) -> Self {
        Self(self.0 & Self::ONE_SHOT.0 & !before.0)
    }
}

/// One tick of a player's input.
///
/// Directions are relative to the view: `forward` and `right` each lie in -1..=1 and the
/// pair is at most unit length once sanitized. Angles are radians; yaw 0 looks down -Z
/// and grows turning left, pitch grows looking up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InputCmd {
    /// Client-assigned sequence number, one per tick, starting at 1.
    pub seq: u32,
    /// The client's tick when it sampled this command.
    pub client_tick: u32,
    /// Wish to move forward (+) or back (-).
    pub forward: f32,
    /// Wish to move right (+) or left (-).
    pub right: f32,
    /// View yaw in radians.
    pub yaw: f32,
    /// View pitch in radians.
    pub pitch: f32,
    /// Buttons held.
    pub buttons: Buttons,
    /// Weapon slot to switch to, 1..=[`WEAPON_SLOTS`], or 0 to keep the current one.
    pub weapon_slot: u8,
    /// The server tick the client was drawing other players at when it sampled this
    /// command (whole part), for lag compensation.
    pub view_tick: u32,
    /// The fraction between `view_tick` and the next, in 1/65536ths; on a multiple of
    /// [`VIEW_FRAC_STEP`] once sanitized.
    pub view_frac: u16,
}

/// Why a command was refused by [`InputCmd::sanitized`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanitizeError {
    /// A direction or angle was NaN or infinite.
    NonFinite,
}

impl fmt::Display for SanitizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite => f.write_str("input command holds a NaN or infinite number"),
        }
    }
}

impl std::error::Error for SanitizeError {}

impl InputCmd {
    /// The single gate through which commands enter the simulation, on server and client.
    ///
    /// Refuses non-finite numbers (they would poison the player state for good), clamps
    /// pitch to +-[`MAX_PITCH_DEG`], wraps yaw into -pi..pi, limits the wish direction to
    /// unit length (no faster diagonals), clears unknown buttons, ignores weapon slots
    /// out of range and puts the view time's fraction on [`VIEW_FRAC_STEP`].
    pub fn sanitized(mut self) -> Result<Self, SanitizeError> {
        let numbers = [self.forward, self.right, self.yaw, self.pitch];
        if numbers.iter().any(|n| !n.is_finite()) {
            return Err(SanitizeError::NonFinite);
        }
        let max_pitch = MAX_PITCH_DEG.to_radians();
        // On the angle grid, and never past the limit (which is not a step): the last
        // step short of it is as far as a view tilts. Snapping twice changes nothing.
        let pitch = angle_steps(self.pitch.clamp(-max_pitch, max_pitch));
        self.pitch = angle_of_steps(pitch.clamp(-MAX_PITCH_STEPS, MAX_PITCH_STEPS));
        self.yaw = angle_of_steps(angle_steps(wrap_angle(self.yaw)));
        // Clamp each axis first so huge values cannot overflow the length.
        self.forward = self.forward.clamp(-1.0, 1.0);
        self.right = self.right.clamp(-1.0, 1.0);
        // Rescaled vectors can come out a rounding error above 1; leaving those alone makes
        // the sanitizer idempotent, so the client (which sanitizes before predicting) and
        // the server (which sanitizes again) simulate exactly the same bits.
        let len_sq = self.forward * self.forward + self.right * self.right;
        if len_sq > 1.0 + 1e-6 {
            let inv = 1.0 / len_sq.sqrt();
            self.forward *= inv;
            self.right *= inv;
        }
        self.buttons = Buttons(self.buttons.0 & Buttons::ALL.0);
        if self.weapon_slot > WEAPON_SLOTS {
            self.weapon_slot = 0;
        }
        self.view_frac -= self.view_frac % VIEW_FRAC_STEP;
        Ok(self)
    }

    /// The view time as fractional ticks.
    pub fn view_time(&self) -> f64 {
        self.view_tick as f64 + self.view_frac as f64 / 65536.0
    }

    /// Sets the view time from fractional ticks, the fraction on [`VIEW_FRAC_STEP`].
    pub fn set_view_time(&mut self, ticks: f64) {
        let ticks = ticks.max(0.0);
        self.view_tick = ticks.floor() as u32;
        let frac = ((ticks - ticks.floor()) * 65536.0).min(65535.0) as u16;
        self.view_frac = frac - frac % VIEW_FRAC_STEP;
    }

    /// The command to repeat when a player's next command has not arrived: same movement
    /// and view, with the one-shot buttons (jump, fire, alt-fire, reload, switch) released.
    pub fn repeated(&self) -> Self {
        Self {
            buttons: self.buttons.without(Buttons::ONE_SHOT),
            weapon_slot: 0,
            ..*self
        }
    }
}

/// Steps of a view angle in a turn: commands and player states carry angles on this grid,
/// 1/65536 of a turn (0.0055 degrees, a twentieth of a pixel at a 90 degree field of view
/// 1920 pixels wide), so a command travels as two bytes that decode to the very angle
/// the client predicted with.
pub const ANGLE_STEPS: f32 = 65536.0;

/// One angle step, radians.
const ANGLE_UNIT: f32 = TAU / ANGLE_STEPS;

/// The view time's fraction of a tick is kept in steps of this many 65536ths: 1/256 of a
/// tick, 30 microseconds at 128 Hz, where a running target moves a third of a millimetre.
/// An input packet carries the view time in these steps.
pub const VIEW_FRAC_STEP: u16 = 256;

/// The last angle step short of [`MAX_PITCH_DEG`]: as far as a view tilts on the grid.
pub const MAX_PITCH_STEPS: i16 = (MAX_PITCH_DEG / 360.0 * ANGLE_STEPS) as i16;

/// The nearest angle step to `r` radians, a half turn either way (+pi and -pi are one
/// step). `as` saturates and turns NaN into 0, so nothing here overflows.
pub fn angle_steps(r: f32) -> i16 {
    (r / ANGLE_UNIT).round() as i32 as u16 as i16
}

/// The angle of step `k`, radians: exact, and [`angle_steps`] gives `k` back.
pub fn angle_of_steps(k: i16) -> f32 {
    k as f32 * ANGLE_UNIT
}

/// Wraps an angle into -pi..pi. Uses only floor, so every platform gets the same bits.
pub fn wrap_angle(a: f32) -> f32 {
    if (-PI..PI).contains(&a) {
        return a;
    }
    let wrapped = a - TAU * libm::floorf((a + PI) / TAU);
    // Rounding can land exactly on +pi; fold it onto -pi to keep the range half-open.
    // For magnitudes so large that f32 cannot resolve a turn, any angle is as good as 0.
    match wrapped {
        w if (-PI..PI).contains(&w) => w,
        w if w >= PI && w - TAU >= -PI => w - TAU,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> InputCmd {
        InputCmd {
            seq: 1,
            ..Default::default()
        }
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(
                InputCmd {
                    forward: bad,
                    ..cmd()
                }
                .sanitized(),
                Err(SanitizeError::NonFinite)
            );
            assert_eq!(
                InputCmd {
                    right: bad,
                    ..cmd()
                }
                .sanitized(),
                Err(SanitizeError::NonFinite)
            );
            assert_eq!(
                InputCmd { yaw: bad, ..cmd() }.sanitized(),
                Err(SanitizeError::NonFinite)
            );
            assert_eq!(
                InputCmd {
                    pitch: bad,
                    ..cmd()
                }
                .sanitized(),
                Err(SanitizeError::NonFinite)
            );
        }
    }

    #[test]
    fn the_view_time_is_kept_in_steps_of_a_256th_of_a_tick() {
        let mut cmd = InputCmd::default();
        cmd.set_view_time(10.0 + 1000.5 / 65536.0);
        assert_eq!((cmd.view_tick, cmd.view_frac), (10, 768));
        let mut raw = InputCmd {
            view_frac: 1023,
            ..InputCmd::default()
        };
        raw = raw.sanitized().unwrap();
        assert_eq!(raw.view_frac, 768);
        assert_eq!(
            raw.sanitized().unwrap(),
            raw,
            "sanitizing twice changes nothing"
        );
    }

    #[test]
    fn pitch_is_clamped_to_89_degrees() {
        let up = InputCmd {
            pitch: 3.0,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        let limit = 89f32.to_radians();
        assert!(up.pitch <= limit && limit - up.pitch < 1e-4, "{}", up.pitch);
        let down = InputCmd {
            pitch: -2.0,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(down.pitch, -up.pitch);
        let ok = InputCmd {
            pitch: 0.5,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(ok.pitch, angle_of_steps(angle_steps(0.5)));
        assert!((ok.pitch - 0.5).abs() < 1e-4);
        // On the grid, and snapping again changes nothing.
        assert_eq!(ok.sanitized(), Ok(ok));
        assert_eq!(up.sanitized(), Ok(up));
    }

    #[test]
    fn yaw_wraps_into_half_open_range() {
        for raw in [-100.0f32, -PI, -1.0, 0.0, 1.0, PI, 7.0, 1000.0] {
            let y = InputCmd { yaw: raw, ..cmd() }.sanitized().unwrap().yaw;
            assert!((-PI..PI).contains(&y), "{raw} -> {y}");
            // Same direction as before wrapping.
            assert!(
                (libm::sinf(y) - libm::sinf(raw)).abs() < 1e-3,
                "{raw} -> {y}"
            );
            assert!(
                (libm::cosf(y) - libm::cosf(raw)).abs() < 1e-3,
                "{raw} -> {y}"
            );
        }
        // Far outside any real view angle the direction is meaningless, but the range holds.
        for raw in [1.0e6f32, -3.0e38] {
            let y = InputCmd { yaw: raw, ..cmd() }.sanitized().unwrap().yaw;
            assert!((-PI..PI).contains(&y), "{raw} -> {y}");
        }
        assert_eq!(wrap_angle(0.25), 0.25);
    }

    #[test]
    fn wish_direction_is_limited_to_unit_length() {
        let diag = InputCmd {
            forward: 1.0,
            right: 1.0,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        let len = (diag.forward * diag.forward + diag.right * diag.right).sqrt();
        assert!((len - 1.0).abs() < 1e-6);
        let huge = InputCmd {
            forward: 1.0e30,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(huge.forward, 1.0);
        let both = InputCmd {
            forward: -3.0e38,
            right: 3.0e38,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert!((both.forward + std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!((both.right - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        let half = InputCmd {
            forward: 0.5,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(half.forward, 0.5);
    }

    #[test]
    fn sanitizing_twice_changes_nothing() {
        let mut x: u32 = 0x1234_5678;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 6.0 - 3.0
        };
        for _ in 0..10_000 {
            let raw = InputCmd {
                forward: next(),
                right: next(),
                yaw: next() * 4.0,
                pitch: next(),
                ..cmd()
            };
            let once = raw.sanitized().unwrap();
            assert_eq!(once.sanitized().unwrap(), once, "{raw:?}");
        }
        let diag = InputCmd {
            forward: 1.0,
            right: 1.0,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(diag.sanitized().unwrap(), diag);
    }

    #[test]
    fn weapon_slot_and_buttons_are_bounded() {
        let c = InputCmd {
            weapon_slot: 9,
            buttons: Buttons(0xff),
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(c.weapon_slot, 0);
        assert_eq!(c.buttons, Buttons::ALL);
        let c = InputCmd {
            weapon_slot: WEAPON_SLOTS,
            ..cmd()
        }
        .sanitized()
        .unwrap();
        assert_eq!(c.weapon_slot, WEAPON_SLOTS);
    }

    #[test]
    fn repeated_command_releases_one_shot_buttons() {
        let c = InputCmd {
            forward: 1.0,
            buttons: Buttons::ALL,
            weapon_slot: 3,
            ..cmd()
        };
        let r = c.repeated();
        assert_eq!(r.forward, 1.0);
        assert_eq!(r.buttons, Buttons::CROUCH);
        assert_eq!(r.weapon_slot, 0);
    }
}
