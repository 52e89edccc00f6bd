//! Console lines: `;` separates commands, whitespace separates words, double quotes group
//! words, `//` starts a comment. And Quake-style `+command args` on the command line.
//!
//! Inside double quotes a backslash escapes: `\"` is a quote, `\\` a backslash and
//! `\u{HEX}` the character of that code point (how [`quote`] writes line breaks and other
//! control characters, so one word never spans two lines of a file). Any other backslash
//! is itself, and outside quotes every backslash is: Windows paths and a key named `\`
//! read as Quake and Source read them. This is the only thing the language adds to
//! theirs; without it a word holding a `"` (a player may take `x"` as a name) could not
//! be written so that it reads back.

/// Longest `\u{HEX}` escape's digits (the largest code point has six).
const MAX_HEX_DIGITS: usize = 6;

/// Splits a console line into commands, each a list of words.
pub fn parse_line(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '\\' if quoted => match chars.peek() {
                Some(&e @ ('"' | '\\')) => {
                    chars.next();
                    word.push(e);
                }
                Some('u') => {
                    // No more than an escape can use: `{`, the digits, `}`.
                    let rest: String = chars.clone().skip(1).take(MAX_HEX_DIGITS + 2).collect();
                    match unicode_escape(&rest) {
                        Some((decoded, used)) => {
                            word.push(decoded);
                            // The `u` and what the escape used after it.
                            for _ in 0..=used {
                                chars.next();
                            }
                        }
                        None => word.push('\\'),
                    }
                }
                _ => word.push('\\'),
            },
            '/' if !quoted && chars.peek() == Some(&'/') => break,
            ';' if !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// The character of a `{HEX}` escape at the start of `text` (what follows `\u`), and the
/// characters it used; `None` when it is not one (then the backslash is itself).
fn unicode_escape(text: &str) -> Option<(char, usize)> {
    let inner = text.strip_prefix('{')?;
    let end = inner.find('}')?;
    let hex = &inner[..end];
    if hex.is_empty() || hex.len() > MAX_HEX_DIGITS || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
    // `{`, the digits (ASCII, one byte each) and `}`.
    Some((c, hex.len() + 2))
}

/// Writes a word so that [`parse_line`] reads it back as this one word, whatever it
/// holds: bare when it can be, otherwise in quotes with `"` and `\` escaped and control
/// characters (line breaks among them) as `\u{HEX}`.
pub fn quote(word: &str) -> String {
    // A backslash alone needs no quotes: outside them it is itself.
    let bare = !word.is_empty()
        && !word
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ';' | '/' | '"'));
    if bare { word.to_string() } else { quoted(word) }
}

/// Writes a word in quotes, always, with `"` and `\` escaped and control characters as
/// `\u{HEX}`: what [`parse_line`] reads back as this one word (for files whose lines
/// keep a fixed shape, such as the ban list's).
pub fn quoted(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Splits a program's arguments into ordinary flags and `+command args` console lines:
/// `--name x +cl_netgraph 2 +connect host` gives (`--name x`, [`cl_netgraph 2`,
/// `connect host`]).
pub fn split_plus_commands(args: impl IntoIterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let mut flags = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    // Words after a `+command` are its arguments until the next flag.
    let mut in_command = false;
    for arg in args {
        if let Some(cmd) = arg.strip_prefix('+').filter(|c| !c.is_empty()) {
            lines.push(cmd.to_string());
            in_command = true;
        } else if arg.starts_with('-') {
            in_command = false;
            flags.push(arg);
        } else if let Some(line) = lines.last_mut().filter(|_| in_command) {
            line.push(' ');
            line.push_str(&quote(&arg));
        } else {
            flags.push(arg);
        }
    }
    (flags, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lines_split_into_commands_and_words() {
        assert_eq!(
            parse_line("cl_netgraph 2; echo \"hello world\" ;;"),
            vec![
                words(&["cl_netgraph", "2"]),
                words(&["echo", "hello world"])
            ]
        );
        assert_eq!(parse_line("  "), Vec::<Vec<String>>::new());
        assert_eq!(
            parse_line("bind t \"say a;b\" // comment"),
            vec![words(&["bind", "t", "say a;b"])]
        );
        assert_eq!(parse_line("name \"\""), vec![words(&["name", ""])]);
    }

    #[test]
    fn quoting_round_trips() {
        // `x"` left bare read back as `x` and opened a quote that swallowed the rest of
        // the line: a player named so made the ban file unreadable.
        for w in [
            "plain",
            "two words",
            "semi;colon",
            "",
            "x\"",
            "\"",
            "a \"quoted\" word",
            "back\\slash",
            "ends in \\",
            "\\\"",
            "line\nbreak\r\n",
            "nul\0 and escape\u{1b}[31m",
            "\\u{41} literally",
            "// not a comment",
            "Zoë 🎯",
        ] {
            let q = quote(w);
            assert_eq!(q.lines().count(), 1, "{q:?} spans lines");
            assert_eq!(
                parse_line(&format!("x {q} y")),
                vec![words(&["x", w, "y"])],
                "{w:?} written as {q}"
            );
        }
    }

    #[test]
    fn backslashes_escape_only_inside_quotes_and_only_there_what_they_must() {
        assert_eq!(
            parse_line(r#"say "a \"b\" c" \"#),
            vec![words(&["say", "a \"b\" c", "\\"])]
        );
        // Windows paths read as typed, quoted or not.
        assert_eq!(
            parse_line(r#"exec C:\cfg\new.cfg; exec "C:\My Files\new.cfg""#),
            vec![
                words(&["exec", r"C:\cfg\new.cfg"]),
                words(&["exec", r"C:\My Files\new.cfg"])
            ]
        );
        assert_eq!(
            parse_line(r#"x "\u{41}\u{1F3AF}\u{a}" "\u{d800}\u{110000}\u{}\u{41""#),
            vec![words(&[
                "x",
                "A\u{1F3AF}\n",
                r"\u{d800}\u{110000}\u{}\u{41"
            ])]
        );
        assert_eq!(
            quote(r"C:\cfg\x.cfg"),
            r"C:\cfg\x.cfg",
            "bare needs no escapes"
        );
        assert_eq!(quote("\\"), "\\");
        assert_eq!(quoted("\\"), r#""\\""#, "in quotes it must be escaped");
    }

    proptest::proptest! {
        /// Any words, quoted either way, read back as themselves, on one line.
        #[test]
        fn any_words_round_trip(a in proptest::prelude::any::<String>(), b in "[ -~]{0,12}") {
            let line = format!("x {} {} {} {}", quote(&a), quote(&b), quoted(&a), quoted(&b));
            proptest::prop_assert_eq!(line.lines().count(), 1);
            proptest::prop_assert_eq!(parse_line(&line), vec![words(&["x", &a, &b, &a, &b])]);
        }
    }

    #[test]
    fn plus_commands_are_separated_from_flags() {
        let args = words(&[
            "--name",
            "ann",
            "+cl_netgraph",
            "2",
            "+connect",
            "host:1",
            "--map",
            "duel",
        ]);
        let (flags, lines) = split_plus_commands(args);
        assert_eq!(flags, words(&["--name", "ann", "--map", "duel"]));
        assert_eq!(lines, words(&["cl_netgraph 2", "connect host:1"]));
    }
}
