//! Bodies for the console: [`parse_line`], [`split_plus_commands`],
//! [`execute_line`](sightline_console::execute_line), and
//! the config file, which the console runs at start-up as `exec "<path>"`.
//!
//! Lines come from bytes by lossy UTF-8 conversion, as any `String` can reach the console.
//! Files are served from memory through [`execute_line_with`], so no input touches the
//! disk.

use sightline_console::{
    Bindings, Console, ConsoleCommands, CvarDef, CvarFlags, CvarKind, CvarValue, Cvars, Outcome,
    execute_line_with, parse_line, quote, render_config, split_plus_commands,
};
use std::io;

/// The name the config file is served under.
pub const CONFIG: &str = "config.cfg";

/// Everything a console line can change, with the cvars and commands it runs against: one
/// cvar of each kind and flag, modelled on the game's own.
pub struct Shell {
    /// The cvars.
    pub cvars: Cvars,
    /// The key bindings.
    pub bindings: Bindings,
    /// Commands other plugins would handle.
    pub declared: ConsoleCommands,
    /// The scrollback.
    pub console: Console,
}

fn def(name: &'static str, kind: CvarKind, default: CvarValue, flags: CvarFlags) -> CvarDef {
    CvarDef {
        name,
        kind,
        default,
        help: "fuzzing",
        flags,
    }
}

impl Shell {
    /// A fresh console at the defaults, with no bindings.
    pub fn new() -> Self {
        let mut cvars = Cvars::default();
        for d in [
            def(
                "name",
                CvarKind::Text { max_len: 32 },
                CvarValue::Text("player".into()),
                CvarFlags::SAVED,
            ),
            def(
                "cl_netgraph",
                CvarKind::Int { min: 0, max: 2 },
                CvarValue::Int(0),
                CvarFlags::SAVED,
            ),
            def(
                "cl_interp",
                CvarKind::Float { min: 0.0, max: 0.5 },
                CvarValue::Float(0.0),
                CvarFlags::SAVED,
            ),
            def(
                "cl_timenudge",
                CvarKind::Float {
                    min: -30.0,
                    max: 30.0,
                },
                CvarValue::Float(0.0),
                CvarFlags::NONE,
            ),
            def(
                "r_vsync",
                CvarKind::Bool,
                CvarValue::Bool(true),
                CvarFlags::SAVED_RESTART,
            ),
            def(
                "r_msaa",
                CvarKind::Int { min: 1, max: 8 },
                CvarValue::Int(4),
                CvarFlags::SAVED_RESTART,
            ),
            def(
                "version",
                CvarKind::Text { max_len: 32 },
                CvarValue::Text("0.1.0".into()),
                CvarFlags::READ_ONLY,
            ),
        ] {
            cvars.register(d);
        }
        let mut declared = ConsoleCommands::default();
        for name in ["connect", "disconnect", "say", "quit"] {
            declared.register(name, "fuzzing");
        }
        Self {
            cvars,
            bindings: Bindings::default(),
            declared,
            console: Console::default(),
        }
    }

    /// Runs `line` with `exec` reading from `files` (name, contents).
    pub fn run(&mut self, line: &str, files: &[(&str, &[u8])]) -> Outcome {
        let mut read = |path: &str| match files.iter().find(|(name, _)| *name == path) {
            // As the real reader: text that is not UTF-8 is refused.
            Some((_, bytes)) => String::from_utf8(bytes.to_vec())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        };
        execute_line_with(
            line,
            &mut self.cvars,
            &mut self.bindings,
            &self.declared,
            &mut self.console,
            &mut read,
        )
    }

    fn values(&self) -> Vec<(&'static str, CvarValue)> {
        self.cvars
            .iter()
            .map(|c| (c.def.name, c.value.clone()))
            .collect()
    }

    fn saved_values(&self) -> Vec<(&'static str, CvarValue)> {
        self.cvars
            .iter()
            .filter(|c| c.def.flags.saved)
            .map(|c| (c.def.name, c.value.clone()))
            .collect()
    }
}

impl Default for Shell {
    fn default() -> Self {
        Self::new()
    }
}

/// [`parse_line`]: commands are never empty, words hold a quote character only from an
/// escape (so from a line with a backslash), words from a line without quotes hold no
/// separator, and quoting every word with [`quote`] gives a line, on one line, that
/// parses to the same commands.
pub fn console_line(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let commands = parse_line(&line);
    let quoted = line.contains('"');
    let escaped = line.contains('\\');
    for words in &commands {
        assert!(!words.is_empty(), "an empty command from {line:?}");
        for w in words {
            assert!(escaped || !w.contains('"'), "word {w:?} holds a quote");
            if !quoted {
                assert!(
                    !w.contains(|c: char| c.is_whitespace() || c == ';') && !w.contains("//"),
                    "word {w:?} holds a separator though {line:?} has no quotes"
                );
            }
        }
    }
    let rebuilt = commands
        .iter()
        .map(|words| words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(
        rebuilt.lines().count() <= 1,
        "requoted on lines: {rebuilt:?}"
    );
    assert_eq!(parse_line(&rebuilt), commands, "requoted as {rebuilt:?}");
}

/// Whether `part` appears in `whole` in order (not necessarily next to each other).
fn is_subsequence(part: &[String], whole: &[String]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

/// [`split_plus_commands`] over arguments separated by NUL bytes: one console line per
/// `+name` argument, starting with that name; flags are arguments untouched and in order;
/// and every argument that went into a line comes back as one word when the line is
/// parsed, so flags and lines together hold exactly the arguments.
pub fn plus_commands(data: &[u8]) {
    let args: Vec<String> = data
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let (flags, lines) = split_plus_commands(args.clone());
    let heads: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix('+').filter(|c| !c.is_empty()))
        .collect();
    assert_eq!(lines.len(), heads.len(), "{args:?} gave {lines:?}");
    assert!(
        is_subsequence(&flags, &args),
        "{args:?} gave flags {flags:?}"
    );
    // Arguments are quoted with escapes, so each, whatever it holds, reads back whole.
    let mut taken = Vec::new();
    for (line, head) in lines.iter().zip(&heads) {
        let rest = line
            .strip_prefix(head)
            .unwrap_or_else(|| panic!("line {line:?} does not start with {head:?}"));
        taken.push(format!("+{head}"));
        let words = parse_line(rest);
        assert!(words.len() <= 1, "arguments {rest:?} split into commands");
        taken.extend(words.into_iter().flatten());
    }
    assert!(is_subsequence(&taken, &args), "{args:?} gave {lines:?}");
    let mut all: Vec<&String> = flags.iter().chain(&taken).collect();
    all.sort();
    let mut expected: Vec<&String> = args.iter().collect();
    expected.sort();
    assert_eq!(all, expected, "{args:?} gave {flags:?} and {lines:?}");
}

/// [`execute_line`](sightline_console::execute_line) on any line: see [`check_state`].
pub fn console_exec(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let mut shell = Shell::new();
    let before = (shell.values(), shell.bindings.clone());
    let out = shell.run(&line, &[]);
    check_state(&shell, &before, &out);
}

/// The config file: its bytes served as [`CONFIG`] and run as the console plugin runs it
/// at start-up; see [`check_state`].
pub fn config_file(data: &[u8]) {
    let mut shell = Shell::new();
    let before = (shell.values(), shell.bindings.clone());
    let out = shell.run(&format!("exec {}", quote(CONFIG)), &[(CONFIG, data)]);
    check_state(&shell, &before, &out);
}

/// What must hold after running anything: every cvar holds a value its definition
/// accepts; read-only cvars are untouched; declared commands are the only ones handed
/// out; nothing saved changed unless the outcome says so; and the config file the game
/// would now write runs cleanly in a fresh console and restores the same bindings and
/// saved cvars.
pub fn check_state(
    shell: &Shell,
    before: &(Vec<(&'static str, CvarValue)>, Bindings),
    out: &Outcome,
) {
    for c in shell.cvars.iter() {
        assert_eq!(
            c.def.parse(&c.value.to_string()).as_ref(),
            Ok(&c.value),
            "{} holds a value it refuses",
            c.def.name
        );
        if c.def.flags.read_only {
            assert_eq!(c.value, c.def.default, "read-only {} changed", c.def.name);
        }
    }
    for cmd in &out.commands {
        assert!(
            shell.declared.contains(&cmd.name),
            "{} handed out",
            cmd.name
        );
    }
    for (key, _) in shell.bindings.iter() {
        assert_eq!(key, key.to_ascii_lowercase(), "binding key not lower case");
    }
    if !out.config_changed {
        assert_eq!(shell.bindings, before.1, "bindings changed unannounced");
        let saved_before: Vec<_> = before
            .0
            .iter()
            .filter(|(name, _)| shell.cvars.get(name).is_some_and(|c| c.def.flags.saved))
            .cloned()
            .collect();
        assert_eq!(
            shell.saved_values(),
            saved_before,
            "saved cvars changed unannounced"
        );
    }

    let text = render_config(&shell.cvars, &shell.bindings);
    let mut fresh = Shell::new();
    fresh.run(
        &format!("exec {}", quote(CONFIG)),
        &[(CONFIG, text.as_bytes())],
    );
    assert_eq!(
        fresh.bindings, shell.bindings,
        "the written config changes bindings:\n{text}"
    );
    assert_eq!(
        fresh.saved_values(),
        shell.saved_values(),
        "the written config changes cvars:\n{text}"
    );
    let errors: Vec<&str> = fresh
        .console
        .lines()
        .filter(|l| l.contains("error") || l.contains("usage:"))
        .collect();
    assert!(
        errors.is_empty(),
        "the written config reports {errors:?}:\n{text}"
    );
}
