//! Our weapons, checked against the server's. Prediction steps our [`Arsenal`] with each
//! command, but snapshots carry only the weapon in hand and its magazine, so a weapon
//! prediction that drifted (a command the server repeated for want of ours, a weapon
//! picked up before we knew) would stay wrong: shots predicted that the server does not
//! fire, or the other way round. Once a second the server sends its arsenal after the
//! last command it ran; [`check_weapons`] compares it with what we predicted after the
//! same command, and where they differ takes the server's and steps the newer commands
//! on from it. A difference only in weapons and rounds the server has more of is a
//! pick-up we learn of later and is taken quietly; any other is a desync, logged with
//! its tick and fields and counted.

use crate::{Predicted, PredictionHistory, PredictionStats};
use bevy::prelude::*;
use sightline_combat::{Arsenal, ProjectileAct, WeaponKind, step_arsenal};
use sightline_sim::{InputCmd, TickConfig};
use std::collections::VecDeque;

/// Commands whose predicted weapons are remembered: four seconds at 128 Hz, longer than
/// any round trip a check is compared across.
pub const WEAPON_LOG: usize = 512;

/// Each recent command with our weapons as predicted after it, oldest first.
#[derive(Resource, Debug, Default, Clone)]
pub struct WeaponLog {
    steps: VecDeque<(InputCmd, Arsenal)>,
    /// Commands up to this one were predicted while we thought ourselves dead (the
    /// dead hold a fresh arsenal each frame): the server's word on them is taken
    /// without calling a difference a desync.
    predicted_dead_until: u32,
}

impl WeaponLog {
    /// We learnt we were placed anew (a respawn) when commands up to `newest` had been
    /// predicted.
    pub fn placed(&mut self, newest: u32) {
        self.predicted_dead_until = newest;
    }

    /// Remembers our weapons after `cmd`.
    pub fn push(&mut self, cmd: InputCmd, after: Arsenal) {
        self.steps.push_back((cmd, after));
        while self.steps.len() > WEAPON_LOG {
            self.steps.pop_front();
        }
    }

    /// Our weapons as predicted after command `seq`, if still remembered.
    pub fn after(&self, seq: u32) -> Option<&Arsenal> {
        self.steps
            .iter()
            .rev()
            .find(|(c, _)| c.seq == seq)
            .map(|(_, a)| a)
    }

    /// Takes `server` as our weapons after command `seq` and steps every newer command
    /// on from it, rewriting what each led to; returns our weapons after the newest and
    /// each newer command's shot.
    fn resync(
        &mut self,
        seq: u32,
        server: Arsenal,
        dt: f32,
    ) -> (Arsenal, Vec<(u32, ProjectileAct)>) {
        let mut weapons = server;
        let mut acts = Vec::new();
        for (cmd, after) in self.steps.iter_mut().filter(|(c, _)| c.seq > seq) {
            acts.push((
                cmd.seq,
                ProjectileAct::of(step_arsenal(&mut weapons, cmd, dt)),
            ));
            *after = weapons;
        }
        (weapons, acts)
    }
}

/// The server's word on our weapons: the arsenal after our command `ack`, at `tick`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerWeapons {
    /// The last of our commands it ran.
    pub ack: u32,
    /// Its tick.
    pub tick: u32,
    /// Our weapons as it has them.
    pub arsenal: Arsenal,
}

/// The newest server weapons not yet compared (the client's snapshot handling fills it
/// in, and leaves it empty while we are dead: the dead hold no weapons to predict).
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct WeaponChecks(pub Option<ServerWeapons>);

/// The names of the fields of two arsenals that differ.
pub fn weapon_differences(a: &Arsenal, b: &Arsenal) -> Vec<&'static str> {
    let timer = |x: f32, y: f32| x.to_bits() != y.to_bits();
    [
        ("weapon in hand", a.current != b.current),
        ("switching", timer(a.switching, b.switching)),
        ("cooldown", timer(a.cooldown, b.cooldown)),
        ("reloading", timer(a.reloading, b.reloading)),
        ("charge", timer(a.charge, b.charge)),
        ("alternate fire held", a.alt_held != b.alt_held),
        ("weapons owned", a.owned != b.owned),
        ("ammunition", a.ammo != b.ammo),
    ]
    .into_iter()
    .filter(|(_, differs)| *differs)
    .map(|(name, _)| name)
    .collect()
}

/// Whether `server` differs from `predicted` only by weapons and rounds it has more of:
/// a pick-up the server made that snapshots tell us of later.
fn only_picked_up(predicted: &Arsenal, server: &Arsenal) -> bool {
    let more_rounds = WeaponKind::ALL.iter().all(|w| {
        let (p, s) = (predicted.ammo[w.index()], server.ammo[w.index()]);
        s.magazine >= p.magazine && s.reserve >= p.reserve
    });
    let same_timers = Arsenal {
        owned: server.owned,
        ammo: server.ammo,
        ..*predicted
    } == *server;
    same_timers && predicted.owned & !server.owned == 0 && more_rounds
}

/// Compares the server's word on our weapons with the prediction for the same command;
/// where they differ, takes the server's and steps the newer commands on from it (their
/// shots too, which replays launch rockets by).
pub fn check_weapons(
    config: Res<TickConfig>,
    mut checks: ResMut<WeaponChecks>,
    mut log: ResMut<WeaponLog>,
    mut history: ResMut<PredictionHistory>,
    mut stats: ResMut<PredictionStats>,
    mut player: Query<&mut Arsenal, With<Predicted>>,
) {
    let Some(server) = checks.0.take() else {
        return;
    };
    let Ok(mut arsenal) = player.single_mut() else {
        return;
    };
    let Some(predicted) = log.after(server.ack).copied() else {
        stats.weapon_checks_unmatched += 1;
        return;
    };
    stats.weapon_checks += 1;
    let differ = weapon_differences(&predicted, &server.arsenal);
    if differ.is_empty() {
        return;
    }
    if server.ack <= log.predicted_dead_until {
        // Predicted while we thought ourselves dead: nothing to compare.
    } else if only_picked_up(&predicted, &server.arsenal) {
        stats.weapon_pickups += 1;
    } else {
        stats.desyncs += 1;
        warn!(
            "our weapons were out of step with the server's at tick {} (command {}): {}; \
             taking the server's",
            server.tick,
            server.ack,
            differ.join(", ")
        );
    }
    let (now, acts) = log.resync(server.ack, server.arsenal, config.dt());
    for step in history.steps_mut() {
        if let Some((_, act)) = acts.iter().find(|(seq, _)| *seq == step.cmd.seq) {
            step.projectile = *act;
        }
    }
    *arsenal = now;
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::Buttons;

    fn cmd(seq: u32, fire: bool) -> InputCmd {
        InputCmd {
            buttons: if fire {
                Buttons::FIRE
            } else {
                Buttons::default()
            },
            ..sightline_sim::test_support::cmd(seq)
        }
    }

    /// Predicts commands 1..=n (firing on every third) from a fresh arsenal.
    fn predicted(n: u32) -> (WeaponLog, Arsenal) {
        let mut log = WeaponLog::default();
        let mut a = Arsenal::spawned();
        for seq in 1..=n {
            let c = cmd(seq, seq % 3 == 0);
            step_arsenal(&mut a, &c, 1.0 / 128.0);
            log.push(c, a);
        }
        (log, a)
    }

    #[test]
    fn a_drifted_prediction_is_stepped_on_from_the_server_s_weapons() {
        let (mut log, _) = predicted(40);
        // The server ran command 20 twice (a repeat): its cooldown is a tick further on.
        let mut server = *log.after(20).unwrap();
        server.cooldown -= 1.0 / 128.0;
        assert_eq!(
            weapon_differences(log.after(20).unwrap(), &server),
            ["cooldown"]
        );
        assert!(!only_picked_up(log.after(20).unwrap(), &server));
        let (now, acts) = log.resync(20, server, 1.0 / 128.0);
        assert_eq!(acts.len(), 20);
        // The same as stepping the server's weapons with commands 21..=40 directly.
        let mut expected = server;
        for seq in 21..=40 {
            step_arsenal(&mut expected, &cmd(seq, seq % 3 == 0), 1.0 / 128.0);
        }
        assert_eq!(now, expected);
        assert_eq!(log.after(40), Some(&expected));
    }

    #[test]
    fn more_rounds_or_weapons_on_the_server_is_a_pick_up_not_a_desync() {
        let (log, _) = predicted(10);
        let predicted = *log.after(10).unwrap();
        let mut server = predicted;
        server.give(WeaponKind::Railgun);
        server.ammo[WeaponKind::Rifle.index()].reserve += 30;
        assert!(only_picked_up(&predicted, &server));
        // Fewer rounds is a shot the server fired and we did not predict.
        let mut fewer = predicted;
        fewer.ammo[WeaponKind::Rifle.index()].magazine -= 1;
        assert!(!only_picked_up(&predicted, &fewer));
        assert_eq!(weapon_differences(&predicted, &fewer), ["ammunition"]);
    }

    #[test]
    fn the_log_remembers_a_bounded_number_of_commands() {
        let (log, _) = predicted(WEAPON_LOG as u32 + 50);
        assert!(log.after(10).is_none());
        assert!(log.after(WEAPON_LOG as u32 + 50).is_some());
    }
}
