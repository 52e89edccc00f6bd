//! Command-line parsing shared by the binaries.

use crate::ConditionerSettings;
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

/// The `--fake-*` flags both binaries take: a bad connection on purpose, applied to this
/// side's traffic both ways.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct FakeLinkArgs {
    /// Fake one-way latency added to this side's traffic, both ways, milliseconds.
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    pub fake_latency: f32,
    /// Fake jitter: each datagram's delay varies by up to this much, milliseconds.
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    pub fake_jitter: f32,
    /// Fake loss, percent of datagrams dropped each way.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub fake_loss: f32,
    /// Fake loss as outages in time: the link goes out for spells of 0.6 to 1.4 times
    /// this long, milliseconds, losing everything sent meanwhile, out `--fake-loss` of
    /// the time (0: each datagram lost on its own).
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    pub fake_outage: f32,
}

impl FakeLinkArgs {
    /// The conditioner settings these flags ask for, checked.
    pub fn settings(&self) -> Result<ConditionerSettings, String> {
        let settings = ConditionerSettings {
            latency_ms: self.fake_latency,
            jitter_ms: self.fake_jitter,
            loss_pct: self.fake_loss,
            outage_ms: self.fake_outage,
            ..Default::default()
        };
        settings
            .validate()
            .map(|()| settings)
            .map_err(|e| format!("--fake-*: {e}"))
    }
}
