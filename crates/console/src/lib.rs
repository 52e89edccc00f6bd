//! Sightline's in-game console, in the manner of Quake's and Source's: a drop-down egui
//! panel (backquote/tilde) with scrollback, history and tab completion; typed cvars with
//! help and flags ([`Cvars`]); commands that other plugins handle ([`RunCommand`]); key
//! [`Bindings`]; and a config file of saved cvars and bindings run at start-up.
//!
//! Anything the player types goes through [`Console::queue`] and the same executor, so
//! `+cl_netgraph 2` on the command line, a line in the config file and a line typed in the
//! console behave alike. A bad name or value prints a clear error and changes nothing.

mod bindings;
mod command;
mod config;
mod cvar;
mod exec;
mod ui;

pub use bindings::Bindings;
pub use command::{parse_line, quote, split_plus_commands};
pub use config::{config_path, render_config, save_config};
pub use cvar::{
    Cvar, CvarDef, CvarError, CvarFlags, CvarHandle, CvarKind, CvarType, CvarValue, Cvars,
};
pub use exec::{Outcome, ReadFile, complete, execute_line, execute_line_with};

use bevy::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

/// Lines of scrollback kept.
pub const SCROLLBACK: usize = 500;

/// The console's state: open or not, what is being typed, what it has printed.
#[derive(Resource, Debug, Default)]
pub struct Console {
    /// Whether the console is down.
    pub open: bool,
    /// The line being typed.
    pub input: String,
    lines: VecDeque<String>,
    history: Vec<String>,
    history_pos: Option<usize>,
    pending: VecDeque<String>,
}

impl Console {
    /// Prints a line to the scrollback (and the log).
    pub fn print(&mut self, line: impl Into<String>) {
        let line = line.into();
        info!(target: "console", "{line}");
        self.lines.push_back(line);
        while self.lines.len() > SCROLLBACK {
            self.lines.pop_front();
        }
    }

    /// The scrollback, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }

    /// Empties the scrollback.
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// Queues a line to run at the next update.
    pub fn queue(&mut self, line: impl Into<String>) {
        self.pending.push_back(line.into());
    }

    /// Runs what was typed: remembers it and queues it.
    pub fn submit(&mut self) {
        let line = std::mem::take(&mut self.input);
        if line.trim().is_empty() {
            return;
        }
        self.print(format!("] {line}"));
        if self.history.last() != Some(&line) {
            self.history.push(line.clone());
        }
        self.history_pos = None;
        self.pending.push_back(line);
    }

    /// Steps through history: `back` for older lines.
    pub fn recall(&mut self, back: bool) {
        if self.history.is_empty() {
            return;
        }
        let last = self.history.len() - 1;
        self.history_pos = match (self.history_pos, back) {
            (None, true) => Some(last),
            (None, false) => None,
            (Some(0), true) => Some(0),
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i >= last => None,
            (Some(i), false) => Some(i + 1),
        };
        self.input = self
            .history_pos
            .map_or_else(String::new, |i| self.history[i].clone());
    }

    fn take_pending(&mut self) -> Option<String> {
        self.pending.pop_front()
    }
}

/// Commands other plugins handle, with one line of help each.
#[derive(Resource, Debug, Default)]
pub struct ConsoleCommands {
    map: BTreeMap<&'static str, &'static str>,
}

impl ConsoleCommands {
    /// Declares a command; running it sends a [`RunCommand`] message.
    pub fn register(&mut self, name: &'static str, help: &'static str) {
        self.map.insert(name, help);
    }

    /// Whether a command of that name is declared.
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Every command and its help.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.map.iter().map(|(k, v)| (*k, *v))
    }
}

/// A declared command, typed by the player, for its plugin to carry out.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub struct RunCommand {
    /// The command's name.
    pub name: String,
    /// Its arguments.
    pub args: Vec<String>,
}

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

/// The console. `startup` lines (from `+command` arguments) run after the config file.
#[derive(Default)]
pub struct ConsolePlugin {
    /// Lines to run once, after the config file.
    pub startup: Vec<String>,
    /// Config file to use instead of the platform's (tests).
    pub config: Option<PathBuf>,
}

impl Plugin for ConsolePlugin {
    fn build(&self, app: &mut App) {
        let path = self.config.clone().or_else(config_path);
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
            .add_systems(Update, ui::toggle_console)
            .add_systems(bevy_egui::EguiPrimaryContextPass, ui::draw_console)
            .add_systems(Last, exec::write_config);
    }
}
