//! Our own shots as [`CombatCue`]s, predicted at once by the same weapon step the server
//! runs, and who is dead.

use crate::LatestSnapshot;
use crate::cues::CombatCue;
use crate::sets::playing;
use crate::snapshots::dead_in;
use bevy::prelude::*;
use sightline_combat::{Arsenal, WeaponKind, aim_direction};
use sightline_movement::{MoveParams, PlayerState};
use sightline_prediction::{OwnShot, Predicted};
use sightline_protocol::KIT_WEAPONS;
use sightline_sim::SimSet;
use sightline_sim::{CurrentCmd, PlayerId};

/// Weapons the server says we hold that our predicted arsenal lacks were picked up: they
/// join it, loaded, as the server's pick-up gives them.
fn pick_up_weapons(latest: &LatestSnapshot, id: PlayerId, arsenal: &mut Arsenal) {
    let Some(own) = latest
        .0
        .as_ref()
        .and_then(|s| s.players.iter().find(|p| p.id == id))
    else {
        return;
    };
    for weapon in WeaponKind::ALL {
        if own.kit & KIT_WEAPONS & weapon.bit() != 0 && !arsenal.owns(weapon) {
            arsenal.give(weapon);
        }
    }
}

/// Our own shots answer at once: prediction steps our [`Arsenal`] with each command by
/// [`sightline_combat::step_arsenal`], with the same command and tick the server will use,
/// and what it fired ([`OwnShot`]) is shown here from where the predicted move ended, so
/// the muzzle flash, tracer and sound come without waiting a round trip. Hits stay the
/// server's to decide. The dead hold the weapons a respawn gives, as on the server.
pub(crate) fn predict_own_shots(
    params: Res<MoveParams>,
    latest: Res<LatestSnapshot>,
    mut cues: MessageWriter<CombatCue>,
    mut player: Query<
        (&PlayerId, &PlayerState, &CurrentCmd, &OwnShot, &mut Arsenal),
        With<Predicted>,
    >,
) {
    let Ok((id, state, cmd, shot, mut arsenal)) = player.single_mut() else {
        return;
    };
    if dead_in(&latest, *id) {
        *arsenal = Arsenal::spawned();
        return;
    }
    pick_up_weapons(&latest, *id, &mut arsenal);
    let Some(shot) = shot.0 else {
        return;
    };
    cues.write(CombatCue::Fired {
        weapon: shot.weapon,
        origin: params.eye_position(state),
        dir: aim_direction(cmd.0.yaw, cmd.0.pitch),
        own: true,
    });
}

/// The player's own shots, predicted after its move each tick.
pub(crate) struct OwnShotsPlugin;

impl Plugin for OwnShotsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            FixedUpdate,
            predict_own_shots.after(SimSet::Move).run_if(playing),
        );
    }
}
