//! The console's state: the line being typed, scrollback, history and queued lines, and
//! the commands other plugins declare.

use bevy::prelude::*;
use std::collections::{BTreeMap, VecDeque};

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

    pub(crate) fn take_pending(&mut self) -> Option<String> {
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
