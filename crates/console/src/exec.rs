//! Running console lines: builtins, cvars, bindings and declared commands.

use crate::command::{parse_line, quote};
use crate::{
    Bindings, ConfigFile, Console, ConsoleCommands, CvarError, Cvars, RunCommand, save_config,
};
use bevy::prelude::*;
use std::path::Path;

/// How deep `exec` may nest (a file that runs itself stops here).
const MAX_EXEC_DEPTH: usize = 8;

/// How many files `exec` may run for one line, nested ones included: without a cap, a
/// file that runs itself twice per level would run 2^8 times, one that does so ten
/// times 10^8 times.
const MAX_EXEC_FILES: usize = 64;

/// Builtin commands and their help.
pub const BUILTINS: &[(&str, &str)] = &[
    (
        "bind",
        "bind KEY \"COMMAND\": run COMMAND when KEY is pressed; bind KEY shows it",
    ),
    ("clear", "empty the console"),
    (
        "cvarlist",
        "list every variable with its value, default and help",
    ),
    ("echo", "print the rest of the line"),
    ("exec", "exec FILE: run each line of FILE"),
    ("help", "help [NAME]: what a command or variable does"),
    (
        "set",
        "set NAME VALUE: set a variable (the same as NAME VALUE)",
    ),
    ("unbind", "unbind KEY: remove a binding"),
    (
        "wait",
        "wait [N]: run the lines queued after it N updates later (1 by default)",
    ),
    ("unbindall", "remove every binding"),
];

/// What running a line produced for the outside world.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// Declared commands to hand to their plugins.
    pub commands: Vec<RunCommand>,
    /// Whether a saved cvar or a binding changed.
    pub config_changed: bool,
}

/// Runs one console line, printing results and errors to `console`.
pub fn execute_line(
    line: &str,
    cvars: &mut Cvars,
    bindings: &mut Bindings,
    declared: &ConsoleCommands,
    console: &mut Console,
) -> Outcome {
    execute_line_with(
        line,
        cvars,
        bindings,
        declared,
        console,
        &mut |name: &str| read_config_file(Path::new(name)),
    )
}

/// How `exec` gets a file's text from its name.
pub type ReadFile<'a> = dyn FnMut(&str) -> std::io::Result<String> + 'a;

/// [`execute_line`] with `exec` reading files through `read`, so a config file can be run
/// (by tests and fuzzing) without touching the disk.
pub fn execute_line_with(
    line: &str,
    cvars: &mut Cvars,
    bindings: &mut Bindings,
    declared: &ConsoleCommands,
    console: &mut Console,
    read: &mut ReadFile<'_>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut files_left = MAX_EXEC_FILES;
    let mut counted = |path: &str| {
        if files_left == 0 {
            return Err(std::io::Error::other(format!(
                "more than {MAX_EXEC_FILES} files run by one line; stopped"
            )));
        }
        files_left -= 1;
        read(path)
    };
    run(
        line,
        cvars,
        bindings,
        declared,
        console,
        &mut outcome,
        &mut counted,
        0,
        None,
    );
    outcome
}

/// Largest file `exec` reads, in bytes.
const MAX_EXEC_BYTES: u64 = 1 << 20;

/// Reads a file for `exec`: only a regular file (opening a FIFO would block until a
/// writer came, and a device such as /dev/zero never ends) of at most 1 MiB of UTF-8.
pub fn read_config_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_EXEC_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_EXEC_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB",
            MAX_EXEC_BYTES / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Longest config file name [`config_file_name`] takes, bytes.
pub const MAX_CONFIG_NAME: usize = 64;

/// The extension of config files.
pub const CONFIG_EXTENSION: &str = "cfg";

/// The file name a remote admin's `exec NAME` or `writeconfig NAME` stands for, in the
/// config folder: NAME, with `.cfg` added when it has no extension (as Quake and Source
/// add it). It must be a plain name of letters, digits, `-`, `_` and `.` (not first),
/// ending in `.cfg`: no folder, no `..`, no drive or stream, and no other kind of file, so
/// remote admin reaches the config folder's config files and nothing else (not the
/// identity key or the ban list beside them). The error repeats nothing of NAME, which
/// may be a line of a file.
pub fn config_file_name(name: &str) -> Result<String, String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let file = if name.contains('.') {
        name.to_string()
    } else {
        format!("{name}.{CONFIG_EXTENSION}")
    };
    let stem = file.strip_suffix(&format!(".{CONFIG_EXTENSION}"));
    if !plain
        || name.starts_with('.')
        || file.len() > MAX_CONFIG_NAME
        || stem.is_none_or(str::is_empty)
    {
        return Err(format!(
            "only a config file of the server's config folder, by its name: 1-{MAX_CONFIG_NAME} \
             letters, digits, '-', '_' or '.' (not first), ending in .{CONFIG_EXTENSION} (added \
             when there is no extension); no paths"
        ));
    }
    Ok(file)
}

/// Where a line being run came from: typed (or queued, or a `+` argument), or a line of a
/// file that `exec` ran.
#[derive(Debug, Clone, Copy)]
struct Place<'a> {
    /// The file, as `exec` was given it.
    file: &'a str,
    /// The line's number in it, from 1.
    line: usize,
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Prints an error: `typed` for a line typed or queued; for a line of a file, the file,
/// the line's number and `what` alone. Nothing a file holds is ever printed back in an
/// error: `exec` of a file that is no config file (a key, say) would otherwise show it,
/// a line at a time, as unknown commands.
fn report(
    console: &mut Console,
    at: Option<Place<'_>>,
    typed: impl FnOnce() -> String,
    what: &str,
) {
    match at {
        None => console.print(typed()),
        Some(at) => console.print(format!("error: {at}: {what}")),
    }
}

fn run(
    line: &str,
    cvars: &mut Cvars,
    bindings: &mut Bindings,
    declared: &ConsoleCommands,
    console: &mut Console,
    out: &mut Outcome,
    read: &mut ReadFile<'_>,
    depth: usize,
    at: Option<Place<'_>>,
) {
    for mut words in parse_line(line) {
        // `set NAME VALUE` (Quake's spelling, as in `+set fraglimit 30`) is `NAME VALUE`.
        if words.len() > 2 && words[0].eq_ignore_ascii_case("set") {
            words.remove(0);
        }
        let name = words[0].to_ascii_lowercase();
        let args = &words[1..];
        match name.as_str() {
            "set" => report(
                console,
                at,
                || "usage: set NAME VALUE".into(),
                "usage: set NAME VALUE",
            ),
            "help" => help(
                args.first().map(String::as_str),
                cvars,
                declared,
                console,
                at,
            ),
            "cvarlist" => {
                for c in cvars.iter() {
                    let mut flags = String::new();
                    if c.def.flags.saved {
                        flags.push_str(" [saved]");
                    }
                    if c.def.flags.read_only {
                        flags.push_str(" [read-only]");
                    }
                    if c.def.flags.needs_restart {
                        flags.push_str(" [restart]");
                    }
                    console.print(format!(
                        "{} = {} (default {}){flags}: {}",
                        c.def.name, c.value, c.def.default, c.def.help
                    ));
                }
            }
            // What a file asks to print, it means to show.
            "echo" => console.print(args.join(" ")),
            "clear" => console.clear(),
            // A queued line of its own waits (see `Console::take_pending`); inside a
            // file or after a `;` the rest of the line runs now.
            "wait" => console
                .print("wait: only a line of its own (typed, or +wait) holds what comes after it"),
            "exec" => {
                let Some(file) = args.first() else {
                    report(
                        console,
                        at,
                        || "usage: exec FILE".into(),
                        "usage: exec FILE",
                    );
                    continue;
                };
                if depth >= MAX_EXEC_DEPTH {
                    report(
                        console,
                        at,
                        || format!("exec {file}: files nest too deeply; stopped"),
                        "exec: files nest too deeply; stopped",
                    );
                    continue;
                }
                match read(file) {
                    Ok(text) => {
                        for (i, l) in text.lines().enumerate() {
                            let place = Place { file, line: i + 1 };
                            run(
                                l,
                                cvars,
                                bindings,
                                declared,
                                console,
                                out,
                                read,
                                depth + 1,
                                Some(place),
                            );
                        }
                    }
                    // The reader's errors name no file's contents (io errors, sizes, the
                    // rule a name broke); the name itself only when typed.
                    Err(e) => report(
                        console,
                        at,
                        || format!("exec {file}: {e}"),
                        &format!("exec: {e}"),
                    ),
                }
            }
            "bind" => match args {
                [] => report(
                    console,
                    at,
                    || "usage: bind KEY [\"COMMAND\"]".into(),
                    "usage: bind KEY [\"COMMAND\"]",
                ),
                [key] => match bindings.get(key) {
                    Some(cmd) => console.print(format!("{key} is bound to {}", quote(cmd))),
                    None => report(
                        console,
                        at,
                        || format!("{key} is not bound"),
                        "bind: that key is not bound",
                    ),
                },
                [key, rest @ ..] => {
                    let command = rest.join(" ");
                    // The config file holds one binding per line: a line break would
                    // split it there and run the rest as a command of its own.
                    if key.chars().chain(command.chars()).any(char::is_control) {
                        console.print("error: a binding may not hold control characters");
                        continue;
                    }
                    bindings.bind(key, &command);
                    out.config_changed = true;
                }
            },
            "unbind" => match args.first() {
                Some(key) if bindings.unbind(key) => out.config_changed = true,
                Some(key) => report(
                    console,
                    at,
                    || format!("{key} is not bound"),
                    "unbind: that key is not bound",
                ),
                None => report(
                    console,
                    at,
                    || "usage: unbind KEY".into(),
                    "usage: unbind KEY",
                ),
            },
            "unbindall" => {
                *bindings = Bindings::default();
                out.config_changed = true;
            }
            _ if cvars.get(&name).is_some() => {
                if args.is_empty() {
                    let c = cvars.get(&name).expect("checked above");
                    console.print(format!(
                        "{} is {} (default {}): {}",
                        c.def.name, c.value, c.def.default, c.def.help
                    ));
                    continue;
                }
                match cvars.set(&name, &args.join(" ")) {
                    Ok(c) => {
                        out.config_changed |= c.def.flags.saved;
                        if c.def.flags.needs_restart {
                            console.print(format!("{name} takes effect after a restart"));
                        }
                    }
                    Err(e) => {
                        // The variable's name is its own (it exists); the value is the
                        // file's.
                        let what = match &e {
                            CvarError::BadValue { name, expected, .. } => {
                                format!("{name}: not valid; expected {expected}")
                            }
                            other => other.to_string(),
                        };
                        report(console, at, || format!("error: {e}"), &what);
                    }
                }
            }
            _ if declared.contains(&name) => out.commands.push(RunCommand {
                name,
                args: args.to_vec(),
                from_file: at.map(|at| at.to_string()),
            }),
            _ => report(
                console,
                at,
                || {
                    let hint = complete(&name, cvars, declared).1;
                    let hint = if hint.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean {}?)", hint.join(", "))
                    };
                    format!("error: unknown command or variable \"{name}\"{hint}")
                },
                "unknown command or variable",
            ),
        }
    }
}

fn help(
    name: Option<&str>,
    cvars: &Cvars,
    declared: &ConsoleCommands,
    console: &mut Console,
    at: Option<Place<'_>>,
) {
    let Some(name) = name else {
        console.print("commands:");
        let mut all: Vec<(&str, &str)> = BUILTINS.to_vec();
        all.extend(declared.iter());
        all.sort();
        for (n, h) in all {
            console.print(format!("  {n}: {h}"));
        }
        console.print("variables: type cvarlist; NAME shows one, NAME VALUE sets it");
        return;
    };
    if let Some(c) = cvars.get(name) {
        console.print(format!(
            "{}: {} (now {}, default {})",
            c.def.name, c.def.help, c.value, c.def.default
        ));
    } else if let Some((n, h)) = BUILTINS
        .iter()
        .copied()
        .chain(declared.iter())
        .find(|(n, _)| *n == name)
    {
        console.print(format!("{n}: {h}"));
    } else {
        report(
            console,
            at,
            || format!("error: unknown command or variable \"{name}\""),
            "help: unknown command or variable",
        );
    }
}

/// Completes `prefix` among commands and cvars: returns the longest common completion and
/// every candidate (sorted).
pub fn complete(prefix: &str, cvars: &Cvars, declared: &ConsoleCommands) -> (String, Vec<String>) {
    let prefix = prefix.to_ascii_lowercase();
    let mut candidates: Vec<String> = BUILTINS
        .iter()
        .map(|(n, _)| *n)
        .chain(declared.iter().map(|(n, _)| n))
        .chain(cvars.iter().map(|c| c.def.name))
        .filter(|n| n.starts_with(&prefix) && !prefix.is_empty())
        .map(str::to_string)
        .collect();
    candidates.sort();
    candidates.dedup();
    let Some(first) = candidates.first() else {
        return (prefix, candidates);
    };
    let mut common = first.clone();
    for c in &candidates[1..] {
        let shared = common
            .chars()
            .zip(c.chars())
            .take_while(|(a, b)| a == b)
            .count();
        common.truncate(
            common
                .char_indices()
                .nth(shared)
                .map_or(common.len(), |(i, _)| i),
        );
    }
    (common, candidates)
}

impl Console {
    /// Completes the command or variable being typed (the first word, before any
    /// space): fills in what all candidates share, and prints them when there are several.
    pub fn complete_input(&mut self, cvars: &Cvars, declared: &ConsoleCommands) {
        let first = self
            .input
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string();
        if first.is_empty() || self.input.contains(' ') {
            return;
        }
        let (common, all) = complete(&first, cvars, declared);
        if all.len() > 1 {
            self.print(all.join("  "));
        }
        self.input = if all.len() == 1 {
            format!("{common} ")
        } else {
            common
        };
    }
}

/// Runs the lines queued since the last update.
pub(crate) fn run_pending(
    mut console: ResMut<Console>,
    mut cvars: ResMut<Cvars>,
    mut bindings: ResMut<Bindings>,
    declared: Res<ConsoleCommands>,
    mut config: ResMut<ConfigFile>,
    mut run: MessageWriter<RunCommand>,
) {
    console.tick_wait();
    while let Some(line) = console.take_pending() {
        let outcome = execute_line(&line, &mut cvars, &mut bindings, &declared, &mut console);
        config.dirty |= outcome.config_changed;
        run.write_batch(outcome.commands);
    }
}

/// Writes the config file after a saved cvar or a binding changed.
pub(crate) fn write_config(
    mut config: ResMut<ConfigFile>,
    cvars: Res<Cvars>,
    bindings: Res<Bindings>,
    mut console: ResMut<Console>,
) {
    if !config.dirty {
        return;
    }
    config.dirty = false;
    let Some(path) = config.path.clone() else {
        return;
    };
    if let Err(e) = save_config(&path, &cvars, &bindings) {
        console.print(format!("error: cannot save {}: {e}", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CvarDef, CvarFlags, CvarKind, CvarValue};

    fn setup() -> (Cvars, Bindings, ConsoleCommands, Console) {
        let mut cvars = crate::cvar::tests::registry();
        cvars.register(CvarDef {
            name: "name",
            kind: CvarKind::Text { max_len: 32 },
            default: CvarValue::Text("player".into()),
            help: "your name",
            flags: CvarFlags::SAVED,
        });
        let mut declared = ConsoleCommands::default();
        declared.register("connect", "connect HOST:PORT");
        (cvars, Bindings::default(), declared, Console::default())
    }

    fn last(console: &Console) -> String {
        console.lines().last().unwrap_or_default().to_string()
    }

    #[test]
    fn cvars_are_set_shown_and_validated() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        let out = execute_line(
            "cl_netgraph 2; cl_interp 0.05",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(out.config_changed);
        assert_eq!(cvars.number("cl_netgraph"), 2.0);
        assert_eq!(cvars.number("cl_interp"), 0.05);
        execute_line(
            "cl_netgraph",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(
            last(&console).starts_with("cl_netgraph is 2"),
            "{}",
            last(&console)
        );
        let out = execute_line(
            "cl_netgraph 7",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(!out.config_changed);
        assert!(
            last(&console).contains("expected a whole number from 0 to 2"),
            "{}",
            last(&console)
        );
        assert_eq!(
            cvars.number("cl_netgraph"),
            2.0,
            "a bad value changes nothing"
        );
        execute_line(
            "name \"Big Al\"",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(cvars.text("name"), "Big Al");
    }

    #[test]
    fn set_is_the_same_as_naming_the_variable() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        execute_line(
            "set cl_netgraph 1; SET name \"Big Al\"",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(cvars.number("cl_netgraph"), 1.0);
        assert_eq!(cvars.text("name"), "Big Al");
        execute_line(
            "set cl_netgraph",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(last(&console), "usage: set NAME VALUE");
        execute_line(
            "set nope 1",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(last(&console).contains("unknown command or variable \"nope\""));
    }

    #[test]
    fn unknown_names_are_errors_with_suggestions() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        let out = execute_line("cl_net 1", &mut cvars, &mut binds, &declared, &mut console);
        assert_eq!(out, Outcome::default());
        assert!(last(&console).contains("unknown command or variable \"cl_net\""));
        assert!(last(&console).contains("cl_netgraph"), "{}", last(&console));
    }

    #[test]
    fn declared_commands_go_to_their_plugins() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        let out = execute_line(
            "connect 127.0.0.1:27015",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(
            out.commands,
            vec![RunCommand {
                name: "connect".into(),
                args: vec!["127.0.0.1:27015".into()],
                from_file: None,
            }]
        );
    }

    #[test]
    fn bindings_and_saved_cvars_survive_a_config_round_trip() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        execute_line(
            "bind space +jump; bind t \"messagemode\"; bind f5 \"echo hi; cl_netgraph 1\"; cl_interp 0.03; name \"a b\"",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        let dir = std::env::temp_dir().join(format!("sightline-console-{}", std::process::id()));
        let path = dir.join("config.cfg");
        crate::save_config(&path, &cvars, &binds).unwrap();

        let (mut cvars2, mut binds2, declared2, mut console2) = setup();
        binds2.bind("q", "stale");
        let line = format!("exec {}", quote(&path.to_string_lossy()));
        execute_line(&line, &mut cvars2, &mut binds2, &declared2, &mut console2);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(binds2, binds);
        assert_eq!(cvars2.number("cl_interp"), 0.03);
        assert_eq!(cvars2.text("name"), "a b");
        assert_eq!(binds2.get("F5"), Some("echo hi; cl_netgraph 1"));
    }

    #[test]
    fn exec_reports_missing_files_and_stops_recursion() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        execute_line(
            "exec /no/such/file.cfg",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(
            last(&console).starts_with("exec /no/such/file.cfg:"),
            "{}",
            last(&console)
        );
        let path = std::env::temp_dir().join(format!("sightline-loop-{}.cfg", std::process::id()));
        std::fs::write(&path, format!("echo again\nexec {}\n", path.display())).unwrap();
        execute_line(
            &format!("exec {}", path.display()),
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        std::fs::remove_file(&path).ok();
        assert!(
            last(&console).contains("nest too deeply"),
            "{}",
            last(&console)
        );
    }

    #[test]
    fn bindings_with_line_breaks_are_refused() {
        // Found by fuzzing: the config file would have split this binding and run
        // `unbindall` at the next start.
        let (mut cvars, mut binds, declared, mut console) = setup();
        let out = execute_line(
            "bind f5 \"echo hi\nunbindall\"; bind \"a\tb\" x",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(out, Outcome::default());
        assert_eq!(binds, Bindings::default());
        assert!(
            last(&console).contains("control characters"),
            "{}",
            last(&console)
        );
    }

    #[test]
    fn files_that_run_themselves_many_times_stop_after_a_few() {
        // Found by fuzzing: four `exec` lines of the file itself ran it 4^8 times.
        let (mut cvars, mut binds, declared, mut console) = setup();
        let mut reads = 0;
        let mut read = |_: &str| {
            reads += 1;
            Ok("echo x\nexec self.cfg\nexec self.cfg\nexec self.cfg\nexec self.cfg".into())
        };
        execute_line_with(
            "exec self.cfg",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
            &mut read,
        );
        assert_eq!(reads, MAX_EXEC_FILES);
        assert!(
            last(&console).contains("files run by one line; stopped"),
            "{}",
            last(&console)
        );
    }

    #[cfg(unix)]
    #[test]
    fn exec_refuses_devices_without_reading_them() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        execute_line(
            "exec /dev/zero",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert_eq!(last(&console), "exec /dev/zero: not a regular file");
    }

    #[test]
    fn exec_reads_through_the_given_reader() {
        let (mut cvars, mut binds, declared, mut console) = setup();
        let mut read = |path: &str| match path {
            "virtual.cfg" => Ok("cl_netgraph 1\nbind k \"echo hi\"".to_string()),
            _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        let out = execute_line_with(
            "exec virtual.cfg",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
            &mut read,
        );
        assert!(out.config_changed);
        assert_eq!(cvars.number("cl_netgraph"), 1.0);
        assert_eq!(binds.get("k"), Some("echo hi"));
    }

    #[test]
    fn a_file_is_never_printed_back_in_errors() {
        // `exec sightline-identity.key` printed the server's key as an unknown command.
        let key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let secrets = [key, "hunter2", "s3cret", "kEy9", "nested-secret"];
        let text = format!(
            "{key}\ncl_netgraph hunter2\nbind kEy9\nunbind kEy9\nhelp s3cret\nset s3cret\n\
             cl_net\nexec nested-secret\nexec\nconnect hunter2 s3cret\n"
        );
        let (mut cvars, mut binds, declared, mut console) = setup();
        let mut read = |path: &str| match path {
            "sightline-identity.key" => Ok(text.clone()),
            _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        let out = execute_line_with(
            "exec sightline-identity.key",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
            &mut read,
        );
        let lines: Vec<&str> = console.lines().collect();
        for secret in secrets {
            assert!(
                lines.iter().all(|l| !l.contains(secret)),
                "{secret} printed back: {lines:#?}"
            );
        }
        // Nor a hint drawn from it (`cl_net` would suggest what it begins).
        assert!(
            lines.iter().all(|l| !l.contains("did you mean")),
            "{lines:#?}"
        );
        // Each error names where it is instead.
        assert_eq!(
            lines,
            [
                "error: sightline-identity.key:1: unknown command or variable",
                "error: sightline-identity.key:2: cl_netgraph: not valid; expected a whole \
                 number from 0 to 2",
                "error: sightline-identity.key:3: bind: that key is not bound",
                "error: sightline-identity.key:4: unbind: that key is not bound",
                "error: sightline-identity.key:5: help: unknown command or variable",
                "error: sightline-identity.key:6: usage: set NAME VALUE",
                "error: sightline-identity.key:7: unknown command or variable",
                "error: sightline-identity.key:8: exec: entity not found",
                "error: sightline-identity.key:9: usage: exec FILE",
            ]
        );
        // A declared command's handler learns where it came from, to say so.
        assert_eq!(
            out.commands[0].from_file.as_deref(),
            Some("sightline-identity.key:10")
        );
        // Typed, the same errors say what was wrong with what.
        execute_line(
            "help s3cret",
            &mut cvars,
            &mut binds,
            &declared,
            &mut console,
        );
        assert!(last(&console).contains("\"s3cret\""), "{}", last(&console));
    }

    #[test]
    fn remote_config_names_are_plain_config_files() {
        for bad in [
            "../x",
            "../x.cfg",
            "/etc/passwd",
            "/tmp/x.cfg",
            "sightline-identity.key",
            "bans.txt",
            "a/b.cfg",
            "a\\b.cfg",
            "C:x.cfg",
            "C:\\x.cfg",
            ".bashrc",
            ".cfg",
            "",
            ".",
            "..",
            "x.cfg.key",
            "x.cfg ",
            "x\0.cfg",
            &"n".repeat(MAX_CONFIG_NAME),
        ] {
            // One message for all: nothing of the name, which may be a file's line.
            assert_eq!(config_file_name(bad), config_file_name(""), "{bad:?}");
        }
        assert_eq!(config_file_name("server").unwrap(), "server.cfg");
        assert_eq!(config_file_name("server.cfg").unwrap(), "server.cfg");
        assert_eq!(
            config_file_name("cup-2_final.v2.cfg").unwrap(),
            "cup-2_final.v2.cfg"
        );
        let longest = "n".repeat(MAX_CONFIG_NAME - 4);
        assert_eq!(
            config_file_name(&longest).unwrap(),
            format!("{longest}.cfg")
        );
    }

    #[test]
    fn tab_completion_finds_the_common_prefix() {
        let (cvars, _, declared, _) = setup();
        let (common, all) = complete("cl_", &cvars, &declared);
        assert_eq!(common, "cl_");
        assert_eq!(all, vec!["cl_interp", "cl_netgraph"]);
        assert_eq!(complete("cl_n", &cvars, &declared).0, "cl_netgraph");
        assert_eq!(complete("con", &cvars, &declared).0, "connect");
        assert!(complete("zzz", &cvars, &declared).1.is_empty());
    }

    #[test]
    fn history_recalls_older_and_newer_lines() {
        let mut c = Console::default();
        for l in ["one", "two"] {
            c.input = l.into();
            c.submit();
        }
        c.recall(true);
        assert_eq!(c.input, "two");
        c.recall(true);
        assert_eq!(c.input, "one");
        c.recall(true);
        assert_eq!(c.input, "one");
        c.recall(false);
        assert_eq!(c.input, "two");
        c.recall(false);
        assert_eq!(c.input, "");
    }
}
