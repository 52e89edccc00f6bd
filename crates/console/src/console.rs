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
    /// Updates left before the queue runs again (`wait`).
    waiting: u32,
}

/// Most updates one `wait` holds the queue for.
pub const MAX_WAIT_FRAMES: u32 = 1000;

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

    /// The next queued line to run now: none while a `wait` holds the queue. A line that
    /// is `wait [N]` of its own holds the lines after it for N updates (1 by default, at
    /// most [`MAX_WAIT_FRAMES`]), as Quake's command buffer does, so `+wait +r_preset 0`
    /// runs after the config file's settings have taken effect.
    pub(crate) fn take_pending(&mut self) -> Option<String> {
        if self.waiting > 0 {
            return None;
        }
        let line = self.pending.pop_front()?;
        if let Some(frames) = wait_frames(&line) {
            self.waiting = frames;
            return None;
        }
        Some(line)
    }

    /// Counts down a `wait`: called once an update, before the queue runs.
    pub(crate) fn tick_wait(&mut self) {
        self.waiting = self.waiting.saturating_sub(1);
    }
}

/// The updates a `wait [N]` line holds the queue for; `None` for any other line.
fn wait_frames(line: &str) -> Option<u32> {
    let mut words = line.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("wait") {
        return None;
    }
    let frames = match words.next() {
        None => 1,
        Some(n) => n.parse::<u32>().unwrap_or(1).clamp(1, MAX_WAIT_FRAMES),
    };
    words.next().is_none().then_some(frames)
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
    /// `FILE:LINE` when it came from a line of a file `exec` ran (`None` when typed): its
    /// handler's errors name that place rather than repeat the file's words.
    pub from_file: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(console: &mut Console) -> Vec<String> {
        console.tick_wait();
        std::iter::from_fn(|| console.take_pending()).collect()
    }

    #[test]
    fn wait_holds_the_lines_after_it_for_its_updates() {
        let mut console = Console::default();
        for line in ["exec a.cfg", "wait", "r_preset 0", "wait 3", "echo late"] {
            console.queue(line);
        }
        assert_eq!(drain(&mut console), ["exec a.cfg"]);
        assert_eq!(drain(&mut console), ["r_preset 0"]);
        assert!(drain(&mut console).is_empty());
        assert!(drain(&mut console).is_empty());
        assert_eq!(drain(&mut console), ["echo late"]);
        assert!(drain(&mut console).is_empty());
    }

    #[test]
    fn wait_counts_are_capped_and_other_lines_are_not_waits() {
        assert_eq!(wait_frames("wait"), Some(1));
        assert_eq!(wait_frames("WAIT 5"), Some(5));
        assert_eq!(wait_frames("wait 0"), Some(1));
        assert_eq!(wait_frames("wait 99999999999"), Some(1));
        assert_eq!(wait_frames("wait 4000"), Some(MAX_WAIT_FRAMES));
        assert_eq!(wait_frames("wait 2 extra"), None);
        assert_eq!(wait_frames("waiting"), None);
        assert_eq!(wait_frames("echo wait"), None);
    }
}
