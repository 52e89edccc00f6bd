//! Key bindings: a key name to a console command (`+jump` and friends name game actions).

use bevy::prelude::*;
use std::collections::BTreeMap;

/// Keys by name, each bound to a command.
#[derive(Resource, Debug, Clone, Default, PartialEq, Eq)]
pub struct Bindings {
    map: BTreeMap<String, String>,
}

impl Bindings {
    /// Binds `key` (case-insensitive) to `command`.
    pub fn bind(&mut self, key: &str, command: &str) {
        self.map
            .insert(key.to_ascii_lowercase(), command.to_string());
    }

    /// Removes a binding; returns whether there was one.
    pub fn unbind(&mut self, key: &str) -> bool {
        self.map.remove(&key.to_ascii_lowercase()).is_some()
    }

    /// The command bound to `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(&key.to_ascii_lowercase()).map(String::as_str)
    }

    /// Every binding, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Keys bound to `command`.
    pub fn keys_for<'a>(&'a self, command: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.map
            .iter()
            .filter(move |(_, c)| c.as_str() == command)
            .map(|(k, _)| k.as_str())
    }
}
