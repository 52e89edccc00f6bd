//! Combat as this client sees it, as [`CombatCue`] messages for the game to show and
//! play: what the server reports (others' shots, explosions, our hits and hurts), and our
//! own shots, predicted at once by the same weapon step the server runs.

use bevy::prelude::*;
use sightline_combat::WeaponKind;
use sightline_protocol::ServerMessage;

/// Something in combat to show or hear.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub enum CombatCue {
    /// A weapon fired from the shooter's eye along `dir`.
    Fired {
        /// Which weapon.
        weapon: WeaponKind,
        /// The shooter's eye.
        origin: Vec3,
        /// Unit aim direction.
        dir: Vec3,
        /// Our own shot, predicted (the server does not echo it back).
        own: bool,
    },
    /// A rocket burst here.
    Exploded {
        /// Where.
        at: Vec3,
    },
    /// Our shot struck someone.
    HitConfirmed {
        /// A head hit.
        head: bool,
        /// Health and armour taken.
        damage: u16,
    },
    /// We were hurt by someone standing at `from`.
    Hurt {
        /// Where the attacker was.
        from: Vec3,
    },
}

impl CombatCue {
    /// The cue for a combat message from the server; `None` for any other message.
    pub fn from_server(msg: &ServerMessage) -> Option<Self> {
        Some(match *msg {
            ServerMessage::Fired {
                weapon,
                origin,
                dir,
                ..
            } => CombatCue::Fired {
                weapon,
                origin: Vec3::from_array(origin),
                // A zero direction (allowed on the wire) has nothing to show.
                dir: Vec3::from_array(dir).try_normalize()?,
                own: false,
            },
            ServerMessage::Exploded { at } => CombatCue::Exploded {
                at: Vec3::from_array(at),
            },
            ServerMessage::HitConfirm { head, damage, .. } => {
                CombatCue::HitConfirmed { head, damage }
            }
            ServerMessage::Damaged { from, .. } => CombatCue::Hurt {
                from: Vec3::from_array(from),
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::PlayerId;

    #[test]
    fn only_combat_messages_become_cues() {
        let fired = |dir| ServerMessage::Fired {
            shooter: PlayerId(1),
            weapon: WeaponKind::Rifle,
            origin: [1.0, 2.0, 3.0],
            dir,
        };
        assert_eq!(
            CombatCue::from_server(&fired([0.0, 0.0, -2.0])),
            Some(CombatCue::Fired {
                weapon: WeaponKind::Rifle,
                origin: Vec3::new(1.0, 2.0, 3.0),
                dir: Vec3::NEG_Z,
                own: false,
            })
        );
        assert_eq!(
            CombatCue::from_server(&fired([0.0; 3])),
            None,
            "no direction"
        );
        assert_eq!(
            CombatCue::from_server(&ServerMessage::Chat {
                from: PlayerId(0),
                text: "hi".into()
            }),
            None
        );
    }
}
