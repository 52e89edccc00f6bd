//! Text that players show each other: names and chat. Cleaning removes what cannot be
//! seen (controls, format characters, blank fillers) and folds compatibility forms, so
//! what is shown is what was meant; [`name_key`] goes further and folds case and
//! look-alike letters, so that no two players' names can be told apart only by them.

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// Names no player may take, compared by [`name_key`]: the server, the console and the
/// game itself speak under these, so a player holding one could pass words off as theirs.
pub const RESERVED_NAMES: [&str; 5] = ["Server", "Console", "Admin", "System", "Sightline"];

/// Whether [`clean_text`] drops `c`: control characters, format characters (Unicode
/// category Cf: zero-width space and joiners, bidi embeddings, overrides and isolates,
/// soft hyphen, byte order mark, tags...), and characters that draw nothing yet are not
/// format characters, which are the ones abused to make blank or look-alike names.
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || get_general_category(c) == GeneralCategory::Format
        || matches!(
            c,
            '\u{034F}' // combining grapheme joiner
            | '\u{115F}' | '\u{1160}' // Hangul choseong and jungseong fillers
            | '\u{17B4}' | '\u{17B5}' // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}' // Mongolian variation selectors, vowel separator
            | '\u{2800}' // braille pattern blank
            | '\u{3164}' // Hangul filler
            | '\u{FE00}'..='\u{FE0F}' // variation selectors
            | '\u{FFA0}' // halfwidth Hangul filler
            | '\u{FFF0}'..='\u{FFF8}' // unassigned, reserved as ignorable
            | '\u{E0000}'..='\u{E0FFF}' // tags, variation selectors supplement
        )
}

/// Makes text fit to show: drops invisible characters (controls, format characters such
/// as zero-width and bidi marks, and fillers), normalises to NFKC (so fullwidth, ligature
/// and other compatibility forms become the plain letters they stand for), turns every
/// run of whitespace into one space, trims both ends and cuts the result to at most `max`
/// bytes on a character boundary. Used on names and chat
/// before anyone sees them. Cleaning clean text changes nothing.
pub fn clean_text(text: &str, max: usize) -> String {
    let mut out = String::new();
    // A space is written only once something follows it, which trims the end and
    // collapses runs; none is pending before the first character, which trims the start.
    let mut space = false;
    // Hidden characters go before normalising (they can separate a letter from the
    // mark it would combine with) and after (in case normalising makes one).
    let normal = text.chars().filter(|&c| !is_hidden(c)).nfkc();
    for c in normal.filter(|&c| !is_hidden(c)) {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        let room = usize::from(space) + c.len_utf8();
        if out.len() + room > max {
            break;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// NFKC of the lower case of `text`: Unicode case folding by way of `to_lowercase`, with
/// the normalisation repeated because lowering can undo it.
fn fold_case(text: &str) -> String {
    text.to_lowercase().nfkc().collect()
}

/// What a name is compared by when names must differ: two names with the same key look
/// alike to a player. The key is the [cleaned](clean_text) name with case folded and
/// every character replaced by its UTS #39 confusable prototype ("skeleton"), so
/// "alice", "ALICE", "ａｌｉｃｅ" (fullwidth), "al\u{200B}ice" (a zero-width space) and
/// "\u{0430}lice" (a Cyrillic а) share one.
///
/// The skeleton is taken before folding case as well as after: capitals such as Greek
/// Ε look like Latin E while their small forms do not look like e. And 'i' is keyed as
/// 'l', since a capital I, whose small form is i, looks like l in many fonts; names that
/// differ only there count as alike, which costs at most a " (2)".
pub fn name_key(name: &str) -> String {
    let upper_alike: String = skeleton(&clean_text(name, usize::MAX)).collect();
    let lower_alike: String = skeleton(&fold_case(&upper_alike)).collect();
    fold_case(&lower_alike)
        .chars()
        .map(|c| if c == 'i' { 'l' } else { c })
        .collect()
}

/// Whether `name` is, or only decorates, one of the [`RESERVED_NAMES`]: its key's
/// letters alone are a reserved name's, so `ADMIN`, `Adm1n`, `[Admin]` and `Admin (2)`
/// are all reserved. A server gives a player asking for one the default name instead.
pub fn is_reserved_name(name: &str) -> bool {
    let letters = |name: &str| -> String {
        name_key(name)
            .chars()
            .filter(|c| c.is_alphabetic())
            .collect()
    };
    let wanted = letters(name);
    !wanted.is_empty() && RESERVED_NAMES.iter().any(|r| letters(r) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_dropped_and_ends_trimmed() {
        assert_eq!(clean_text("  hi\u{1b}[31m there \n", 100), "hi[31m there");
        assert_eq!(clean_text("\u{0}\u{1}", 10), "");
        assert_eq!(clean_text("a\u{85}b\u{7f}c", 10), "abc");
    }

    #[test]
    fn zero_width_characters_are_dropped() {
        for zw in [
            '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}',
        ] {
            assert_eq!(
                clean_text(&format!("al{zw}ice"), 32),
                "alice",
                "U+{:04X}",
                zw as u32
            );
        }
    }

    #[test]
    fn bidi_controls_are_dropped() {
        let bidi = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
        ];
        for c in bidi {
            assert_eq!(
                clean_text(&format!("{c}ecila"), 32),
                "ecila",
                "U+{:04X}",
                c as u32
            );
        }
        // The classic: a right-to-left override making "exe.txt" read as "txt.exe".
        assert_eq!(clean_text("bob\u{202E}txt.exe", 32), "bobtxt.exe");
    }

    #[test]
    fn blank_fillers_are_dropped() {
        let fillers = "\u{3164}\u{115F}\u{1160}\u{FFA0}\u{2800}\u{034F}\u{FE0F}\u{E0100}\u{E0041}";
        assert_eq!(clean_text(fillers, 64), "");
        assert_eq!(clean_text(&format!("bo{fillers}b"), 64), "bob");
    }

    #[test]
    fn compatibility_forms_become_plain_letters() {
        assert_eq!(clean_text("ａｌｉｃｅ", 32), "alice");
        assert_eq!(clean_text("ﬁre", 32), "fire");
        assert_eq!(clean_text("e\u{301}", 32), "\u{E9}", "composed");
        assert_eq!(clean_text("Ⅸ", 32), "IX");
    }

    #[test]
    fn whitespace_runs_become_one_space() {
        assert_eq!(clean_text("a \t\n  b", 32), "a b");
        assert_eq!(clean_text("a\u{3000}\u{A0}\u{2003}b", 32), "a b");
        assert_eq!(clean_text("a\u{2028}b\u{2029}c", 32), "a b c");
        assert_eq!(clean_text(" \u{200B} a \u{200B} ", 32), "a");
        assert_eq!(clean_text("   ", 32), "");
    }

    #[test]
    fn the_byte_cap_cuts_on_character_boundaries() {
        assert_eq!(clean_text("ééééé", 5), "éé");
        assert_eq!(clean_text("ab😀", 5), "ab");
        assert_eq!(clean_text("ab😀", 6), "ab😀");
        // No space is left dangling where the cut falls just after one.
        assert_eq!(clean_text("abc def", 4), "abc");
        assert_eq!(clean_text("abc def", 0), "");
        // A compatibility form counts at its normalised size: "ﷺ" is 33 bytes in NFKC.
        let cut = clean_text("\u{FDFA}", 32);
        let whole = "\u{635}\u{644}\u{649} \u{627}\u{644}\u{644}\u{647} \u{639}\u{644}\u{64A}\u{647} \u{648}\u{633}\u{644}\u{645}";
        assert_eq!(clean_text("\u{FDFA}", 64), whole);
        assert!(
            !cut.is_empty() && cut.len() <= 32 && whole.starts_with(&cut),
            "{cut:?}"
        );
        for max in 0..40 {
            let cut = clean_text("x ü 漢字 😀 ﬁ ａ", max);
            assert!(cut.len() <= max, "{cut:?} over {max}");
        }
    }

    #[test]
    fn cleaning_twice_changes_nothing() {
        let mut samples: Vec<String> = [
            "  hi\u{1b}[31m there \n",
            "al\u{200B}ice",
            "bob\u{202E}txt.exe",
            "ａｌｉｃｅ",
            "e\u{301}\u{323}",
            "a\u{323}\u{302}\u{301}",
            "\u{3164}x\u{3000}\u{3000}y",
            "\u{FDFA}\u{FDFA}",
            "가\u{11A8}",
            " \u{301}start",
            "x\u{200B}\u{301}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Strings drawn from characters that normalisation, folding and cleaning treat
        // specially, with a fixed-seed generator so a failure reproduces.
        let pool: Vec<char> = "aAeEiIlL01 \t\u{301}\u{323}\u{302}\u{300}\u{200B}\u{202E}\u{3164}\
                               \u{A0}\u{3000}ﬁＡé가\u{11A8}\u{1100}\u{1161}ǅΣσς\u{FDFA}😀\u{FE0F}"
            .chars()
            .collect();
        let mut seed: u64 = 0x5eed;
        for _ in 0..2000 {
            let len = (seed >> 59) as usize;
            let s = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    pool[(seed >> 33) as usize % pool.len()]
                })
                .collect();
            samples.push(s);
        }
        for s in &samples {
            for max in [4, 7, 32, 200] {
                let once = clean_text(s, max);
                assert_eq!(clean_text(&once, max), once, "{s:?} at {max}");
                assert!(once.len() <= max);
                assert!(!once.chars().any(is_hidden), "{once:?}");
            }
        }
    }

    #[test]
    fn look_alike_names_share_a_key() {
        let alice = name_key("alice");
        for alike in [
            "ALICE",
            "Alice",
            "ａｌｉｃｅ",
            "al\u{200B}ice",
            "\u{0430}lice",
            "\u{0410}LICE",
            "\u{391}LICE",
            " alice ",
            "al\u{202E}ice",
        ] {
            assert_eq!(name_key(alike), alice, "{alike:?}");
        }
        assert_eq!(name_key("0scar"), name_key("oscar"));
        assert_eq!(name_key("Ian"), name_key("lan"));
        assert_eq!(name_key("1an"), name_key("lan"));
        assert_eq!(name_key("rnalice"), name_key("malice"));
        assert_ne!(name_key("alice"), name_key("alicia"));
        assert_ne!(name_key("bob"), name_key("rob"));
        assert_ne!(name_key("alice"), name_key("alice (2)"));
    }

    #[test]
    fn reserved_names_are_matched_by_key() {
        for name in RESERVED_NAMES {
            assert!(is_reserved_name(name), "{name}");
        }
        for alike in [
            "server",
            "SERVER",
            "Ｓｅｒｖｅｒ",
            "Ser\u{200B}ver",
            "\u{405}erver",
            "Adm1n",
            "[Admin]",
            "Admin (2)",
            "console:",
            "SYSTEM",
            "sightline",
        ] {
            assert!(is_reserved_name(alike), "{alike:?}");
        }
        for free in [
            "alice",
            "player",
            "Servers",
            "Administrator",
            "",
            "42",
            "Serve",
        ] {
            assert!(!is_reserved_name(free), "{free:?}");
        }
    }
}
