//! The weapon state machine: switching, reloading, firing, ammunition. Run by the server
//! for real and by the client for its own feedback; timers are seconds, so the rate of fire
//! is the same at any tick rate.

use crate::{AltFire, ProjectileKind, WeaponKind};
use sightline_sim::{Buttons, InputCmd};

/// Rounds of one weapon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ammo {
    /// In the magazine.
    pub magazine: u16,
    /// Spare.
    pub reserve: u16,
}

/// A player's weapons and what they are doing.
#[derive(bevy::prelude::Component, Debug, Clone, Copy, PartialEq)]
pub struct Arsenal {
    /// The weapon in hand (or being brought up).
    pub current: WeaponKind,
    /// Time left bringing the current weapon up.
    pub switching: f32,
    /// Time until the next shot may go (may go below zero by less than a tick, so the
    /// average rate of fire is exact).
    pub cooldown: f32,
    /// Time left reloading; 0 when not reloading.
    pub reloading: f32,
    /// Rounds per weapon, in [`WeaponKind`] order.
    pub ammo: [Ammo; WeaponKind::ALL.len()],
    /// The weapons held, as [`WeaponKind::bit`]s; only these can be switched to.
    pub owned: u8,
    /// Seconds the trigger has been held toward a charged shot ([`crate::WeaponDef::charge_time`]).
    pub charge: f32,
    /// Whether the last command held alternate fire (a detonation is on the press).
    pub alt_held: bool,
}

impl Default for Arsenal {
    fn default() -> Self {
        Self::spawned()
    }
}

impl Arsenal {
    /// What a player (re)spawns with: the rifle in hand and the rest of
    /// [`WeaponKind::SPAWNED_WITH`], their magazines and reserves full. The server's
    /// respawn and the client's prediction of its own weapons both start here.
    pub fn spawned() -> Self {
        let owned = WeaponKind::SPAWNED_WITH
            .iter()
            .fold(0, |bits, w| bits | w.bit());
        Self {
            current: WeaponKind::Rifle,
            switching: 0.0,
            cooldown: 0.0,
            reloading: 0.0,
            ammo: WeaponKind::ALL.map(|w| {
                if owned & w.bit() == 0 {
                    return Ammo::default();
                }
                Ammo {
                    magazine: w.def().magazine,
                    reserve: w.def().reserve,
                }
            }),
            owned,
            charge: 0.0,
            alt_held: false,
        }
    }

    /// Whether `weapon` is held.
    pub fn owns(&self, weapon: WeaponKind) -> bool {
        self.owned & weapon.bit() != 0
    }

    /// The weapon `weapnext` (`step` 1) or `weapprev` (-1) goes to from `from`: the next
    /// one held in slot order, round the end, passing over those with no rounds left as
    /// Quake 3's cycling does; `None` when no other weapon would do.
    pub fn cycled(&self, from: WeaponKind, step: i8) -> Option<WeaponKind> {
        let all = WeaponKind::ALL;
        let n = all.len() as i64;
        let at = from.index() as i64;
        (1..n)
            .map(|k| all[(at + k * i64::from(step.signum())).rem_euclid(n) as usize])
            .find(|w| {
                let ammo = self.ammo[w.index()];
                self.owns(*w) && (ammo.magazine > 0 || ammo.reserve > 0)
            })
    }

    /// Picks `weapon` up: held from now on, with a full magazine and at least its usual
    /// reserve. Returns false (and changes nothing) when that adds nothing.
    pub fn give(&mut self, weapon: WeaponKind) -> bool {
        let def = weapon.def();
        let ammo = &mut self.ammo[weapon.index()];
        let full = self.owned & weapon.bit() != 0
            && ammo.magazine >= def.magazine
            && ammo.reserve >= def.reserve;
        if full {
            return false;
        }
        self.owned |= weapon.bit();
        ammo.magazine = ammo.magazine.max(def.magazine);
        ammo.reserve = ammo.reserve.max(def.reserve);
        true
    }
}

/// What a weapon did this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shot {
    /// With which weapon.
    pub weapon: WeaponKind,
    /// Whether by alternate fire: a zoomed shot, both barrels, a heavy projectile, or a
    /// detonation ([`AltFire`]).
    pub alt: bool,
}

impl Shot {
    /// The projectile it launches, if any.
    pub fn projectile(&self) -> Option<ProjectileKind> {
        match (self.alt, self.weapon.def().alt) {
            (true, AltFire::Heavy { projectile, .. }) => Some(projectile),
            (true, AltFire::Detonate) => None,
            _ => self.weapon.def().projectile,
        }
    }

    /// Whether it bursts its owner's newest projectile rather than firing.
    pub fn detonates(&self) -> bool {
        self.alt && self.weapon.def().alt == AltFire::Detonate
    }

    /// Hitscan pellets it fires, and their cone's half-angle in degrees.
    pub fn pellets(&self) -> (u8, f32) {
        let def = self.weapon.def();
        match (self.alt, def.alt) {
            (true, AltFire::Zoom { spread_deg, .. }) => (def.pellets, spread_deg),
            (true, AltFire::Double { spread, .. }) => {
                (def.pellets.saturating_mul(2), def.spread_deg * spread)
            }
            _ => (def.pellets, def.spread_deg),
        }
    }
}

/// Advances the arsenal by one command over `dt` seconds; returns what it fired, if
/// anything.
pub fn step_arsenal(a: &mut Arsenal, cmd: &InputCmd, dt: f32) -> Option<Shot> {
    a.switching = (a.switching - dt).max(0.0);
    // Let the cooldown run below zero by at most one tick, keeping the fractional part.
    a.cooldown = (a.cooldown - dt).max(-dt);
    if a.reloading > 0.0 {
        a.reloading -= dt;
        if a.reloading <= 0.0 {
            a.reloading = 0.0;
            finish_reload(a);
        }
    }
    let alt = cmd.buttons.contains(Buttons::ALT_FIRE);
    let alt_pressed = alt && !a.alt_held;
    a.alt_held = alt;
    let fire = cmd.buttons.contains(Buttons::FIRE);

    if let Some(wanted) = WeaponKind::in_slot(cmd.weapon_slot)
        && wanted != a.current
        && a.owns(wanted)
    {
        a.current = wanted;
        a.switching = wanted.def().switch_time;
        a.reloading = 0.0;
        a.charge = 0.0;
        a.cooldown = a.cooldown.max(0.0);
    }
    if a.switching > 0.0 {
        return None;
    }

    let weapon = a.current;
    let def = weapon.def();
    // A detonation needs no round and waits for nothing.
    if def.alt == AltFire::Detonate && alt_pressed {
        return Some(Shot { weapon, alt: true });
    }
    let ammo = a.ammo[weapon.index()];
    let wants_reload = cmd.buttons.contains(Buttons::RELOAD) && ammo.magazine < def.magazine;
    let empty = ammo.magazine == 0;
    if a.reloading == 0.0 && ammo.reserve > 0 && (wants_reload || empty) {
        a.reloading = def.reload_time;
        a.charge = 0.0;
    }
    if a.reloading > 0.0 || a.cooldown > 0.0 || empty {
        return None;
    }
    let (rounds, next, by_alt) = match def.alt {
        AltFire::Double { cooldown, .. } if alt => (2, def.fire_interval * cooldown, true),
        AltFire::Heavy {
            rounds, cooldown, ..
        } if alt => (rounds, cooldown, true),
        AltFire::Zoom { .. } if fire => (1, def.fire_interval, alt),
        _ if fire => (1, def.fire_interval, false),
        _ => {
            a.charge = 0.0;
            return None;
        }
    };
    if ammo.magazine < rounds {
        return None;
    }
    // A charged weapon fires once the trigger has been held its charge time.
    if def.charge_time > 0.0 {
        a.charge += dt;
        if a.charge < def.charge_time {
            return None;
        }
        a.charge = 0.0;
    }
    a.ammo[weapon.index()].magazine -= rounds;
    a.cooldown += next;
    Some(Shot {
        weapon,
        alt: by_alt,
    })
}

fn finish_reload(a: &mut Arsenal) {
    let def = a.current.def();
    let ammo = &mut a.ammo[a.current.index()];
    let moved = (def.magazine - ammo.magazine).min(ammo.reserve);
    ammo.magazine += moved;
    ammo.reserve -= moved;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycling_goes_round_the_weapons_held_with_rounds_left() {
        let mut a = Arsenal::spawned();
        use WeaponKind::*;
        assert_eq!(a.cycled(Rifle, 1), Some(Shotgun));
        assert_eq!(a.cycled(Rockets, 1), Some(Rifle), "round the end");
        assert_eq!(a.cycled(Rifle, -1), Some(Rockets), "and back");
        a.give(Plasma);
        assert_eq!(
            a.cycled(Rockets, 1),
            Some(Plasma),
            "the railgun is not held"
        );
        a.ammo[Shotgun.index()] = Ammo {
            magazine: 0,
            reserve: 0,
        };
        assert_eq!(
            a.cycled(Rifle, 1),
            Some(Rockets),
            "an empty shotgun is passed over"
        );
        a.owned = Rifle.bit();
        assert_eq!(a.cycled(Rifle, 1), None, "nothing else to go to");
    }

    fn fire() -> InputCmd {
        InputCmd {
            buttons: Buttons::FIRE,
            ..Default::default()
        }
    }

    fn run(a: &mut Arsenal, cmd: InputCmd, seconds: f32, hz: f32) -> usize {
        (0..(seconds * hz).round() as usize)
            .filter(|_| step_arsenal(a, &cmd, 1.0 / hz).is_some())
            .count()
    }

    #[test]
    fn the_rate_of_fire_is_the_same_at_any_tick_rate() {
        for hz in [30.0, 64.0, 128.0] {
            let mut a = Arsenal::default();
            a.ammo[0].magazine = 1000;
            let shots = run(&mut a, fire(), 10.0, hz);
            assert!(
                (shots as i32 - 100).abs() <= 1,
                "{hz} Hz: {shots} shots in 10 s"
            );
        }
    }

    #[test]
    fn an_empty_magazine_reloads_from_reserve_in_the_reload_time() {
        let mut a = Arsenal::default();
        let first = run(&mut a, fire(), 3.0, 128.0);
        assert_eq!(first, 30, "one magazine");
        assert!(a.reloading > 0.0 || a.ammo[0].magazine == 30);
        let mut b = Arsenal::default();
        b.ammo[0].magazine = 0;
        run(&mut b, InputCmd::default(), 1.7, 128.0);
        assert_eq!(b.ammo[0].magazine, 0, "not before the reload time");
        run(&mut b, InputCmd::default(), 0.2, 128.0);
        assert_eq!(
            b.ammo[0],
            Ammo {
                magazine: 30,
                reserve: 60
            }
        );
    }

    #[test]
    fn reload_on_request_tops_up_only_what_is_missing() {
        let mut a = Arsenal::default();
        a.ammo[0] = Ammo {
            magazine: 25,
            reserve: 3,
        };
        let reload = InputCmd {
            buttons: Buttons::RELOAD,
            ..Default::default()
        };
        run(&mut a, reload, 2.0, 128.0);
        assert_eq!(
            a.ammo[0],
            Ammo {
                magazine: 28,
                reserve: 0
            }
        );
        let before = a.ammo[0];
        run(&mut a, reload, 2.0, 128.0);
        assert_eq!(a.ammo[0], before, "nothing left to reload with");
    }

    #[test]
    fn switching_takes_the_switch_time_before_firing() {
        let mut a = Arsenal::default();
        let switch = InputCmd {
            weapon_slot: 3,
            buttons: Buttons::FIRE,
            ..Default::default()
        };
        assert!(step_arsenal(&mut a, &switch, 1.0 / 128.0).is_none());
        assert_eq!(a.current, WeaponKind::Rockets);
        let held = (0..128)
            .position(|_| step_arsenal(&mut a, &fire(), 1.0 / 128.0).is_some())
            .unwrap();
        let waited = (held + 1) as f32 / 128.0;
        assert!(
            (waited - WeaponKind::Rockets.def().switch_time).abs() < 2.0 / 128.0,
            "{waited}"
        );
        // An empty slot is ignored.
        let mut b = Arsenal::default();
        step_arsenal(
            &mut b,
            &InputCmd {
                weapon_slot: 5,
                ..Default::default()
            },
            0.01,
        );
        assert_eq!(b.current, WeaponKind::Rifle);
    }

    fn held(buttons: Buttons) -> InputCmd {
        InputCmd {
            buttons,
            ..Default::default()
        }
    }

    #[test]
    fn only_weapons_held_can_be_switched_to() {
        let mut a = Arsenal::default();
        let to = |slot| InputCmd {
            weapon_slot: slot,
            ..Default::default()
        };
        step_arsenal(&mut a, &to(4), 0.01);
        assert_eq!(a.current, WeaponKind::Rifle, "no railgun yet");
        assert!(a.give(WeaponKind::Railgun));
        step_arsenal(&mut a, &to(4), 0.01);
        assert_eq!(a.current, WeaponKind::Railgun);
    }

    #[test]
    fn the_railgun_fires_once_its_charge_is_held_and_letting_go_fires_nothing() {
        let mut a = Arsenal::default();
        a.give(WeaponKind::Railgun);
        a.current = WeaponKind::Railgun;
        let hz = 128.0;
        let charge = WeaponKind::Railgun.def().charge_time;
        // Tapped for less than the charge: nothing, and no round spent.
        assert_eq!(run(&mut a, fire(), charge * 0.5, hz), 0);
        run(&mut a, InputCmd::default(), 0.1, hz);
        assert_eq!(a.charge, 0.0, "letting go discards the charge");
        assert_eq!(a.ammo[WeaponKind::Railgun.index()].magazine, 5);
        // Held: the shot leaves after the charge time.
        let ticks = (0..256)
            .position(|_| step_arsenal(&mut a, &fire(), 1.0 / hz).is_some())
            .expect("fires");
        let waited = (ticks + 1) as f32 / hz;
        assert!((waited - charge).abs() <= 1.0 / hz, "{waited}");
        assert_eq!(a.ammo[WeaponKind::Railgun.index()].magazine, 4);
    }

    #[test]
    fn alternate_fire_zooms_doubles_detonates_or_launches_heavy() {
        let both = held(Buttons::FIRE.with(Buttons::ALT_FIRE));
        // Rifle: a zoomed shot, tighter.
        let mut a = Arsenal::default();
        let shot = step_arsenal(&mut a, &both, 0.01).unwrap();
        assert!(shot.alt && shot.pellets().1 < WeaponKind::Rifle.def().spread_deg);
        // Alternate fire alone does not shoot the rifle.
        let mut a = Arsenal::default();
        assert_eq!(step_arsenal(&mut a, &held(Buttons::ALT_FIRE), 0.01), None);
        // Shotgun: both barrels, two shells, twice the pellets, a longer wait.
        let mut a = Arsenal {
            current: WeaponKind::Shotgun,
            ..Default::default()
        };
        let shot = step_arsenal(&mut a, &held(Buttons::ALT_FIRE), 0.01).unwrap();
        assert_eq!(shot.pellets().0, 2 * WeaponKind::Shotgun.def().pellets);
        assert_eq!(a.ammo[WeaponKind::Shotgun.index()].magazine, 6);
        assert!(a.cooldown > WeaponKind::Shotgun.def().fire_interval);
        // Rockets: the press detonates, spending nothing; holding does not repeat it.
        let mut a = Arsenal {
            current: WeaponKind::Rockets,
            ..Default::default()
        };
        let shot = step_arsenal(&mut a, &held(Buttons::ALT_FIRE), 0.01).unwrap();
        assert!(shot.detonates() && shot.projectile().is_none());
        assert_eq!(step_arsenal(&mut a, &held(Buttons::ALT_FIRE), 0.01), None);
        assert_eq!(a.ammo[WeaponKind::Rockets.index()].magazine, 5);
        // Fire with alternate fire held still launches a rocket, not a detonation.
        let shot = step_arsenal(&mut a, &both, 0.01).unwrap();
        assert!(!shot.detonates());
        assert_eq!(shot.projectile(), Some(ProjectileKind::Rocket));
        // Plasma: the heavy ball for five cells.
        let mut a = Arsenal::default();
        a.give(WeaponKind::Plasma);
        a.current = WeaponKind::Plasma;
        let shot = step_arsenal(&mut a, &held(Buttons::ALT_FIRE), 0.01).unwrap();
        assert_eq!(shot.projectile(), Some(ProjectileKind::PlasmaBall));
        assert_eq!(a.ammo[WeaponKind::Plasma.index()].magazine, 45);
        let shot = step_arsenal(&mut a, &fire(), 1.0).unwrap();
        assert_eq!(shot.projectile(), Some(ProjectileKind::Plasma));
    }
}
