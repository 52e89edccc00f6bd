//! The client's console variables and where each one takes effect.

use bevy::prelude::*;
use sightline_console::{CvarDef, CvarFlags, CvarKind, CvarValue, Cvars};
use sightline_interpolation::InterpolationSettings;
use sightline_net::{ConditionerSettings, LinkConditions};
use sightline_netgraph::NetgraphMode;
use std::time::{Duration, Instant};

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
            "name",
            Text { max_len: 32 },
            V::Text("player".into()),
            "your name on servers",
            CvarFlags::SAVED,
        ),
        def(
            "cl_netgraph",
            Int { min: 0, max: 2 },
            V::Int(0),
            "network graph: 0 off, 1 text, 2 text and graphs",
            CvarFlags::SAVED,
        ),
        def(
            "cl_interp",
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
            "cl_timenudge",
            Float {
                min: -30.0,
                max: 30.0,
            },
            V::Float(0.0),
            "shift remote players in time, ms; negative is closer to now, with more extrapolation",
            CvarFlags::SAVED,
        ),
        def(
            "sensitivity",
            Float {
                min: 0.05,
                max: 20.0,
            },
            V::Float(3.0),
            "mouse sensitivity (0.022 degrees per count per unit, as in Quake)",
            CvarFlags::SAVED,
        ),
        def(
            "fov",
            Float {
                min: 60.0,
                max: 130.0,
            },
            V::Float(90.0),
            "vertical field of view, degrees",
            CvarFlags::SAVED,
        ),
        def(
            "fps_max",
            Int { min: 0, max: 1000 },
            V::Int(0),
            "frame rate cap; 0 for none (values under 30 count as 30)",
            CvarFlags::SAVED,
        ),
        def(
            "volume",
            Float { min: 0.0, max: 1.0 },
            V::Float(0.8),
            "master volume, 0 to 1",
            CvarFlags::SAVED,
        ),
        def(
            "net_fakelag",
            Float {
                min: 0.0,
                max: 1000.0,
            },
            V::Float(0.0),
            "fake one-way latency on your traffic, ms, both ways",
            CvarFlags::NONE,
        ),
        def(
            "net_fakejitter",
            Float {
                min: 0.0,
                max: 500.0,
            },
            V::Float(0.0),
            "fake jitter on your traffic, ms",
            CvarFlags::NONE,
        ),
        def(
            "net_fakeloss",
            Float {
                min: 0.0,
                max: 100.0,
            },
            V::Float(0.0),
            "fake packet loss on your traffic, percent",
            CvarFlags::NONE,
        ),
        def(
            "version",
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
    cvars.force("net_fakelag", CvarValue::Float(c.latency_ms as f64));
    cvars.force("net_fakejitter", CvarValue::Float(c.jitter_ms as f64));
    cvars.force("net_fakeloss", CvarValue::Float(c.loss_pct as f64));
}

/// Copies cvar values into the resources that use them, when they change.
fn apply_cvars(
    cvars: Res<Cvars>,
    mut netgraph: ResMut<NetgraphMode>,
    mut interp: ResMut<InterpolationSettings>,
    mut link: ResMut<LinkConditions>,
) {
    if !cvars.is_changed() {
        return;
    }
    netgraph.set_if_neq(NetgraphMode(cvars.number("cl_netgraph") as u8));
    let settings = InterpolationSettings {
        cl_interp: cvars.number("cl_interp") as f32,
        cl_timenudge_ms: cvars.number("cl_timenudge") as f32,
        ..*interp
    };
    interp.set_if_neq(settings);
    let conditions = ConditionerSettings {
        latency_ms: cvars.number("net_fakelag") as f32,
        jitter_ms: cvars.number("net_fakejitter") as f32,
        loss_pct: cvars.number("net_fakeloss") as f32,
        ..link.0
    };
    link.set_if_neq(LinkConditions(conditions));
}

/// `fps_max`: sleeps off what is left of the frame's time budget.
fn cap_frame_rate(cvars: Res<Cvars>, mut last: Local<Option<Instant>>) {
    let cap = cvars.number("fps_max");
    let now = Instant::now();
    if cap > 0.0
        && let Some(previous) = *last
    {
        let budget = Duration::from_secs_f64(1.0 / cap.max(30.0));
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
}
