//! Finding, reading and checking map files.

use crate::MapDef;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Longest map name, in bytes; it travels in the Welcome message.
pub const MAX_MAP_NAME: usize = 32;

/// Largest map file read, in bytes. The shipped maps are a few kilobytes; the cap keeps a
/// huge or endless file (a device, a runaway generator) from exhausting memory.
pub const MAX_MAP_BYTES: usize = 1024 * 1024;

/// Whether `name` is a map identifier: 1 to [`MAX_MAP_NAME`] ASCII letters, digits, '_'
/// and '-', not starting with '-'. Map names travel between server and client, so the
/// rule leaves no room for paths (no slash, backslash, dot or colon), option-like names
/// or anything outside ASCII.
pub fn is_map_identifier(name: &str) -> bool {
    (1..=MAX_MAP_NAME).contains(&name.len())
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A map that could not be used, with the place in the file that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    /// The file that was read.
    pub file: PathBuf,
    /// 1-based line of the problem (0 when the file could not be read at all).
    pub line: usize,
    /// 1-based column, where known.
    pub column: usize,
    /// What is wrong, in words.
    pub reason: String,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for MapError {}

/// A parsed map and the hash of the text it came from.
#[derive(Debug, Clone)]
pub struct MapSource {
    /// The parsed, checked map.
    pub def: MapDef,
    /// [`content_hash`] of the file.
    pub hash: u64,
}

impl MapSource {
    /// Reads and checks a map file: a regular file of at most [`MAX_MAP_BYTES`] of UTF-8.
    pub fn load(path: &Path) -> Result<Self, MapError> {
        let fail = |reason: String| MapError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            reason,
        };
        let unreadable = |e: std::io::Error| fail(format!("cannot read map file: {e}"));
        // Checked before opening: opening a FIFO would block until a writer comes, and
        // a device such as /dev/zero never ends.
        if !std::fs::metadata(path).map_err(unreadable)?.is_file() {
            return Err(fail("not a regular file".into()));
        }
        let file = std::fs::File::open(path).map_err(unreadable)?;
        // Again on the handle, in case the path was swapped between the two looks.
        if !file.metadata().map_err(unreadable)?.is_file() {
            return Err(fail("not a regular file".into()));
        }
        let mut bytes = Vec::new();
        // One byte past the cap tells "exactly at the cap" from "over it".
        file.take(MAX_MAP_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        if bytes.len() > MAX_MAP_BYTES {
            return Err(fail(format!(
                "map file is larger than {MAX_MAP_BYTES} bytes"
            )));
        }
        let text =
            String::from_utf8(bytes).map_err(|_| fail("map file is not UTF-8 text".into()))?;
        Self::parse(path, &text)
    }

    /// Parses and checks map text; `file` names it in errors.
    pub fn parse(file: &Path, text: &str) -> Result<Self, MapError> {
        let def: MapDef = ron::Options::default()
            .from_str(text)
            .map_err(|e| MapError {
                file: file.to_path_buf(),
                line: e.span.start.line,
                column: e.span.start.col,
                reason: e.code.to_string(),
            })?;
        check_whole_map(&def).map_err(|(field, reason)| {
            let (line, column) = line_of_field(text, field);
            MapError {
                file: file.to_path_buf(),
                line,
                column,
                reason,
            }
        })?;
        Ok(Self {
            def,
            hash: content_hash(text),
        })
    }
}

/// Checks that need the whole map; returns the field to blame and why.
fn check_whole_map(def: &MapDef) -> Result<(), (&'static str, String)> {
    if def.name.is_empty() || def.name.len() > MAX_MAP_NAME {
        return Err((
            "name",
            format!("map name must be 1 to {MAX_MAP_NAME} bytes long"),
        ));
    }
    // The server sends this name to clients, which accept nothing else.
    if !is_map_identifier(&def.name) {
        return Err((
            "name",
            format!(
                "map name {:?} may hold only letters, digits, '_' and '-', and may not \
                 start with '-'",
                def.name
            ),
        ));
    }
    if def.brushes.is_empty() {
        return Err((
            "brushes",
            "a map needs at least one brush to stand on".into(),
        ));
    }
    if def.spawns.is_empty() {
        return Err(("spawns", "a map needs at least one spawn point".into()));
    }
    Ok(())
}

/// Line and column where `field:` first appears, or the start of the file.
fn line_of_field(text: &str, field: &str) -> (usize, usize) {
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(field)
            && rest.trim_start().starts_with(':')
        {
            return (i + 1, line.len() - trimmed.len() + 1);
        }
    }
    (1, 1)
}

/// A stable 64-bit FNV-1a hash of a map's text with line endings normalised, so a
/// Windows checkout (CRLF) and a Linux one agree while any real edit changes it.
pub fn content_hash(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes().iter().filter(|&&b| b != b'\r') {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The folder maps are read from: `$SIGHTLINE_MAPS`, else `./maps`, else the `maps/`
/// folder of the source tree this binary was built from.
pub fn maps_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SIGHTLINE_MAPS") {
        return PathBuf::from(dir);
    }
    let local = PathBuf::from("maps");
    if local.is_dir() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../maps")
}

/// Resolves `--map` values: a path to a `.ron` file, or a map name looked up in
/// [`maps_dir`]. Only for the host's own choices; a name from the network goes through
/// [`find_map_by_name`].
pub fn find_map(name_or_path: &str) -> PathBuf {
    let as_path = Path::new(name_or_path);
    if name_or_path.ends_with(".ron") || as_path.components().count() > 1 {
        as_path.to_path_buf()
    } else {
        maps_dir().join(format!("{name_or_path}.ron"))
    }
}

/// Resolves a map name that came from elsewhere (a server's Welcome or MapChange): only a
/// [`is_map_identifier`] name, only as `<name>.ron` in [`maps_dir`], never a path.
pub fn find_map_by_name(name: &str) -> Result<PathBuf, MapError> {
    map_in(&maps_dir(), name)
}

/// [`find_map_by_name`] in the folder `dir`.
fn map_in(dir: &Path, name: &str) -> Result<PathBuf, MapError> {
    let fail = |reason: String| MapError {
        file: dir.to_path_buf(),
        line: 0,
        column: 0,
        reason,
    };
    if !is_map_identifier(name) {
        return Err(fail(format!(
            "{name:?} is not a map name (1 to {MAX_MAP_NAME} ASCII letters, digits, '_' or \
             '-', not starting with '-')"
        )));
    }
    let path = dir.join(format!("{name}.ron"));
    if !path.is_file() {
        return Err(fail(format!("no map named {name:?} in this folder")));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"(
    name: "tiny",
    sky: (0.5, 0.6, 0.9),
    sun: (direction: (0.0, -1.0, 0.0), color: (1.0, 1.0, 1.0), illuminance: 10000.0),
    ambient: (color: (1.0, 1.0, 1.0), brightness: 200.0),
    brushes: [
        Box(min: (-5.0, -1.0, -5.0), max: (5.0, 0.0, 5.0), color: (0.5, 0.5, 0.5)),
        Rotated(center: (0.0, 1.0, 3.0), half_extents: (1.0, 0.1, 2.0), pitch: 20.0, color: (0.3, 0.3, 0.3)),
    ],
    spawns: [(pos: (0.0, 0.0, 0.0), yaw: 90.0)],
    items: [(kind: Health, pos: (1.0, 0.0, 1.0))],
    lights: [(pos: (0.0, 4.0, 0.0), color: (1.0, 0.9, 0.8), intensity: 1000.0, range: 10.0)],
)"#;

    fn parse(text: &str) -> Result<MapSource, MapError> {
        MapSource::parse(Path::new("maps/test.ron"), text)
    }

    #[test]
    fn a_good_map_parses() {
        let map = parse(GOOD).unwrap();
        assert_eq!(map.def.name, "tiny");
        assert_eq!(map.def.brushes.len(), 2);
        assert_eq!(map.def.spawns[0].yaw, 90f32.to_radians());
        assert_eq!(map.def.items.len(), 1);
    }

    #[test]
    fn an_inverted_box_names_its_line() {
        let bad = GOOD.replace("max: (5.0, 0.0, 5.0)", "max: (5.0, -2.0, 5.0)");
        let err = parse(&bad).unwrap_err();
        assert_eq!(err.line, 7, "{err}");
        assert!(err.reason.contains("below max"), "{err}");
        assert!(err.to_string().starts_with("maps/test.ron:7:"), "{err}");
    }

    #[test]
    fn syntax_errors_and_unknown_fields_name_their_line() {
        let bad = GOOD.replace("color: (0.3, 0.3, 0.3))", "colour: (0.3, 0.3, 0.3))");
        let err = parse(&bad).unwrap_err();
        assert_eq!(err.line, 8, "{err}");
        let bad = GOOD.replace("yaw: 90.0)]", "yaw: 90.0]");
        assert_eq!(parse(&bad).unwrap_err().line, 10);
    }

    #[test]
    fn non_finite_and_out_of_range_values_are_refused() {
        let bad = GOOD.replace("(1.0, 0.0, 1.0)", "(1.0, NaN, 1.0)");
        let err = parse(&bad).unwrap_err();
        assert_eq!(err.line, 11, "{err}");
        let bad = GOOD.replace("sky: (0.5, 0.6, 0.9)", "sky: (0.5, 1.6, 0.9)");
        let err = parse(&bad).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.reason.contains("between 0 and 1"), "{err}");
    }

    #[test]
    fn a_map_without_spawns_is_refused_at_the_spawns_line() {
        let bad = GOOD.replace("spawns: [(pos: (0.0, 0.0, 0.0), yaw: 90.0)]", "spawns: []");
        let err = parse(&bad).unwrap_err();
        assert_eq!((err.line, err.column), (10, 5), "{err}");
        assert!(err.reason.contains("spawn"), "{err}");
    }

    #[test]
    fn hash_ignores_line_endings_but_not_edits() {
        let crlf = GOOD.replace('\n', "\r\n");
        assert_eq!(content_hash(GOOD), content_hash(&crlf));
        assert_ne!(
            content_hash(GOOD),
            content_hash(&GOOD.replace("tiny", "tinY"))
        );
    }

    #[test]
    fn shipped_maps_load() {
        for name in ["duel", "depot", "spire"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../maps")
                .join(format!("{name}.ron"));
            let map = MapSource::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(map.def.name, name);
            assert!(map.def.spawns.len() >= 2);
            // Capture the flag is played on the two larger maps.
            assert_eq!(map.def.flags.is_some(), name != "duel", "{name}");
        }
    }

    #[test]
    fn a_missing_file_is_reported() {
        let err = MapSource::load(Path::new("maps/does-not-exist.ron")).unwrap_err();
        assert!(err.to_string().contains("cannot read map file"), "{err}");
    }

    #[test]
    fn map_names_resolve_into_the_maps_folder() {
        assert!(find_map("duel").ends_with("duel.ron"));
        assert_eq!(find_map("other/x.ron"), PathBuf::from("other/x.ron"));
    }

    /// A fresh folder of its own for one test, under the system's temporary folder.
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sightline-map-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn map_identifiers_are_plain_ascii_words() {
        for good in ["duel", "depot_2", "a", "Map-1", &"x".repeat(MAX_MAP_NAME)] {
            assert!(is_map_identifier(good), "{good:?}");
        }
        let too_long = "x".repeat(MAX_MAP_NAME + 1);
        for bad in [
            "",
            &too_long,
            "-rf",
            ".hidden",
            "duel.ron",
            "../../etc/passwd",
            "/dev/zero",
            "duel/../duel",
            "C:\\x",
            "C:x",
            "du el",
            "duel\0",
            "dü",
            "\u{430}",
        ] {
            assert!(!is_map_identifier(bad), "{bad:?}");
        }
    }

    #[test]
    fn names_from_the_network_resolve_only_inside_the_maps_folder() {
        let found = find_map_by_name("duel").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.file_name(), Some("duel.ron".as_ref()));
        assert_eq!(found.parent(), Some(maps_dir().as_path()));
        for bad in crate::test_support::HOSTILE_MAP_NAMES {
            let err = find_map_by_name(bad).unwrap_err();
            assert!(err.reason.contains("is not a map name"), "{bad:?}: {err}");
        }
        let err = find_map_by_name("no_such_map").unwrap_err();
        assert!(err.reason.contains("no map named"), "{err}");
    }

    #[test]
    fn a_name_is_looked_up_only_as_a_ron_file_in_its_folder() {
        let dir = scratch("lookup");
        std::fs::write(dir.join("tiny.ron"), GOOD).unwrap();
        std::fs::write(dir.join("tiny"), GOOD).unwrap();
        assert_eq!(map_in(&dir, "tiny").unwrap(), dir.join("tiny.ron"));
        std::fs::create_dir(dir.join("folder.ron")).unwrap();
        assert!(map_in(&dir, "folder").is_err(), "a folder is not a map");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn oversized_and_non_utf8_map_files_are_refused() {
        let dir = scratch("size");
        let at_cap = dir.join("at_cap.ron");
        // A valid map padded with a comment to exactly the cap still loads.
        let padding = MAX_MAP_BYTES - GOOD.len() - 3;
        std::fs::write(&at_cap, format!("{GOOD}\n//{}", "x".repeat(padding))).unwrap();
        assert_eq!(
            std::fs::metadata(&at_cap).unwrap().len(),
            MAX_MAP_BYTES as u64
        );
        MapSource::load(&at_cap).unwrap_or_else(|e| panic!("{e}"));
        let over = dir.join("over.ron");
        std::fs::write(&over, format!("{GOOD}\n//{}", "x".repeat(padding + 1))).unwrap();
        let err = MapSource::load(&over).unwrap_err();
        assert!(err.reason.contains("larger than"), "{err}");
        let binary = dir.join("binary.ron");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        let err = MapSource::load(&binary).unwrap_err();
        assert!(err.reason.contains("not UTF-8"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn folders_are_not_map_files() {
        let dir = scratch("folder");
        let err = MapSource::load(&dir).unwrap_err();
        assert!(err.reason.contains("not a regular file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_refused_without_reading() {
        let err = MapSource::load(Path::new("/dev/zero")).unwrap_err();
        assert!(err.reason.contains("not a regular file"), "{err}");
        // Opening a FIFO with no writer would block forever; it must not be opened.
        let dir = scratch("fifo");
        let fifo = dir.join("pipe.ron");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        let err = MapSource::load(&fifo).unwrap_err();
        assert!(err.reason.contains("not a regular file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
