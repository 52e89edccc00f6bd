//! Console lines: `;` separates commands, whitespace separates words, double quotes group
//! words, `//` starts a comment. And Quake-style `+command args` on the command line.

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

/// Quotes a word if it needs it to survive [`parse_line`].
pub fn quote(word: &str) -> String {
    if word.is_empty()
        || word
            .chars()
            .any(|c| c.is_whitespace() || c == ';' || c == '/')
    {
        format!("\"{}\"", word.replace('"', ""))
    } else {
        word.to_string()
    }
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
        for w in ["plain", "two words", "semi;colon", ""] {
            assert_eq!(
                parse_line(&format!("x {}", quote(w))),
                vec![words(&["x", w])]
            );
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
