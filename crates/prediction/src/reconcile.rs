//! The reconciliation rule, as a pure function over the history.

use crate::{PredictedStep, PredictionHistory};
use sightline_movement::PlayerState;

/// What a server state did to the prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reconciliation {
    /// The server agrees with what was predicted for that command: nothing to do.
    Agreed,
    /// It did not: the client now stands where replaying the unacknowledged commands
    /// from the server's state leads.
    Replayed {
        /// The new predicted state.
        state: PlayerState,
        /// Commands replayed.
        replayed: usize,
    },
    /// Too many commands are unacknowledged: the history was dropped and the server's
    /// state adopted as it is.
    Reset {
        /// The server's state.
        state: PlayerState,
    },
}

/// Whether two states agree within `epsilon` (flags exactly).
pub(crate) fn agree(a: &PlayerState, b: &PlayerState, epsilon: f32) -> bool {
    a.flags == b.flags
        && (a.pos - b.pos).abs().max_element() <= epsilon
        && (a.vel - b.vel).abs().max_element() <= epsilon
}

/// Replays every step held in `history` from `from` with `step`, rewriting what each led
/// to (`step` may rewrite the rest of the step too); returns where the last one leaves the
/// player and how many were replayed.
pub fn replay(
    history: &mut PredictionHistory,
    from: &PlayerState,
    mut step: impl FnMut(&PlayerState, &mut PredictedStep) -> PlayerState,
) -> (PlayerState, usize) {
    let mut state = *from;
    let mut replayed = 0;
    for predicted in history.steps_mut() {
        state = step(&state, predicted);
        predicted.after = state;
        replayed += 1;
    }
    (state, replayed)
}

/// Compares the server's `server` state after command `ack` with the prediction for it,
/// and replays the newer commands with `step` when they differ. `current` is only used
/// when nothing needs replaying.
pub fn reconcile(
    history: &mut PredictionHistory,
    ack: u32,
    server: &PlayerState,
    current: PlayerState,
    max_unacked: usize,
    epsilon: f32,
    step: impl FnMut(&PlayerState, &mut PredictedStep) -> PlayerState,
) -> Reconciliation {
    let acked = history.acknowledge(ack);
    if history.len() > max_unacked {
        history.clear();
        return Reconciliation::Reset { state: *server };
    }
    if let Some(predicted) = &acked
        && agree(&predicted.after, server, epsilon)
    {
        return Reconciliation::Agreed;
    }
    // The same command acknowledged again (the server held us for the next): nothing of
    // ours ran since, and if the server still has us as we predicted, the world's moving
    // on meanwhile is for the next acknowledgement to judge, once, rather than a jump
    // with every snapshot of the hold.
    if acked.is_none()
        && history
            .acknowledged_again(ack)
            .is_some_and(|after| agree(after, server, epsilon))
    {
        return Reconciliation::Agreed;
    }

    let (state, replayed) = replay(history, server, step);
    history.replayed_from(ack, server);
    if replayed == 0 && acked.is_none() && agree(&current, server, epsilon) {
        return Reconciliation::Agreed;
    }
    Reconciliation::Replayed { state, replayed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::Vec3;

    use sightline_sim::InputCmd;

    /// A toy movement rule: move along x by the command's forward value.
    fn toy(s: &PlayerState, step: &mut PredictedStep) -> PlayerState {
        PlayerState {
            pos: s.pos + Vec3::X * step.cmd.forward,
            ..*s
        }
    }

    fn toy_cmd(s: &PlayerState, cmd: &InputCmd) -> PlayerState {
        toy(s, &mut PredictedStep::new(*cmd, *s))
    }

    fn cmd(seq: u32, forward: f32) -> InputCmd {
        InputCmd {
            forward,
            ..sightline_sim::test_support::cmd(seq)
        }
    }

    /// Predicts commands 1..=n (forward 1 each) from the origin.
    fn predicted(n: u32) -> (PredictionHistory, PlayerState) {
        let mut h = PredictionHistory::default();
        let mut s = PlayerState::default();
        for seq in 1..=n {
            s = toy_cmd(&s, &cmd(seq, 1.0));
            h.push(PredictedStep::new(cmd(seq, 1.0), s));
        }
        (h, s)
    }

    fn at(x: f32) -> PlayerState {
        PlayerState {
            pos: Vec3::new(x, 0.0, 0.0),
            ..Default::default()
        }
    }

    #[test]
    fn agreement_needs_no_replay() {
        let (mut h, current) = predicted(10);
        let replays = std::cell::Cell::new(0);
        let out = reconcile(&mut h, 4, &at(4.0), current, 32, 1e-4, |s, c| {
            replays.set(replays.get() + 1);
            toy(s, c)
        });
        assert_eq!(out, Reconciliation::Agreed);
        assert_eq!(replays.get(), 0);
        assert_eq!(h.len(), 6, "acknowledged commands are dropped");
    }

    #[test]
    fn disagreement_replays_to_where_the_server_would_be() {
        let (mut h, current) = predicted(10);
        // The server was pushed 0.5 m further than predicted by command 4.
        let out = reconcile(&mut h, 4, &at(4.5), current, 32, 1e-4, toy);
        assert_eq!(
            out,
            Reconciliation::Replayed {
                state: at(10.5),
                replayed: 6
            }
        );
        // The history now holds the corrected predictions: the next agreeing ack is quiet.
        assert_eq!(
            reconcile(&mut h, 6, &at(6.5), at(10.5), 32, 1e-4, toy),
            Reconciliation::Agreed
        );
    }

    #[test]
    fn the_same_command_acknowledged_again_agrees_while_the_server_still_has_us_there() {
        let (mut h, current) = predicted(10);
        let replays = std::cell::Cell::new(0);
        let counted = |s: &PlayerState, c: &mut PredictedStep| {
            replays.set(replays.get() + 1);
            toy(s, c)
        };
        assert_eq!(
            reconcile(&mut h, 4, &at(4.0), current, 32, 1e-4, counted),
            Reconciliation::Agreed
        );
        // Held: the next snapshots acknowledge 4 again, with us where they had us.
        for _ in 0..3 {
            assert_eq!(
                reconcile(&mut h, 4, &at(4.0), current, 32, 1e-4, counted),
                Reconciliation::Agreed
            );
        }
        assert_eq!(replays.get(), 0, "a hold alone replays nothing");
        // Pushed while held: that is news, replayed once, and then agreed with.
        assert_eq!(
            reconcile(&mut h, 4, &at(4.5), current, 32, 1e-4, counted),
            Reconciliation::Replayed {
                state: at(10.5),
                replayed: 6
            }
        );
        assert_eq!(
            reconcile(&mut h, 4, &at(4.5), at(10.5), 32, 1e-4, counted),
            Reconciliation::Agreed
        );
        assert_eq!(replays.get(), 6);
    }

    #[test]
    fn before_any_ack_the_server_state_is_replayed_forward() {
        let (mut h, current) = predicted(3);
        let out = reconcile(&mut h, 0, &at(1.0), current, 32, 1e-4, toy);
        assert_eq!(
            out,
            Reconciliation::Replayed {
                state: at(4.0),
                replayed: 3
            }
        );
    }

    #[test]
    fn a_silent_server_makes_the_client_start_over() {
        let (mut h, current) = predicted(40);
        let out = reconcile(&mut h, 2, &at(2.0), current, 32, 1e-4, toy);
        assert_eq!(out, Reconciliation::Reset { state: at(2.0) });
        assert!(h.is_empty());
    }

    #[test]
    fn differences_within_epsilon_agree() {
        let (mut h, current) = predicted(5);
        let out = reconcile(&mut h, 2, &at(2.00005), current, 32, 1e-4, toy);
        assert_eq!(out, Reconciliation::Agreed);
    }
}
