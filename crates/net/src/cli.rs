//! Command-line parsing shared by the binaries.

use clap::Parser;
use clap::error::ErrorKind;

/// Parses the command line; on a bad flag or value prints the error and the usage line
/// and exits with status 2 (help and version requests exit 0 as usual).
pub fn parse_args<A: Parser>() -> A {
    A::try_parse().unwrap_or_else(|e| {
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            e.exit();
        }
        let rendered = e.render().to_string();
        eprint!("{rendered}");
        if !rendered.contains("Usage:") {
            eprintln!("\n{}", A::command().render_usage());
        }
        std::process::exit(2);
    })
}
