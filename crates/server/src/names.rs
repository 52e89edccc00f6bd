//! Players' names: made unique at joining and on a rename, so nobody can pass for
//! another player or for the server.

use sightline_protocol::{MAX_NAME_LEN, clean_text, is_reserved_name};

/// `wanted`, or `wanted (2)`, `wanted (3)`... whichever is free, where a name is taken
/// when one in use looks like it (the same [`sightline_protocol::name_key`]: "ALICE" or a
/// Cyrillic "аlice" is not free beside "alice"). "player" if empty or reserved
/// ([`sightline_protocol::is_reserved_name`]): a host expects nobody to speak as "Server",
/// and "Server (2)" would still read as the server.
pub(crate) fn unique_name(wanted: &str, taken: &[&str]) -> String {
    let reserved = sightline_protocol::is_reserved_name(wanted);
    let base = if wanted.is_empty() || reserved {
        "player"
    } else {
        wanted
    };
    let taken: Vec<String> = taken
        .iter()
        .map(|t| sightline_protocol::name_key(t))
        .collect();
    let free = |name: &str| !taken.contains(&sightline_protocol::name_key(name));
    if free(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!(" ({n})");
            let mut cut = base.len().min(MAX_NAME_LEN - suffix.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}{suffix}", base[..cut].trim_end())
        })
        // Suffixes differ in their digits, which keys keep apart, so one of the first
        // `taken.len() + 1` is free.
        .find(|candidate| free(candidate))
        .expect("some suffix is free")
}

/// Why a name is not taken, in words; or the name the player gets (perhaps suffixed, as
/// at joining, where another looks like it).
pub(crate) fn new_name(wanted: &str, current: &str, others: &[&str]) -> Result<String, String> {
    let cleaned = clean_text(wanted, MAX_NAME_LEN);
    if cleaned.is_empty() {
        return Err("a name needs a visible character".into());
    }
    if is_reserved_name(&cleaned) {
        return Err(format!("\"{cleaned}\" is reserved"));
    }
    let name = unique_name(&cleaned, others);
    if name == current {
        return Err(format!("you are already called {current}"));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_unique() {
        assert_eq!(unique_name("ann", &[]), "ann");
        assert_eq!(unique_name("ann", &["ann"]), "ann (2)");
        assert_eq!(unique_name("ann", &["ann", "ann (2)"]), "ann (3)");
        assert_eq!(unique_name("", &[]), "player");
        let long = "x".repeat(MAX_NAME_LEN);
        let made = unique_name(&long, &[long.as_str()]);
        assert!(made.len() <= MAX_NAME_LEN && made.ends_with(" (2)"));
        // A cut that ends on a space leaves no double space before the suffix.
        let spaced = format!("{} yyyy", "x".repeat(MAX_NAME_LEN - 5));
        assert_eq!(
            unique_name(&spaced, &[spaced.as_str()]),
            format!("{} (2)", "x".repeat(MAX_NAME_LEN - 5))
        );
    }

    #[test]
    fn names_that_look_alike_are_taken() {
        let taken = ["alice"];
        for alike in [
            "alice",
            "ALICE",
            "Alice",
            "\u{430}lice",
            "\u{FF41}\u{FF4C}\u{FF49}\u{FF43}\u{FF45}",
        ] {
            assert_eq!(
                unique_name(alike, &taken),
                format!("{alike} (2)"),
                "{alike:?}"
            );
        }
        // The suffixed names are compared by key as well.
        assert_eq!(unique_name("BOB", &["bob", "Bob (2)"]), "BOB (3)");
        assert_eq!(unique_name("B0b", &["bob"]), "B0b (2)");
        assert_eq!(unique_name("Bot 1", &["B0t l"]), "Bot 1 (2)");
        assert_eq!(unique_name("alicia", &taken), "alicia");
    }

    #[test]
    fn reserved_names_fall_back_to_the_default() {
        for reserved in [
            "Server",
            "server",
            "ADMIN",
            "Console",
            "System",
            "Sightline",
            "Adm1n",
        ] {
            assert_eq!(unique_name(reserved, &[]), "player", "{reserved:?}");
        }
        assert_eq!(unique_name("Server", &["player"]), "player (2)");
        assert_eq!(unique_name("Servers", &[]), "Servers");
    }

    #[test]
    fn a_new_name_is_checked_as_at_joining() {
        assert_eq!(new_name("bob", "ann", &["carl"]), Ok("bob".into()));
        assert_eq!(new_name("  b\u{200b}ob ", "ann", &[]), Ok("bob".into()));
        assert_eq!(new_name("BOB", "ann", &["bob"]), Ok("BOB (2)".into()));
        assert!(new_name("\u{200b} ", "ann", &[]).is_err());
        assert!(
            new_name("Server", "ann", &[])
                .unwrap_err()
                .contains("reserved")
        );
        assert!(new_name("ann", "ann", &[]).unwrap_err().contains("already"));
        let long = "z".repeat(4 * MAX_NAME_LEN);
        assert_eq!(
            new_name(&long, "ann", &[]).map(|n| n.len()),
            Ok(MAX_NAME_LEN)
        );
    }
}
