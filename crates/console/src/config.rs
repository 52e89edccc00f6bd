//! The config file: saved cvars and bindings as console lines, run at start-up.

use crate::command::quote;
use crate::{Bindings, Cvars};
use std::path::{Path, PathBuf};

/// Where the config file lives: the platform's config directory (e.g.
/// `~/.config/sightline/config.cfg` on Linux), or `$SIGHTLINE_CONFIG` when set.
pub fn config_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SIGHTLINE_CONFIG") {
        return Some(PathBuf::from(path));
    }
    directories::ProjectDirs::from("", "", "sightline").map(|d| d.config_dir().join("config.cfg"))
}

/// The config file's text: every saved cvar that differs from its default, and every
/// binding, as lines the console can run.
pub fn render_config(cvars: &Cvars, bindings: &Bindings) -> String {
    let mut out = String::from("// Written by Sightline; lines run at start-up.\n");
    for cvar in cvars.iter().filter(|c| c.def.flags.saved) {
        out.push_str(&format!(
            "{} {}\n",
            cvar.def.name,
            quote(&cvar.value.to_string())
        ));
    }
    out.push_str("unbindall\n");
    for (key, command) in bindings.iter() {
        out.push_str(&format!("bind {} {}\n", quote(key), quote(command)));
    }
    out
}

/// Writes the config file, creating its folder.
pub fn save_config(path: &Path, cvars: &Cvars, bindings: &Bindings) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Write beside and rename, so a crash mid-write never leaves half a config.
    let tmp = path.with_extension("cfg.tmp");
    std::fs::write(&tmp, render_config(cvars, bindings))?;
    std::fs::rename(tmp, path)
}
