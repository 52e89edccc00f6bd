//! Sightline maps: a human-editable RON format ([`MapDef`]), loading with errors that name
//! file, line and reason ([`MapError`]), a content hash that client and server compare,
//! and the [`CollisionWorld`] both sides build from the same map for movement queries.

mod collision;
mod format;
mod load;

#[doc(hidden)]
pub mod test_support;

pub use collision::{CastHit, CollisionWorld, SKIN};
pub use format::{
    Ambient, Brush, FlagBases, ItemKind, ItemSpot, JumpPad, Light, MAX_PAD_SPEED,
    MIN_BASE_DISTANCE, MapDef, Rgb, SpawnPoint, Sun,
};
pub use load::{
    MAX_MAP_BYTES, MAX_MAP_NAME, MapError, MapSource, content_hash, find_map, find_map_by_name,
    is_map_identifier, maps_dir,
};

use bevy::prelude::*;
use std::sync::Arc;

/// The map being played, shared by the simulation and (on the client) rendering.
#[derive(Resource, Clone)]
pub struct CurrentMap {
    /// The parsed map.
    pub def: Arc<MapDef>,
    /// Hash of the map file's contents, compared between client and server.
    pub hash: u64,
    /// Colliders built from the map.
    pub world: Arc<CollisionWorld>,
}

impl CurrentMap {
    /// Builds the collision world for a loaded map.
    pub fn new(source: MapSource) -> Self {
        let world = CollisionWorld::from_map(&source.def);
        Self {
            def: Arc::new(source.def),
            hash: source.hash,
            world: Arc::new(world),
        }
    }
}
