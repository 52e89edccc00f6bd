//! Sightline's combat rules, shared by server and client. The server alone decides hits
//! and damage; the client runs the same weapon state machine for its own feedback (muzzle
//! flash, ammo counter) and never decides a hit.
//!
//! Everything here is a pure function of its inputs, in seconds and metres: one player's
//! command, its move then its weapon ([`player_command`], which the server's tick and the
//! client's prediction both call), the weapon state machine ([`step_arsenal`]), spread from a hash of (tick, shooter, pellet)
//! ([`pellet_direction`]), ray tests against capsule-and-head hitboxes ([`ray_hit`]), the
//! lag-compensation history and its clamped rewind ([`HitboxHistory`]), damage with armour
//! ([`Vitals::damage`]), splash with knockback ([`splash`]), and a rocket's launch, flight
//! and burst ([`launch_rocket`], [`fly_rocket`], [`rocket_splash`]), which the client also
//! runs to predict its own rocket jumps, and capture the flag's take, drop, return and
//! capture ([`step_flags`]).

// Rules, each a pure function of its inputs.
mod aim;
mod arsenal;
mod command;
mod damage;
mod drops;
mod flags;
mod hitbox;
mod items;
mod lagcomp;
mod respawn;
mod rocket;
mod spawns;
mod spread;
mod teams;
mod weapons;

// What combat tells the rest of the game, and what it keeps per player.
mod events;
mod score;

// The server's systems that run the rules each tick.
mod plugin;

pub use aim::aim_direction;
pub use arsenal::{Ammo, Arsenal, Shot, step_arsenal};
pub use command::{PlayerCommand, ProjectileAct, player_command};
pub use damage::{
    Damage, MAX_ARMOR, MAX_HEALTH, POWER_UP_TIME, QUAD_FACTOR, REGEN_HEALTH, REGEN_RATE,
    RESPAWN_DELAY, SPAWN_HEALTH, SPAWN_PROTECTION, Vitals, splash,
};
pub use drops::{DROP_TIME, DroppedWeapon, MAX_DROPS, NextDropId, dropped_weapon};
pub use events::CombatEvent;
pub use flags::{
    FLAG_REACH, FLAG_RETURN_TIME, FlagAt, FlagNews, FlagToucher, Flags, base_of, step_flags,
};
pub use hitbox::{HitZone, Hitbox, ray_capsule, ray_hit, ray_sphere};
pub use items::{ItemSpot, items_present, pick_up, respawn_time, spawn_items_for};
pub use lagcomp::{
    HitboxHistory, LagCompStats, MAX_HONEST_ROUND_TRIP, MAX_INTERP_DELAY, MAX_REWIND, MAX_VIEW_LAG,
    MAX_VIEW_LEAD, MAX_VIEW_STEP_BACK, ViewJudgement, ViewWindow, clamp_view_time,
};
pub use plugin::{CombatPlugin, CombatSystems, NextRocketId, silenced};
pub use respawn::respawned;
pub use rocket::{
    MAX_PROJECTILE_POS_STEPS, MAX_PROJECTILE_VEL_STEPS, PROJECTILE_POS_STEPS, PROJECTILE_VEL_STEPS,
    ProjectileDef, ProjectileKind, Rocket, detonate_newest, fly_rocket, launch_rocket,
    projectile_at_steps, projectile_steps, rocket_splash,
};
pub use score::Score;
pub use spawns::{Pushes, SpawnCount};
pub use spread::pellet_direction;
pub use teams::{FriendlyFire, GameMode, Team};
pub use weapons::{AltFire, Falloff, WEAPONS, WeaponDef, WeaponKind};
