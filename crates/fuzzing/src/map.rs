//! The body for the map loader, [`MapSource::parse`].

use sightline_map::{Brush, CollisionWorld, MapDef, MapSource, Rgb, content_hash};
use std::path::Path;

/// Furthest any map coordinate may be from the origin, as the format promises.
const WORLD_LIMIT: f32 = 1000.0;

/// Parses `data` as a map file. A refusal must name the file and a line inside it; a map
/// must keep every promise of the format, hash its text regardless of line endings, parse
/// the same way twice, and build a collision world with one collider per brush.
pub fn map_file(data: &[u8]) {
    // The loader refuses text that is not UTF-8 before it parses anything.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("maps/fuzz.ron");
    let map = match MapSource::parse(file, text) {
        Ok(map) => map,
        Err(e) => {
            assert_eq!(e.file, file);
            assert!(!e.reason.is_empty(), "an error without a reason");
            assert!(
                e.line <= text.lines().count() + 1,
                "error on line {} of a {}-line file",
                e.line,
                text.lines().count()
            );
            assert!(e.to_string().starts_with("maps/fuzz.ron"));
            return;
        }
    };
    check_def(&map.def);
    assert_eq!(map.hash, content_hash(text));
    assert_eq!(
        map.hash,
        content_hash(&text.replace('\n', "\r\n")),
        "line endings changed the hash"
    );
    let again = MapSource::parse(file, text).expect("a map that parsed once parses again");
    assert_eq!((&again.def, again.hash), (&map.def, map.hash));
    assert_eq!(
        CollisionWorld::from_map(&map.def).len(),
        map.def.brushes.len()
    );
}

fn in_world(what: &str, v: [f32; 3]) {
    assert!(
        v.iter().all(|c| c.is_finite() && c.abs() <= WORLD_LIMIT),
        "{what} {v:?} outside the world"
    );
}

fn colour(what: &str, c: Rgb) {
    assert!(
        c.0.iter().all(|v| (0.0..=1.0).contains(v)),
        "{what} colour {:?} outside 0..=1",
        c.0
    );
}

fn non_negative(what: &str, v: f32) {
    assert!(v.is_finite() && v >= 0.0, "{what} {v} not a finite amount");
}

/// Every range the map format documents, checked on a map the loader accepted.
fn check_def(def: &MapDef) {
    assert!(
        (1..=32).contains(&def.name.len())
            && def
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "map name {:?}",
        def.name
    );
    assert!(!def.brushes.is_empty() && !def.spawns.is_empty());
    colour("sky", def.sky);
    colour("sun", def.sun.color);
    let d = def.sun.direction;
    assert!(
        d.is_finite() && (d.length() - 1.0).abs() < 1e-3,
        "sun direction {d} not normalised"
    );
    non_negative("sun illuminance", def.sun.illuminance);
    colour("ambient", def.ambient.color);
    non_negative("ambient brightness", def.ambient.brightness);
    for brush in &def.brushes {
        colour("brush", brush.color());
        match *brush {
            Brush::Box { min, max, .. } => {
                in_world("box min", min.to_array());
                in_world("box max", max.to_array());
                assert!(min.cmplt(max).all(), "box {min} to {max} inside out");
            }
            Brush::Rotated {
                center,
                half_extents,
                yaw_pitch_roll,
                ..
            } => {
                in_world("rotated box centre", center.to_array());
                in_world("rotated box half extents", half_extents.to_array());
                assert!(
                    half_extents.min_element() > 0.0,
                    "half extents {half_extents}"
                );
                assert!(
                    yaw_pitch_roll.is_finite() && yaw_pitch_roll.abs().max_element() <= 360.0,
                    "angles {yaw_pitch_roll}"
                );
            }
        }
        let (centre, half, rotation) = brush.oriented_box();
        assert!(centre.is_finite() && half.is_finite());
        assert!(
            rotation.is_finite() && rotation.is_normalized(),
            "{rotation}"
        );
    }
    for spawn in &def.spawns {
        in_world("spawn", spawn.pos.to_array());
        assert!(
            spawn.yaw.is_finite() && spawn.yaw.abs() <= std::f32::consts::TAU + 1e-4,
            "spawn yaw {} radians",
            spawn.yaw
        );
    }
    for item in &def.items {
        in_world("item", item.pos.to_array());
    }
    for light in &def.lights {
        in_world("light", light.pos.to_array());
        colour("light", light.color);
        non_negative("light intensity", light.intensity);
        assert!(
            light.range.is_finite() && light.range > 0.0,
            "light range {}",
            light.range
        );
    }
}
