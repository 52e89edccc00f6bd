//! Where the dedicated server's log goes and in what shape: text or JSON lines, to
//! standard error or to a file rotated by date. A file is written by a background thread
//! (`tracing_appender`'s non-blocking writer), so a slow disk never holds up a tick; if
//! that writer falls far behind, lines are dropped rather than the server waiting.

use bevy::log::{BoxedFmtLayer, LogPlugin};
use bevy::prelude::*;
use std::path::{Path, PathBuf};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line (timestamp, level, target, fields), for log collectors.
    Json,
}

/// How often a log file starts afresh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogRotation {
    /// A file an hour.
    Hourly,
    /// A file a day.
    #[default]
    Daily,
    /// One file, never rotated.
    Never,
}

/// A log file: `dir/prefix.DATE.suffix`, rotated, the oldest deleted past `keep`.
#[derive(Debug, Clone)]
pub struct LogFile {
    /// Directory the files go in.
    pub dir: PathBuf,
    /// File name before the date.
    pub prefix: String,
    /// File name after the date (the extension), if any.
    pub suffix: Option<String>,
    /// How often a new file starts.
    pub rotation: LogRotation,
    /// Most files kept.
    pub keep: usize,
}

impl LogFile {
    /// Files for `path` (`logs/server.log` becomes `logs/server.2026-12-02.log`, and so on).
    pub fn at(path: &Path, rotation: LogRotation, keep: usize) -> Self {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = path.file_stem().map_or_else(
            || "sightline-server".into(),
            |s| s.to_string_lossy().into_owned(),
        );
        let suffix = path.extension().map(|e| e.to_string_lossy().into_owned());
        Self {
            dir,
            prefix: stem,
            suffix,
            rotation,
            keep: keep.max(1),
        }
    }

    fn appender(&self) -> Result<RollingFileAppender, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let rotation = match self.rotation {
            LogRotation::Hourly => Rotation::HOURLY,
            LogRotation::Daily => Rotation::DAILY,
            LogRotation::Never => Rotation::NEVER,
        };
        let mut builder = RollingFileAppender::builder()
            .rotation(rotation)
            .filename_prefix(&self.prefix)
            .max_log_files(self.keep);
        if let Some(suffix) = &self.suffix {
            builder = builder.filename_suffix(suffix);
        }
        builder
            .build(&self.dir)
            .map_err(|e| format!("cannot open a log file in {}: {e}", self.dir.display()))
    }
}

/// The log's shape and place, read once when the log starts.
#[derive(Resource, Debug, Clone, Default)]
pub struct LogOutput {
    /// Text or JSON lines.
    pub format: LogFormat,
    /// A file instead of standard error.
    pub file: Option<LogFile>,
}

/// Keeps the log file's writer thread alive, and flushes it when the server stops.
#[derive(Resource)]
struct LogFileWriter(#[allow(dead_code)] WorkerGuard);

/// Starts the log as `output` says, with `filter` (an `EnvFilter` directive). A file that
/// cannot be opened is an error before anything runs.
pub fn add_logging(app: &mut App, output: LogOutput, filter: String) -> Result<(), String> {
    if let Some(file) = &output.file {
        // Opened here, so the error reaches the host instead of a log nobody sees.
        let (writer, guard) = tracing_appender::non_blocking(file.appender()?);
        app.insert_resource(LogFileWriter(guard))
            .insert_resource(FileWriter(writer));
    }
    app.insert_resource(output).add_plugins(LogPlugin {
        filter,
        fmt_layer: format_layer,
        ..Default::default()
    });
    Ok(())
}

/// The file's non-blocking writer, waiting for the log to start.
#[derive(Resource)]
struct FileWriter(tracing_appender::non_blocking::NonBlocking);

/// The formatting layer `LogPlugin` calls for (a plain function, so its settings come
/// through the app).
fn format_layer(app: &mut App) -> Option<BoxedFmtLayer> {
    let output = app.world_mut().remove_resource::<LogOutput>()?;
    let file = app.world_mut().remove_resource::<FileWriter>().map(|w| w.0);
    let layer = tracing_subscriber::fmt::layer();
    Some(match (output.format, file) {
        (LogFormat::Text, None) => Box::new(layer.with_writer(std::io::stderr)),
        (LogFormat::Text, Some(file)) => Box::new(layer.with_ansi(false).with_writer(file)),
        (LogFormat::Json, None) => Box::new(layer.json().with_writer(std::io::stderr)),
        (LogFormat::Json, Some(file)) => Box::new(layer.json().with_writer(file)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_path_names_its_rotated_files() {
        let file = LogFile::at(Path::new("logs/server.log"), LogRotation::Daily, 7);
        assert_eq!(file.dir, PathBuf::from("logs"));
        assert_eq!(file.prefix, "server");
        assert_eq!(file.suffix.as_deref(), Some("log"));
        let bare = LogFile::at(Path::new("server"), LogRotation::Never, 0);
        assert_eq!(bare.dir, PathBuf::from("."));
        assert_eq!(bare.suffix, None);
        assert_eq!(bare.keep, 1, "at least the file being written");
    }
}
