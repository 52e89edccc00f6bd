//! Demos: a match recorded as the commands the server simulated, tick by tick, and
//! played back through the same simulation. A demo holds the map's hash and the
//! settings, what changed between ticks (joins, leaves, team switches, the host's
//! orders), checksums of the state once a second and the whole state every ten seconds;
//! [`crate::verify_demo`] replays it headless and names the first tick, player and field that
//! went another way.
//!
//! The file's layout is in [`mod@format`]; what it keeps of the world, in [`state`].

pub mod format;
mod record;
pub mod state;

pub use format::{
    CommandChain, DEMO_EXTENSION, DEMO_FORMAT_VERSION, DEMO_MAGIC, DemoEncoder, DemoError,
    DemoErrorKind, DemoHeader, DemoLimits, DemoOrder, DemoReader, MAX_RECORD_BYTES, Record, Step,
    TickCommands,
};
pub use record::{DemoRecorder, KEYFRAME_SECONDS, RecordingDone, start_recording, stop_recording};
pub(crate) use record::{finish_on_exit, record_tick, remember_tick_end};

use std::path::PathBuf;

/// Folder the console's `record NAME` writes into, under the working directory.
pub const DEMO_FOLDER: &str = "demos";

/// Longest demo name `record` takes.
pub const MAX_DEMO_NAME: usize = 64;

/// Where the console's `record NAME` writes: `demos/NAME.sldemo`. A name is letters, digits, `-`, `_` and `.` (not first), so a line from
/// rcon cannot write outside the folder.
pub fn demo_path(name: &str) -> Result<PathBuf, String> {
    let name = name.strip_suffix(".sldemo").unwrap_or(name);
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty() || name.len() > MAX_DEMO_NAME || !plain || name.starts_with('.') {
        return Err(format!(
            "a demo name is 1-{MAX_DEMO_NAME} letters, digits, '-', '_' or '.' (not first); \
             it is written into {DEMO_FOLDER}/"
        ));
    }
    Ok(PathBuf::from(DEMO_FOLDER).join(format!("{name}.{DEMO_EXTENSION}")))
}

/// Recording a demo while a [`DemoRecorder`] is present: what each tick decided, before
/// anyone moves, and what the tick left.
pub(crate) struct DemoRecordingPlugin;

impl bevy::prelude::Plugin for DemoRecordingPlugin {
    fn build(&self, app: &mut bevy::prelude::App) {
        use bevy::prelude::*;
        use sightline_sim::SimSet;
        let recording = resource_exists::<DemoRecorder>;
        app.add_systems(
            FixedUpdate,
            (
                record_tick
                    .after(crate::rules::freeze_during_intermission)
                    .before(SimSet::Move)
                    .run_if(recording),
                remember_tick_end
                    .after(SimSet::BuildSnapshots)
                    .run_if(recording),
            ),
        )
        .add_systems(Last, finish_on_exit.run_if(recording));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_names_stay_in_the_demo_folder() {
        for bad in ["", "../x", "a/b", ".hidden", "x\\y", "c:x", &"n".repeat(65)] {
            assert!(demo_path(bad).is_err(), "{bad:?}");
        }
        let path = demo_path("final-1.round_2").unwrap();
        assert_eq!(path, PathBuf::from("demos/final-1.round_2.sldemo"));
        assert_eq!(
            demo_path("x.sldemo").unwrap(),
            PathBuf::from("demos/x.sldemo")
        );
    }
}
