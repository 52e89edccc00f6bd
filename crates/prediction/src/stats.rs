//! What prediction counts: corrections by cause and size, replays and resets, for the
//! netgraph and the netcode report.

use bevy::prelude::*;

/// Why a prediction was corrected, as far as the client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorrectionCause {
    /// Nothing else explains it: our own movement was mispredicted.
    Own,
    /// The server ran short of our commands and repeated one: our input arrived late.
    Late,
    /// There was no prediction to compare with.
    Other,
    /// Another player's capsule touched ours: they did not move as we expected.
    Collision,
    /// An explosion pushed us (someone else's rocket, or our own mispredicted).
    Knockback,
    /// We were killed: the server stopped us before we knew.
    Killed,
}

/// Visible corrections counted by cause: the first three are the netcode's own doing,
/// the last three other players' actions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CorrectionCauses {
    /// [`CorrectionCause::Own`].
    pub own: u64,
    /// [`CorrectionCause::Late`].
    pub late: u64,
    /// [`CorrectionCause::Other`].
    pub other: u64,
    /// [`CorrectionCause::Collision`].
    pub collision: u64,
    /// [`CorrectionCause::Knockback`].
    pub knockback: u64,
    /// [`CorrectionCause::Killed`].
    pub killed: u64,
}

impl CorrectionCauses {
    /// Counts one correction.
    pub fn count(&mut self, cause: CorrectionCause) {
        *match cause {
            CorrectionCause::Own => &mut self.own,
            CorrectionCause::Late => &mut self.late,
            CorrectionCause::Other => &mut self.other,
            CorrectionCause::Collision => &mut self.collision,
            CorrectionCause::Knockback => &mut self.knockback,
            CorrectionCause::Killed => &mut self.killed,
        } += 1;
    }

    /// All corrections counted.
    pub fn total(&self) -> u64 {
        self.own + self.late + self.other + self.collision + self.knockback + self.killed
    }

    /// These and `more` together.
    pub fn plus(&self, more: &Self) -> Self {
        Self {
            own: self.own.saturating_add(more.own),
            late: self.late.saturating_add(more.late),
            other: self.other.saturating_add(more.other),
            collision: self.collision.saturating_add(more.collision),
            knockback: self.knockback.saturating_add(more.knockback),
            killed: self.killed.saturating_add(more.killed),
        }
    }

    /// Those a player sees: all but the stop at death, which the death camera shows.
    pub fn seen(&self) -> u64 {
        self.total() - self.killed
    }

    /// Those counted since `earlier`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            own: self.own.saturating_sub(earlier.own),
            late: self.late.saturating_sub(earlier.late),
            other: self.other.saturating_sub(earlier.other),
            collision: self.collision.saturating_sub(earlier.collision),
            knockback: self.knockback.saturating_sub(earlier.knockback),
            killed: self.killed.saturating_sub(earlier.killed),
        }
    }

    /// Per cause, in declaration order: own, late, other, collision, knockback, killed.
    pub fn as_array(&self) -> [u64; 6] {
        [
            self.own,
            self.late,
            self.other,
            self.collision,
            self.knockback,
            self.killed,
        ]
    }
}

/// One visible correction: how far, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correction {
    /// Metres.
    pub size: f32,
    /// Its cause, by what the server said it did.
    pub cause: CorrectionCause,
    /// Knockback that was news: another's burst reached us that we had not predicted
    /// reaching us, its rocket learnt only after we had predicted past it (or never
    /// seen), as one fired less than a round trip and the input buffer before it lands
    /// is. No client could have flown it.
    pub news: bool,
}

impl Correction {
    /// Whether the player sees it as a correction: everything but the stop at death,
    /// which the death camera shows instead.
    pub fn seen(&self) -> bool {
        self.cause != CorrectionCause::Killed
    }
}

/// Visible corrections, oldest first: the newest [`CORRECTION_LOG`] kept, all of them
/// counted. A server (a hostile one, say) can cause a correction with every snapshot for
/// as long as it likes; the log stays bounded.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CorrectionLog {
    kept: Vec<Correction>,
    dropped: usize,
}

/// Corrections a [`CorrectionLog`] keeps (at least; it sheds the older half when full).
pub const CORRECTION_LOG: usize = 4096;

impl CorrectionLog {
    /// Adds a correction.
    pub fn push(&mut self, correction: Correction) {
        if self.kept.len() >= 2 * CORRECTION_LOG {
            let shed = self.kept.len() - CORRECTION_LOG;
            self.kept.drain(..shed);
            self.dropped = self.dropped.saturating_add(shed);
        }
        self.kept.push(correction);
    }

    /// Corrections counted in all, kept or not.
    pub fn len(&self) -> usize {
        self.dropped.saturating_add(self.kept.len())
    }

    /// Whether there has been none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kept corrections, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Correction> {
        self.kept.iter()
    }
}

/// The corrections since the `len()` of an earlier moment, as far as they are kept.
impl std::ops::Index<std::ops::RangeFrom<usize>> for CorrectionLog {
    type Output = [Correction];

    fn index(&self, from: std::ops::RangeFrom<usize>) -> &[Correction] {
        let start = from.start.saturating_sub(self.dropped).min(self.kept.len());
        &self.kept[start..]
    }
}

/// What prediction has done, for the netgraph and the netcode report.
#[derive(Resource, Debug, Default, Clone)]
pub struct PredictionStats {
    /// Commands predicted.
    pub predicted: u64,
    /// Server states that matched the prediction (no replay).
    pub agreed: u64,
    /// Server states that did not: reset and replay (most are invisibly small).
    pub reconciliations: u64,
    /// Size of each visible correction, metres (teleports are not corrections).
    pub corrections: CorrectionLog,
    /// Size of the latest correction, metres.
    pub last_correction: f32,
    /// The visible corrections by cause.
    pub causes: CorrectionCauses,
    /// Of the knockback, the corrections that were news ([`Correction::news`]).
    pub news: u64,
    /// Every jump a server state made our predicted position take (replays, resets,
    /// teleports, seen or not), summed, metres: with the [`crate::VisualOffset`], what the
    /// drawn camera moved by besides our own commands, for the netcode report's count of
    /// visible snaps.
    pub jumps: Vec3,
    /// The latest correction's cause.
    pub last_cause: Option<CorrectionCause>,
    /// Teleports adopted (respawns, new matches): no correction, no blending.
    pub teleports: u64,
    /// Commands replayed in all.
    pub replayed: u64,
    /// Times the server stopped answering and prediction started over.
    pub resets: u64,
    /// The server's checks of our weapons compared with the prediction.
    pub weapon_checks: u64,
    /// Checks for a command no longer remembered (not compared).
    pub weapon_checks_unmatched: u64,
    /// Checks that found weapons or rounds picked up before we knew (taken quietly).
    pub weapon_pickups: u64,
    /// Checks that found our predicted weapons out of step with the server's in any
    /// other way (logged, then resynchronised).
    pub desyncs: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_correction_log_stays_bounded_and_keeps_counting() {
        let mut log = CorrectionLog::default();
        assert!(log.is_empty());
        for i in 0..100_000 {
            log.push(Correction {
                size: i as f32,
                cause: CorrectionCause::Own,
                news: false,
            });
        }
        assert_eq!(log.len(), 100_000);
        assert!(log.iter().count() <= 2 * CORRECTION_LOG);
        let sizes: Vec<f32> = log[99_998..].iter().map(|c| c.size).collect();
        assert_eq!(sizes, [99_998.0, 99_999.0]);
        assert_eq!(log[100_000..].len(), 0);
        // Asked from a moment whose entries were shed: what is kept.
        assert_eq!(log[0..].len(), log.iter().count());
    }
}
