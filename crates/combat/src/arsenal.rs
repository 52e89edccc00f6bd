//! The weapon state machine: switching, reloading, firing, ammunition. Run by the server
//! for real and by the client for its own feedback; timers are seconds, so the rate of fire
//! is the same at any tick rate.

use crate::WeaponKind;
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
    pub ammo: [Ammo; 3],
}

impl Default for Arsenal {
    fn default() -> Self {
        Self::spawned()
    }
}

impl Arsenal {
    /// What a player (re)spawns with: the rifle in hand, every magazine and reserve full.
    /// The server's respawn and the client's prediction of its own weapons both start
    /// here.
    pub fn spawned() -> Self {
        Self {
            current: WeaponKind::Rifle,
            switching: 0.0,
            cooldown: 0.0,
            reloading: 0.0,
            ammo: WeaponKind::ALL.map(|w| Ammo {
                magazine: w.def().magazine,
                reserve: w.def().reserve,
            }),
        }
    }
}

/// A shot fired this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shot {
    /// With which weapon.
    pub weapon: WeaponKind,
}

/// Advances the arsenal by one command over `dt` seconds; returns the shot it fired, if any.
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

    if let Some(wanted) = WeaponKind::in_slot(cmd.weapon_slot)
        && wanted != a.current
    {
        a.current = wanted;
        a.switching = wanted.def().switch_time;
        a.reloading = 0.0;
        a.cooldown = a.cooldown.max(0.0);
    }
    if a.switching > 0.0 {
        return None;
    }

    let def = a.current.def();
    let ammo = a.ammo[a.current.index()];
    let wants_reload = cmd.buttons.contains(Buttons::RELOAD) && ammo.magazine < def.magazine;
    let empty = ammo.magazine == 0;
    if a.reloading == 0.0 && ammo.reserve > 0 && (wants_reload || empty) {
        a.reloading = def.reload_time;
    }
    if a.reloading > 0.0 || !cmd.buttons.contains(Buttons::FIRE) || a.cooldown > 0.0 || empty {
        return None;
    }
    a.ammo[a.current.index()].magazine -= 1;
    a.cooldown += def.fire_interval;
    Some(Shot { weapon: a.current })
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
}
