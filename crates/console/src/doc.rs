//! The console's reference as Markdown, written from the tables the console itself runs
//! on (each cvar's definition, each command's help), so the documentation cannot drift
//! from them: a test per program renders its tables and compares them with the file
//! between a pair of markers ([`check_doc`]), and `SIGHTLINE_WRITE_DOCS=1` rewrites them.

use crate::{CvarDef, CvarKind, CvarValue, Cvars};
use std::path::Path;

/// The environment variable that makes [`check_doc`] write rather than compare.
pub const WRITE_DOCS: &str = "SIGHTLINE_WRITE_DOCS";

/// A Markdown table of every cvar in `cvars`, by name: its values and default, and its
/// help with its flags.
pub fn cvar_doc_table(cvars: &Cvars) -> String {
    let mut out = String::from("| variable | values (default) | what it does |\n|---|---|---|\n");
    for cvar in cvars.iter() {
        let def = &cvar.def;
        out += &format!(
            "| `{}` | {} | {} |\n",
            def.name,
            escape(&describe_values(def)),
            escape(&help_with_flags(def))
        );
    }
    out
}

/// A Markdown table of `commands` (name and help), by name. A help that starts with the
/// command's usage (`connect HOST:PORT: join a server`) shows the usage as the name.
pub fn command_doc_table<'a>(commands: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut rows: Vec<(String, String)> = commands
        .into_iter()
        .map(|(name, help)| match help.split_once(": ") {
            Some((usage, what)) if usage.split(' ').next() == Some(name) => {
                (usage.to_string(), what.to_string())
            }
            _ => (name.to_string(), help.to_string()),
        })
        .collect();
    rows.sort();
    rows.dedup();
    let mut out = String::from("| command | what it does |\n|---|---|\n");
    for (usage, what) in rows {
        out += &format!("| `{}` | {} |\n", escape(&usage), escape(&what));
    }
    out
}

/// What values a cvar takes, and its default: `60-130 (90)`, `0/1 (1)`, `text, 32 bytes (empty)`.
pub fn describe_values(def: &CvarDef) -> String {
    let default = match &def.default {
        CvarValue::Text(t) if t.is_empty() => "empty".to_string(),
        v => v.to_string(),
    };
    let range = match def.kind {
        CvarKind::Bool => "0/1".to_string(),
        // "-30-30" would read as a subtraction: a range below zero is spelled out.
        CvarKind::Int { min, max } if min < 0 => format!("{min} to {max}"),
        CvarKind::Float { min, max } if min < 0.0 => format!("{min} to {max}"),
        CvarKind::Int { min, max } => format!("{min}-{max}"),
        CvarKind::Float { min, max } => format!("{min}-{max}"),
        CvarKind::Text { max_len } => format!("text, {max_len} bytes"),
        CvarKind::Choice { options } => options.join(", "),
    };
    format!("{range} ({default})")
}

/// The help, with what the flags mean for a player or a host.
fn help_with_flags(def: &CvarDef) -> String {
    let mut text = def.help.to_string();
    if def.flags.read_only {
        text += "; read-only";
    }
    if def.flags.saved {
        text += "; saved";
    }
    if def.flags.needs_restart {
        text += "; takes effect at the next start";
    }
    text
}

/// Text made safe for a Markdown table cell.
fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `text` with what lies between `<!-- marker -->` and `<!-- /marker -->` replaced by
/// `content`; an error if the markers are missing.
pub fn write_between(text: &str, marker: &str, content: &str) -> Result<String, String> {
    let (start, end) = (format!("<!-- {marker} -->"), format!("<!-- /{marker} -->"));
    let (before, rest) = text
        .split_once(&start)
        .ok_or_else(|| format!("no {start} marker"))?;
    let (_, after) = rest
        .split_once(&end)
        .ok_or_else(|| format!("no {end} marker"))?;
    Ok(format!(
        "{before}{start}\n{}\n{end}{after}",
        content.trim_end()
    ))
}

/// Checks that the file at `path` holds `content` between its `marker`s; with
/// [`WRITE_DOCS`] set, writes it there instead. The error says how to bring it up to date.
pub fn check_doc(path: &Path, marker: &str, content: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let wanted = write_between(&text, marker, content)?;
    if wanted == text {
        return Ok(());
    }
    if std::env::var_os(WRITE_DOCS).is_some() {
        return std::fs::write(path, wanted).map_err(|e| format!("{}: {e}", path.display()));
    }
    Err(format!(
        "{} is out of date between its {marker} markers; run the test again with \
         {WRITE_DOCS}=1 to rewrite it",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CvarFlags;

    #[test]
    fn every_cvar_is_a_row_with_its_range_default_help_and_flags() {
        let mut cvars = Cvars::default();
        cvars.register(CvarDef {
            name: "fov",
            kind: CvarKind::Int { min: 60, max: 130 },
            default: CvarValue::Int(90),
            help: "vertical field of view | degrees",
            flags: CvarFlags::SAVED,
        });
        cvars.register(CvarDef {
            name: "cl_masters",
            kind: CvarKind::Text { max_len: 256 },
            default: CvarValue::Text(String::new()),
            help: "master lists",
            flags: CvarFlags::NONE,
        });
        let table = cvar_doc_table(&cvars);
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| `cl_masters` | text, 256 bytes (empty) | master lists |",
                "| `fov` | 60-130 (90) | vertical field of view \\| degrees; saved |",
            ]
        );
    }

    #[test]
    fn a_command_s_usage_comes_from_its_help() {
        let table = command_doc_table([
            ("quit", "quit"),
            ("connect", "connect HOST:PORT: join a server"),
            ("clear", "empty the console: all of it"),
        ]);
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| `clear` | empty the console: all of it |",
                "| `connect HOST:PORT` | join a server |",
                "| `quit` | quit |",
            ]
        );
    }

    #[test]
    fn the_markers_bound_what_is_written() {
        let text = "a\n<!-- t -->\nold\n<!-- /t -->\nb\n";
        assert_eq!(
            write_between(text, "t", "new\n").unwrap(),
            "a\n<!-- t -->\nnew\n<!-- /t -->\nb\n"
        );
        assert!(write_between(text, "u", "x").is_err());
        assert!(write_between("<!-- t --> no end", "t", "x").is_err());
    }
}
