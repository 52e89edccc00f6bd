//! The `--fake-*` flags of the binaries that open a transport.

use crate::ConditionerSettings;

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
