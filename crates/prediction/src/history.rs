//! The ring of commands predicted but not yet acknowledged.

use bevy::prelude::*;
use sightline_combat::ProjectileAct;
use sightline_movement::PlayerState;
use sightline_sim::InputCmd;
use std::collections::VecDeque;

/// What besides our command moved our player in a predicted tick, as the server counts it
/// for its own ([`crate::ServerTouches`]): whose projectiles' bursts pushed it, and
/// whether another player's body changed its move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Touched {
    /// A burst of one of ours.
    pub own: bool,
    /// A burst of another player's.
    pub others: bool,
    /// Another player's body, where we expected it.
    pub contact: bool,
}

impl Touched {
    /// What either touched.
    pub fn or(self, other: Self) -> Self {
        Self {
            own: self.own || other.own,
            others: self.others || other.others,
            contact: self.contact || other.contact,
        }
    }
}

/// One predicted command and the state it led to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PredictedStep {
    /// The command, as sent.
    pub cmd: InputCmd,
    /// The predicted state after it.
    pub after: PlayerState,
    /// What our weapon did to our projectiles with this command: launched one, or
    /// detonated the newest (the weapon's state does not depend on where we stand, so a
    /// replay does it again from wherever the replayed move ends).
    pub projectile: ProjectileAct,
    /// What besides the command moved us in this step, as predicted.
    pub touched: Touched,
}

impl PredictedStep {
    /// A step for `cmd` that led to `after`, launching nothing.
    pub fn new(cmd: InputCmd, after: PlayerState) -> Self {
        Self {
            cmd,
            after,
            ..Default::default()
        }
    }
}

/// Predicted commands in sequence order, oldest first.
#[derive(Resource, Debug, Default, Clone)]
pub struct PredictionHistory {
    steps: VecDeque<PredictedStep>,
    /// The command whose step was last taken by [`Self::acknowledge`], and where we last
    /// took it to leave us (our prediction, or the server's state we replayed from): a
    /// snapshot that acknowledges it again (the server held our player, waiting for the
    /// next) is still about a command we predicted.
    acknowledged: Option<(u32, PlayerState)>,
}

impl PredictionHistory {
    /// Remembers a predicted command.
    pub fn push(&mut self, step: PredictedStep) {
        self.steps.push_back(step);
    }

    /// The step predicted for command `seq`, if still held.
    pub fn get(&self, seq: u32) -> Option<&PredictedStep> {
        self.steps.iter().find(|s| s.cmd.seq == seq)
    }

    /// Whether command `seq` was predicted here: still held, or the one acknowledged
    /// last.
    pub fn was_predicted(&self, seq: u32) -> bool {
        self.acknowledged.is_some_and(|(s, _)| s == seq) || self.get(seq).is_some()
    }

    /// Where we last took command `seq` to leave us, if it is the one acknowledged last.
    pub fn acknowledged_again(&self, seq: u32) -> Option<&PlayerState> {
        self.acknowledged
            .as_ref()
            .filter(|(s, _)| *s == seq)
            .map(|(_, after)| after)
    }

    /// Notes that the steps held were replayed from `state`, the server's after command
    /// `seq`: if `seq` is the one acknowledged last, a snapshot acknowledging it again is
    /// compared with that.
    pub fn replayed_from(&mut self, seq: u32, state: &PlayerState) {
        if let Some((s, after)) = &mut self.acknowledged
            && *s == seq
        {
            *after = *state;
        }
    }

    /// Sequence of the newest command, if any.
    pub fn newest_seq(&self) -> Option<u32> {
        self.steps.back().map(|s| s.cmd.seq)
    }

    /// Commands held.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether no command is held.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Forgets commands older than `seq`; returns the step for `seq` itself, if held,
    /// removing it too.
    pub fn acknowledge(&mut self, seq: u32) -> Option<PredictedStep> {
        while self.steps.front().is_some_and(|s| s.cmd.seq < seq) {
            self.steps.pop_front();
        }
        if let Some(step) = self.steps.front().filter(|s| s.cmd.seq == seq) {
            self.acknowledged = Some((seq, step.after));
            self.steps.pop_front()
        } else {
            None
        }
    }

    /// What touched us in the steps predicted after command `seq`.
    pub fn touched_after(&self, seq: u32) -> Touched {
        self.steps
            .iter()
            .filter(|s| s.cmd.seq > seq)
            .fold(Touched::default(), |all, s| all.or(s.touched))
    }

    /// What touched us in the steps still held up to and including command `seq`:
    /// those predicted since the last acknowledgement.
    pub fn touched_through(&self, seq: u32) -> Touched {
        self.steps
            .iter()
            .take_while(|s| s.cmd.seq <= seq)
            .fold(Touched::default(), |all, s| all.or(s.touched))
    }

    /// The unacknowledged steps, oldest first, for replay.
    pub fn steps_mut(&mut self) -> impl Iterator<Item = &mut PredictedStep> {
        self.steps.iter_mut()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.steps.clear();
        self.acknowledged = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sightline_sim::test_support::cmd;

    #[test]
    fn acknowledging_drops_older_steps_and_returns_the_acked_one() {
        let mut h = PredictionHistory::default();
        for seq in 1..=5 {
            h.push(PredictedStep::new(cmd(seq), PlayerState::default()));
        }
        assert_eq!(h.get(4).map(|s| s.cmd.seq), Some(4));
        assert_eq!(h.acknowledge(3).map(|s| s.cmd.seq), Some(3));
        assert!(h.get(3).is_none());
        assert_eq!(h.len(), 2);
        assert_eq!(h.newest_seq(), Some(5));
        // Already gone: nothing returned, nothing newer dropped.
        assert!(h.acknowledge(2).is_none());
        assert_eq!(h.len(), 2);
        assert!(h.acknowledge(9).is_none());
        assert!(h.is_empty());
    }

    #[test]
    fn touches_are_told_apart_by_the_acknowledged_command() {
        let mut h = PredictionHistory::default();
        for seq in 1..=6 {
            let mut step = PredictedStep::new(cmd(seq), PlayerState::default());
            step.touched = Touched {
                own: seq == 5,
                others: seq == 2,
                contact: false,
            };
            h.push(step);
        }
        let (others, own) = (
            Touched {
                others: true,
                ..default()
            },
            Touched {
                own: true,
                ..default()
            },
        );
        assert_eq!(h.touched_through(3), others);
        assert_eq!(h.touched_after(3), own);
        assert_eq!(h.touched_through(1), Touched::default());
        h.acknowledge(2);
        // Acknowledged steps are gone: what is held through 4 burst nothing.
        assert_eq!(h.touched_through(4), Touched::default());
        assert_eq!(h.touched_through(6), own);
    }

    #[test]
    fn a_command_acknowledged_again_was_still_predicted() {
        let mut h = PredictionHistory::default();
        for seq in 1..=5 {
            h.push(PredictedStep::new(cmd(seq), PlayerState::default()));
        }
        assert!(h.was_predicted(4) && !h.was_predicted(6));
        h.acknowledge(3);
        // The server held our player: the next snapshot acknowledges 3 again.
        assert!(h.was_predicted(3), "the step compared last");
        assert!(!h.was_predicted(2), "older ones are forgotten");
        h.acknowledge(4);
        assert!(!h.was_predicted(3) && h.was_predicted(4));
        h.clear();
        assert!(!h.was_predicted(4), "a reset predicted nothing");
    }
}
