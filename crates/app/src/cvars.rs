//! The client's console variables and where each one takes effect.

use bevy::prelude::*;
use sightline_client::{CommandRate, DesiredName, DownloadRate, UpdateRate};
use sightline_console::{CvarValue, Cvars};
use sightline_interpolation::InterpolationSettings;
use sightline_net::{ConditionerSettings, LinkConditions};
use sightline_netgraph::NetgraphMode;
use std::time::{Duration, Instant};

/// The client's cvars: one table, each a typed handle and its definition.
pub mod cvar {
    sightline_console::cvar_table! {
        /// Every client cvar's definition, to register.
        pub fn client_cvars;
        NAME: String = "name", Text { max_len: 32 }, "player", SAVED, "your name on servers";
        CL_GUID: String = "cl_guid", Text { max_len: 32 }, "", SAVED,
            "your key for servers' lifetime statistics (32 hexadecimal digits), made the \
             first time you join; keep it to yourself, and copy it to keep your record on \
             another computer";
        RCON_PASSWORD: String = "rcon_password", Text { max_len: 64 }, "", NONE,
            "the server's remote admin password, sent with each rcon command (never saved)";
        CL_NETGRAPH: i64 = "cl_netgraph", Int { min: 0, max: 2 }, 0, SAVED,
            "network graph: 0 off, 1 text, 2 text and graphs";
        CL_SHOWFPS: i64 = "cl_showfps", Int { min: 0, max: 2 }, 0, SAVED,
            "frame rate in the top left corner: 0 off, 1 frame rate and frame time, 2 also where the \
             frame's time goes (main world, render world, GPU passes, the embedded \
             server's CPU)";
        // Lag compensation honours up to 0.25 s (sightline_combat::MAX_VIEW_LAG).
        CL_INTERP: f64 = "cl_interp",
            Float { min: 0.0, max: sightline_combat::MAX_INTERP_DELAY as f64 }, 0.0, SAVED,
            "interpolation delay in seconds (at most what lag compensation honours); 0 \
             chooses it from how snapshots arrive";
        CL_CMDRATE: i64 = "cl_cmdrate", Int { min: 0, max: 1000 },
            sightline_client::CommandRate::DEFAULT.0,
            SAVED,
            "most input packets a second (one per two ticks at 128 Hz); 0 sends one every \
             frame (the least delay), values under 10 count as 10";
        CL_TIMENUDGE: f64 = "cl_timenudge", Float { min: -30.0, max: 30.0 }, 0.0, SAVED,
            "shift remote players in time, ms; negative is closer to now, with more \
             extrapolation";
        SENSITIVITY: f64 = "sensitivity", Float { min: 0.05, max: 20.0 }, 3.0, SAVED,
            "mouse sensitivity (0.022 degrees per count per unit, as in Quake)";
        FOV: f64 = "fov", Float { min: 60.0, max: 130.0 }, 90.0, SAVED,
            "vertical field of view, degrees";
        FPS_MAX: i64 = "fps_max", Int { min: 0, max: 1000 }, 0, SAVED,
            "frame rate cap; 0 for none (values under 30 count as 30)";
        VOLUME: f64 = "volume", Float { min: 0.0, max: 1.0 }, 0.8, SAVED,
            "master volume, 0 to 1";
        S_EFFECTS: f64 = "s_effects", Float { min: 0.0, max: 1.0 }, 1.0, SAVED,
            "volume of the game's sound effects (shots, steps, hits), 0 to 1, times volume";
        S_ANNOUNCER: f64 = "s_announcer", Float { min: 0.0, max: 1.0 }, 1.0, SAVED,
            "volume of the announcer, 0 to 1, times volume";
        M_INVERT: bool = "m_invert", Bool, false, SAVED,
            "1 turns the mouse's vertical axis upside down (moving it forward looks down)";
        R_PRESET: i64 = "r_preset", Int { min: 0, max: 3 }, 2, SAVED,
            "graphics quality: 0 low, 1 medium, 2 high, 3 ultra; changing it sets r_shadows, \
             r_particles, r_scale, r_aa, r_bloom and r_anisotropy, which can then be \
             changed one by one";
        R_SHADOWS: bool = "r_shadows", Bool, true, SAVED, "1 for shadows from the lights";
        R_BLOOM: bool = "r_bloom", Bool, true, SAVED, "1 for bloom around bright things";
        R_PARTICLES: i64 = "r_particles", Int { min: 0, max: 2 }, 2, SAVED,
            "particle effects: 0 off, 1 few, 2 all";
        R_SCALE: f64 = "r_scale", Float { min: 0.5, max: 1.0 }, 1.0, SAVED,
            "3D resolution as a fraction of the window's (0.5 to 1); the HUD stays sharp";
        R_AA: i64 = "r_aa", Int { min: 0, max: 2 }, 1, SAVED,
            "anti-aliasing: 0 off, 1 FXAA, 2 MSAA 4x";
        R_ANISOTROPY: i64 = "r_anisotropy", Int { min: 1, max: 16 }, 4, SAVED,
            "anisotropic filtering of the world's textures, 1 (off) to 16 samples; a \
             software renderer always gets 1";
        VID_MODE: i64 = "vid_mode", Int { min: 0, max: 2 }, 0, SAVED,
            "window mode: 0 windowed, 1 borderless full screen, 2 exclusive full screen";
        VID_WIDTH: i64 = "vid_width", Int { min: 0, max: 7680 }, 0, SAVED,
            "window width in pixels (or the full-screen video mode's); 0 keeps the size the \
             game started with (--window, or 1280x720)";
        VID_HEIGHT: i64 = "vid_height", Int { min: 0, max: 4320 }, 0, SAVED,
            "window height in pixels (or the full-screen video mode's); 0 keeps the size \
             the game started with";
        VID_VSYNC: bool = "vid_vsync", Bool, false, SAVED,
            "1 waits for the display's refresh (no tearing, a frame more of delay)";
        CL_KILLCAM: bool = "cl_killcam", Bool, true, SAVED,
            "1 shows the moments before your death again through your killer's eyes while \
             you wait to respawn (fire or jump skips it)";
        CROSSHAIR_STYLE: i64 = "crosshair_style", Int { min: 0, max: 4 }, 1, SAVED,
            "crosshair: 0 none, 1 cross, 2 cross with a dot, 3 dot, 4 circle";
        CROSSHAIR_SIZE: f64 = "crosshair_size", Float { min: 2.0, max: 64.0 }, 12.0, SAVED,
            "crosshair size in pixels, 2 to 64";
        CROSSHAIR_COLOR: String = "crosshair_color", Text { max_len: 9 }, "#ffffff", SAVED,
            "crosshair colour as #RRGGBB or #RRGGBBAA (hexadecimal)";
        RATE: i64 = "rate", Int { min: 0, max: 1_000_000 }, 0, SAVED,
            "most bytes a second the server may send you (0: no limit; under 8000 counts \
             as 8000): on a slow link far players are then updated less often, rather \
             than snapshots lost";
        CL_UPDATERATE: i64 = "cl_updaterate",
            Int { min: 0, max: sightline_sim::MAX_TICK_HZ as i64 },
            sightline_client::DEFAULT_UPDATE_RATE as i64, SAVED,
            "snapshots a second to ask the server for (0: the server's choice): it sends \
             at most this, up to its tick rate and sv_maxsnapshotrate, and falls back to \
             its own snapshot rate where your rate cannot carry more";
        NET_FAKELAG: f64 = "net_fakelag", Float { min: 0.0, max: 1000.0 }, 0.0, NONE,
            "fake one-way latency on your traffic, ms, both ways";
        NET_FAKEJITTER: f64 = "net_fakejitter", Float { min: 0.0, max: 500.0 }, 0.0, NONE,
            "fake jitter on your traffic, ms";
        NET_FAKELOSS: f64 = "net_fakeloss", Float { min: 0.0, max: 100.0 }, 0.0, NONE,
            "fake packet loss on your traffic, percent";
        CL_MASTERS: String = "cl_masters", Text { max_len: 512 }, "", SAVED,
            "master servers the browser's Internet tab asks, comma-separated HOST:PORT \
             (HOST alone uses the default master port)";
        CL_MATCHMAKER: String = "cl_matchmaker", Text { max_len: 256 }, "", SAVED,
            "the matchmaker service the menu's Quick play asks, https://HOST[:PORT] (empty: \
             no Quick play)";
        CL_RELAY: String = "cl_relay", Text { max_len: 256 }, "", SAVED,
            "the relay a game hosted from the menu is reached through when its Through a \
             relay box is ticked, HOST or HOST:PORT (port 27960 if none; empty: none)";
        VERSION: String = "version", Text { max_len: 32 }, env!("CARGO_PKG_VERSION"),
            READ_ONLY, "this build's version";
    }
}

/// Registers the client's cvars and applies their values.
pub struct CvarsPlugin;

impl Plugin for CvarsPlugin {
    fn build(&self, app: &mut App) {
        let mut cvars = app.world_mut().get_resource_or_insert_with(Cvars::default);
        for d in cvar::client_cvars() {
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
    (mut download, mut update): (ResMut<DownloadRate>, ResMut<UpdateRate>),
    name: Option<ResMut<DesiredName>>,
) {
    if !cvars.is_changed() {
        return;
    }
    // While connected, a new name is told to the server (sightline_client's changes).
    if let Some(mut name) = name {
        let wanted = cvars.read(cvar::NAME);
        if !wanted.is_empty() {
            name.set_if_neq(DesiredName(wanted));
        }
    }
    // Values are in range: the table's ranges are checked when a cvar is set.
    rate.set_if_neq(CommandRate(cvars.read(cvar::CL_CMDRATE) as u32));
    download.set_if_neq(DownloadRate(cvars.read(cvar::RATE) as u32));
    update.set_if_neq(UpdateRate(cvars.read(cvar::CL_UPDATERATE) as u32));
    netgraph.set_if_neq(NetgraphMode(cvars.read(cvar::CL_NETGRAPH) as u8));
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
    fn the_table_registers_and_every_default_reads_back() {
        let mut cvars = Cvars::default();
        for d in cvar::client_cvars() {
            cvars.register(d);
        }
        assert_eq!(cvars.read(cvar::FOV), 90.0);
        assert_eq!(cvars.read(cvar::NAME), "player");
        assert_eq!(cvars.read(cvar::VERSION), env!("CARGO_PKG_VERSION"));
        assert_eq!(cvars.iter().count(), cvar::client_cvars().len());
    }
}
