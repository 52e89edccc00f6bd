//! Finding, reading and checking map files.

use crate::MapDef;
use std::fmt;
use std::path::{Path, PathBuf};

/// Longest map name, in bytes; it travels in the Welcome message.
pub const MAX_MAP_NAME: usize = 32;

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
    /// Reads and checks a map file.
    pub fn load(path: &Path) -> Result<Self, MapError> {
        let text = std::fs::read_to_string(path).map_err(|e| MapError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            reason: format!("cannot read map file: {e}"),
        })?;
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
    if !def
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err((
            "name",
            format!(
                "map name {:?} may hold only letters, digits, '_' and '-'",
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
/// [`maps_dir`].
pub fn find_map(name_or_path: &str) -> PathBuf {
    let as_path = Path::new(name_or_path);
    if name_or_path.ends_with(".ron") || as_path.components().count() > 1 {
        as_path.to_path_buf()
    } else {
        maps_dir().join(format!("{name_or_path}.ron"))
    }
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
        for name in ["duel", "depot"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../maps")
                .join(format!("{name}.ron"));
            let map = MapSource::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(map.def.name, name);
            assert!(map.def.spawns.len() >= 2);
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
}
