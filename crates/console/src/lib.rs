//! Sightline's console language, in the manner of Quake's and Source's, without
//! rendering: typed cvars with ranges, help and flags declared in one table per side
//! ([`Cvars`], [`cvar_table!`]); commands that other plugins handle ([`RunCommand`]);
//! `exec` and config files; `+command` arguments; key [`Bindings`] as data; and the
//! [`Console`]'s scrollback, history and completion. The game window draws it with
//! `sightline-console-ui`; the dedicated server uses the same core for its own cvars.
//!
//! Anything typed goes through [`Console::queue`] and the same executor, so
//! `+cl_netgraph 2` on the command line, a line in the config file and a line typed in the
//! console behave alike. A bad name or value prints a clear error and changes nothing.

mod bindings;
mod command;
mod config;
mod console;
mod cvar;
mod doc;
mod exec;

pub use bindings::Bindings;
pub use command::{parse_line, quote, quoted, split_plus_commands};
pub use config::{config_path, render_config, save_config};
pub use console::{Console, ConsoleCommands, RunCommand, SCROLLBACK};
pub use cvar::{
    Cvar, CvarDef, CvarError, CvarFlags, CvarHandle, CvarKind, CvarType, CvarValue, Cvars,
};
pub use doc::{
    WRITE_DOCS, check_doc, command_doc_table, cvar_doc_table, describe_values, write_between,
};
pub use exec::{
    BUILTINS, CONFIG_EXTENSION, MAX_CONFIG_NAME, Outcome, ReadFile, complete, config_file_name,
    execute_line, execute_line_with, read_config_file,
};

use bevy::prelude::*;
use std::path::PathBuf;

/// Where the config file is, and whether it needs writing.
#[derive(Resource, Debug, Default)]
pub struct ConfigFile {
    /// The file; `None` when the platform has no config directory.
    pub path: Option<PathBuf>,
    /// Whether a saved cvar or a binding changed since the last write.
    pub dirty: bool,
}

/// Where the console runs.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsoleSet {
    /// Run queued lines (in `PreUpdate`, so handlers see their commands this frame).
    Execute,
}

/// Which config file the console reads at start-up and writes when a saved cvar or a
/// binding changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConfigLocation {
    /// The platform's ([`config_path`]): the game's.
    #[default]
    Platform,
    /// This file instead (`--config`, tests).
    At(PathBuf),
    /// None: a program whose settings come from its command line and the files it is
    /// told to `exec` (the dedicated server).
    Nowhere,
}

/// The console. `startup` lines (from `+command` arguments) run after the config file.
#[derive(Default)]
pub struct ConsolePlugin {
    /// Lines to run once, after the config file.
    pub startup: Vec<String>,
    /// The config file.
    pub config: ConfigLocation,
}

impl Plugin for ConsolePlugin {
    fn build(&self, app: &mut App) {
        let path = match &self.config {
            ConfigLocation::Platform => config_path(),
            ConfigLocation::At(path) => Some(path.clone()),
            ConfigLocation::Nowhere => None,
        };
        let mut console = Console::default();
        if let Some(path) = path.as_ref().filter(|p| p.exists()) {
            console.queue(format!("exec {}", quote(&path.to_string_lossy())));
        }
        for line in &self.startup {
            console.queue(line.clone());
        }
        app.insert_resource(console)
            .insert_resource(ConfigFile { path, dirty: false })
            .init_resource::<Cvars>()
            .init_resource::<Bindings>()
            .init_resource::<ConsoleCommands>()
            .add_message::<RunCommand>()
            .add_systems(PreUpdate, exec::run_pending.in_set(ConsoleSet::Execute))
            .add_systems(Last, exec::write_config);
    }
}
