//! The client's console variables and where each one takes effect.

use bevy::prelude::*;
use sightline_client::CommandRate;
use sightline_console::{CvarDef, CvarFlags, CvarKind, CvarValue, Cvars};
use sightline_interpolation::InterpolationSettings;
use sightline_net::{ConditionerSettings, LinkConditions};
use sightline_netgraph::NetgraphMode;
use std::time::{Duration, Instant};

/// The client's cvars by handle: the one place each name is written.
pub mod cvar {
    use sightline_console::CvarHandle;

    /// `name`.
    pub const NAME: CvarHandle<String> = CvarHandle::new("name");
    /// `cl_netgraph`.
    pub const CL_NETGRAPH: CvarHandle<i64> = CvarHandle::new("cl_netgraph");
    /// `cl_interp`.
    pub const CL_INTERP: CvarHandle<f64> = CvarHandle::new("cl_interp");
    /// `cl_cmdrate`.
    pub const CL_CMDRATE: CvarHandle<i64> = CvarHandle::new("cl_cmdrate");
    /// `cl_timenudge`.
    pub const CL_TIMENUDGE: CvarHandle<f64> = CvarHandle::new("cl_timenudge");
    /// `sensitivity`.
    pub const SENSITIVITY: CvarHandle<f64> = CvarHandle::new("sensitivity");
    /// `fov`.
    pub const FOV: CvarHandle<f64> = CvarHandle::new("fov");
    /// `fps_max`.
    pub const FPS_MAX: CvarHandle<i64> = CvarHandle::new("fps_max");
    /// `volume`.
    pub const VOLUME: CvarHandle<f64> = CvarHandle::new("volume");
    /// `net_fakelag`.
    pub const NET_FAKELAG: CvarHandle<f64> = CvarHandle::new("net_fakelag");
    /// `net_fakejitter`.
    pub const NET_FAKEJITTER: CvarHandle<f64> = CvarHandle::new("net_fakejitter");
    /// `net_fakeloss`.
    pub const NET_FAKELOSS: CvarHandle<f64> = CvarHandle::new("net_fakeloss");
    /// `version`.
    pub const VERSION: CvarHandle<String> = CvarHandle::new("version");
}

/// Registers the client's cvars and applies their values.
pub struct CvarsPlugin;

fn def(
    name: &'static str,
    kind: CvarKind,
    default: CvarValue,
    help: &'static str,
    flags: CvarFlags,
) -> CvarDef {
    CvarDef {
        name,
        kind,
        default,
        help,
        flags,
    }
}

/// Every client cvar.
pub fn client_cvars() -> Vec<CvarDef> {
    use CvarKind::*;
    use CvarValue as V;
    vec![
        def(
            cvar::NAME.name(),
            Text { max_len: 32 },
            V::Text("player".into()),
            "your name on servers",
            CvarFlags::SAVED,
        ),
        def(
            cvar::CL_NETGRAPH.name(),
            Int { min: 0, max: 2 },
            V::Int(0),
            "network graph: 0 off, 1 text, 2 text and graphs",
            CvarFlags::SAVED,
        ),
        def(
            cvar::CL_INTERP.name(),
            // Lag compensation honours up to 0.25 s (sightline_combat::MAX_VIEW_LAG).
            Float {
                min: 0.0,
                max: 0.25,
            },
            V::Float(0.0),
            "interpolation delay in seconds (at most 0.25, what lag compensation honours); 0 chooses it from how snapshots arrive",
            CvarFlags::SAVED,
        ),
        def(
            cvar::CL_CMDRATE.name(),
            Int { min: 0, max: 1000 },
            V::Int(0),
            "most input packets a second; 0 sends one every frame (the least delay), values under 10 count as 10",
            CvarFlags::SAVED,
        ),
        def(
            cvar::CL_TIMENUDGE.name(),
            Float {
                min: -30.0,
                max: 30.0,
            },
            V::Float(0.0),
            "shift remote players in time, ms; negative is closer to now, with more extrapolation",
            CvarFlags::SAVED,
        ),
        def(
            cvar::SENSITIVITY.name(),
            Float {
                min: 0.05,
                max: 20.0,
            },
            V::Float(3.0),
            "mouse sensitivity (0.022 degrees per count per unit, as in Quake)",
            CvarFlags::SAVED,
        ),
        def(
            cvar::FOV.name(),
            Float {
                min: 60.0,
                max: 130.0,
            },
            V::Float(90.0),
            "vertical field of view, degrees",
            CvarFlags::SAVED,
        ),
        def(
            cvar::FPS_MAX.name(),
            Int { min: 0, max: 1000 },
            V::Int(0),
            "frame rate cap; 0 for none (values under 30 count as 30)",
            CvarFlags::SAVED,
        ),
        def(
            cvar::VOLUME.name(),
            Float { min: 0.0, max: 1.0 },
            V::Float(0.8),
            "master volume, 0 to 1",
            CvarFlags::SAVED,
        ),
        def(
            cvar::NET_FAKELAG.name(),
            Float {
                min: 0.0,
                max: 1000.0,
            },
            V::Float(0.0),
            "fake one-way latency on your traffic, ms, both ways",
            CvarFlags::NONE,
        ),
        def(
            cvar::NET_FAKEJITTER.name(),
            Float {
                min: 0.0,
                max: 500.0,
            },
            V::Float(0.0),
            "fake jitter on your traffic, ms",
            CvarFlags::NONE,
        ),
        def(
            cvar::NET_FAKELOSS.name(),
            Float {
                min: 0.0,
                max: 100.0,
            },
            V::Float(0.0),
            "fake packet loss on your traffic, percent",
            CvarFlags::NONE,
        ),
        def(
            cvar::VERSION.name(),
            Text { max_len: 32 },
            V::Text(env!("CARGO_PKG_VERSION").into()),
            "this build's version",
            CvarFlags::READ_ONLY,
        ),
    ]
}

impl Plugin for CvarsPlugin {
    fn build(&self, app: &mut App) {
        let mut cvars = app.world_mut().get_resource_or_insert_with(Cvars::default);
        for d in client_cvars() {
            cvars.register(d);
        }
        app.add_systems(Startup, seed_fake_link_cvars)
            .add_systems(Update, apply_cvars)
            .add_systems(Last, cap_frame_rate);
    }
}

/// `--fake-*` flags show up in the `net_fake*` cvars, so the console agrees with them.
fn seed_fake_link_cvars(conditions: Res<LinkConditions>, mut cvars: ResMut<Cvars>) {
    let c = conditions.0;
    cvars.force(
        cvar::NET_FAKELAG.name(),
        CvarValue::Float(c.latency_ms as f64),
    );
    cvars.force(
        cvar::NET_FAKEJITTER.name(),
        CvarValue::Float(c.jitter_ms as f64),
    );
    cvars.force(
        cvar::NET_FAKELOSS.name(),
        CvarValue::Float(c.loss_pct as f64),
    );
}

/// Copies cvar values into the resources that use them, when they change.
fn apply_cvars(
    cvars: Res<Cvars>,
    mut netgraph: ResMut<NetgraphMode>,
    mut interp: ResMut<InterpolationSettings>,
    mut link: ResMut<LinkConditions>,
    mut rate: ResMut<CommandRate>,
) {
    if !cvars.is_changed() {
        return;
    }
    rate.set_if_neq(CommandRate(
        cvars.read(cvar::CL_CMDRATE).clamp(0, 1000) as u32
    ));
    netgraph.set_if_neq(NetgraphMode(cvars.read(cvar::CL_NETGRAPH).clamp(0, 2) as u8));
    let settings = InterpolationSettings {
        cl_interp: cvars.read(cvar::CL_INTERP) as f32,
        cl_timenudge_ms: cvars.read(cvar::CL_TIMENUDGE) as f32,
        ..*interp
    };
    interp.set_if_neq(settings);
    let conditions = ConditionerSettings {
        latency_ms: cvars.read(cvar::NET_FAKELAG) as f32,
        jitter_ms: cvars.read(cvar::NET_FAKEJITTER) as f32,
        loss_pct: cvars.read(cvar::NET_FAKELOSS) as f32,
        ..link.0
    };
    link.set_if_neq(LinkConditions(conditions));
}

/// `fps_max`: sleeps off what is left of the frame's time budget.
fn cap_frame_rate(cvars: Res<Cvars>, mut last: Local<Option<Instant>>) {
    let cap = cvars.read(cvar::FPS_MAX);
    let now = Instant::now();
    if cap > 0
        && let Some(previous) = *last
    {
        let budget = Duration::from_secs_f64(1.0 / cap.max(30) as f64);
        if let Some(rest) = budget.checked_sub(now - previous) {
            std::thread::sleep(rest);
        }
    }
    *last = Some(Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cvar_default_is_valid_for_its_own_kind() {
        for d in client_cvars() {
            let text = d.default.to_string();
            assert_eq!(d.parse(&text).as_ref(), Ok(&d.default), "{}", d.name);
        }
    }

    #[test]
    fn every_handle_names_a_registered_cvar_of_its_type() {
        let mut cvars = Cvars::default();
        for d in client_cvars() {
            cvars.register(d);
        }
        cvars.check(cvar::NAME).unwrap();
        cvars.check(cvar::CL_NETGRAPH).unwrap();
        cvars.check(cvar::CL_INTERP).unwrap();
        cvars.check(cvar::CL_CMDRATE).unwrap();
        cvars.check(cvar::CL_TIMENUDGE).unwrap();
        cvars.check(cvar::SENSITIVITY).unwrap();
        cvars.check(cvar::FOV).unwrap();
        cvars.check(cvar::FPS_MAX).unwrap();
        cvars.check(cvar::VOLUME).unwrap();
        cvars.check(cvar::NET_FAKELAG).unwrap();
        cvars.check(cvar::NET_FAKEJITTER).unwrap();
        cvars.check(cvar::NET_FAKELOSS).unwrap();
        cvars.check(cvar::VERSION).unwrap();
        assert_eq!(client_cvars().len(), 13, "a cvar without a handle");
    }
}
