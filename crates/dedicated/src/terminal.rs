//! The host's console on standard input: a thread reads lines (with line editing,
//! history and completion when standard input is a terminal) and the server runs them
//! once a frame, printing what they print. A server with no terminal, or whose standard
//! input closes, runs on without one.

use bevy::prelude::*;
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use sightline_server::{AdminInbox, AdminLine, AdminOrigin};
use std::io::{BufRead, IsTerminal};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// Lines read ahead of the server: a pasted block waits, a flood does not grow memory.
const READ_AHEAD: usize = 64;

/// Longest line kept, bytes; a longer one is cut.
const MAX_LINE: usize = 4096;

/// Reads the host's console lines from standard input.
pub struct TerminalPlugin {
    /// Every command and cvar name, for completion.
    pub words: Vec<String>,
}

/// The lines the reading thread passed on.
#[derive(Resource)]
struct TerminalLines(Mutex<Receiver<String>>);

impl Plugin for TerminalPlugin {
    fn build(&self, app: &mut App) {
        let (send, receive) = sync_channel(READ_AHEAD);
        let words = self.words.clone();
        let spawned = std::thread::Builder::new()
            .name("terminal console".into())
            .spawn(move || read_lines(send, words));
        if let Err(e) = spawned {
            warn!("no terminal console: {e}");
            return;
        }
        app.insert_resource(TerminalLines(Mutex::new(receive)))
            .add_systems(Update, queue_terminal_lines.before(crate::admin::AdminSet))
            .add_systems(Update, print_terminal_replies.after(crate::admin::AdminSet));
    }
}

/// Reads lines until standard input closes.
fn read_lines(send: SyncSender<String>, words: Vec<String>) {
    let pass = |line: String| {
        let mut line = line;
        if line.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        // Blocks while the server is behind: the terminal waits, memory does not grow.
        match send.try_send(line) {
            Ok(()) => true,
            Err(TrySendError::Full(line)) => send.send(line).is_ok(),
            Err(TrySendError::Disconnected(_)) => false,
        }
    };
    // Line editing puts the terminal in raw mode: only for a person at a terminal, not
    // for a server whose output is piped (a test, a service manager) but whose standard
    // input happens to be one.
    if std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && let Ok(mut editor) = Editor::<Words, _>::new()
    {
        editor.set_helper(Some(Words(words)));
        loop {
            match editor.readline("") {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    if !pass(line) {
                        return;
                    }
                }
                // Ctrl-C at the prompt: the server's own handler stops it.
                Err(rustyline::error::ReadlineError::Interrupted) => continue,
                Err(_) => return,
            }
        }
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else {
            return; // not UTF-8, or the input failed: no console, the server runs on
        };
        if !pass(line) {
            return;
        }
    }
}

/// Passes what the thread read to the console.
fn queue_terminal_lines(lines: Res<TerminalLines>, mut inbox: ResMut<AdminInbox>) {
    let Ok(lines) = lines.0.lock() else {
        return;
    };
    while let Ok(line) = lines.try_recv() {
        if line.trim().is_empty() {
            continue;
        }
        inbox.push(AdminLine {
            origin: AdminOrigin::Terminal,
            line,
            password: None,
            from: None,
        });
    }
}

/// Prints the output of the terminal's lines.
fn print_terminal_replies(mut inbox: ResMut<AdminInbox>) {
    for (_, lines) in inbox.take_replies(|o| *o == AdminOrigin::Terminal) {
        for line in lines {
            println!("{line}");
        }
    }
}

/// Completion of the first word among commands and cvars.
struct Words(Vec<String>);

impl Completer for Words {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let typed = &line[..pos];
        // Only the command or variable at the start of the line (or after a `;`).
        let start = typed.rfind(';').map_or(0, |i| i + 1);
        let word = typed[start..].trim_start();
        if word.contains(char::is_whitespace) {
            return Ok((pos, Vec::new()));
        }
        let lower = word.to_ascii_lowercase();
        let found = self
            .0
            .iter()
            .filter(|w| w.starts_with(&lower))
            .cloned()
            .collect();
        Ok((pos - word.len(), found))
    }
}

impl Hinter for Words {
    type Hint = String;
}
impl Highlighter for Words {}
impl Validator for Words {}
impl Helper for Words {}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::DefaultHistory;

    #[test]
    fn completion_offers_commands_and_cvars_by_their_start() {
        let words = Words(vec!["fraglimit".into(), "kick".into(), "kill".into()]);
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        let (at, found) = words.complete("ki", 2, &ctx).unwrap();
        assert_eq!(
            (at, found),
            (0, vec!["kick".to_string(), "kill".to_string()])
        );
        let (at, found) = words.complete("say x; fr", 9, &ctx).unwrap();
        assert_eq!((at, found), (7, vec!["fraglimit".to_string()]));
        let (_, found) = words.complete("kick Bo", 7, &ctx).unwrap();
        assert!(found.is_empty(), "arguments are not completed");
    }
}
