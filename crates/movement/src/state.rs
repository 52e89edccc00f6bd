//! The state movement reads and writes.

use bevy::prelude::*;

/// Movement state bits.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MoveFlags(pub u8);

impl MoveFlags {
    /// Standing on walkable ground.
    pub const ON_GROUND: u8 = 1 << 0;
    /// Using the crouched hull.
    pub const CROUCHED: u8 = 1 << 1;
    /// Jump was held last tick; it must be released before the next jump.
    pub const JUMP_HELD: u8 = 1 << 2;
    /// Every defined bit.
    pub const ALL: u8 = 0b111;

    /// Whether `bit` is set.
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// Sets or clears `bit`.
    pub fn set(&mut self, bit: u8, on: bool) {
        if on {
            self.0 |= bit;
        } else {
            self.0 &= !bit;
        }
    }
}

/// Whether a player's capsule blocks other players (and is blocked by them). The living
/// are solid; the server's combat makes the dead pass through everyone.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Solid(pub bool);

impl Default for Solid {
    fn default() -> Self {
        Self(true)
    }
}

/// Other players' bodies as the server's movement met this one: a wrapping count of the
/// ticks in which another body changed its move (the move alone would have gone
/// elsewhere), and the last such player. Snapshots carry it to the player's own client,
/// which files a correction after a change as another player's doing, and one without as
/// its own (its guess of where the others were).
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Contacts {
    /// Ticks with a contact, wrapping.
    pub count: u8,
    /// The player met in the last of them.
    pub last: Option<sightline_sim::PlayerId>,
}

/// Everything about a player that movement reads and writes. Every tick leaves it on a
/// grid ([`crate::grid`]) that snapshots carry exactly, so the client can resume
/// prediction from the server's bits.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
#[require(Solid, Contacts)]
pub struct PlayerState {
    /// Feet position, m.
    pub pos: Vec3,
    /// Velocity, m/s.
    pub vel: Vec3,
    /// View yaw, radians.
    pub yaw: f32,
    /// View pitch, radians.
    pub pitch: f32,
    /// Movement bits.
    pub flags: MoveFlags,
}

impl PlayerState {
    /// A player standing at `pos` facing `yaw`.
    pub fn at(pos: Vec3, yaw: f32) -> Self {
        Self {
            pos,
            yaw,
            ..default()
        }
    }

    /// Whether the player stands on ground.
    pub fn on_ground(&self) -> bool {
        self.flags.has(MoveFlags::ON_GROUND)
    }

    /// Whether the player is crouched.
    pub fn crouched(&self) -> bool {
        self.flags.has(MoveFlags::CROUCHED)
    }

    /// The exact bits of every field, for determinism checks.
    pub fn to_bits(&self) -> [u32; 9] {
        [
            self.pos.x.to_bits(),
            self.pos.y.to_bits(),
            self.pos.z.to_bits(),
            self.vel.x.to_bits(),
            self.vel.y.to_bits(),
            self.vel.z.to_bits(),
            self.yaw.to_bits(),
            self.pitch.to_bits(),
            self.flags.0 as u32,
        ]
    }
}
