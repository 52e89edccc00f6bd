//! Command-line parsing shared by the binaries.

use clap::Parser;
use clap::error::ErrorKind;

/// Parses the command line; on a bad flag or value prints the error and the usage line
/// and exits with status 2 (help and version requests exit 0 as usual).
pub fn parse_args<A: Parser>() -> A {
    parse_args_from(std::env::args_os())
}

/// [`parse_args`] from the given arguments (the program's name first), such as those
/// left once the `+command` lines are taken out.
pub fn parse_args_from<A: Parser, I, T>(args: I) -> A
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    A::try_parse_from(args).unwrap_or_else(|e| exit_with_usage(e, &A::command()))
}

/// Ends the program for a command-line error `e` of `command`: help and version print
/// and exit 0; anything else prints the error with the usage and exits 2.
pub fn exit_with_usage(e: clap::Error, command: &clap::Command) -> ! {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let rendered = e.render().to_string();
    eprint!("{rendered}");
    if !rendered.contains("Usage:") {
        eprintln!("\n{}", command.clone().render_usage());
    }
    std::process::exit(2);
}
