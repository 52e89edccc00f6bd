//! Sightline, the game: the client core ([`sightline_client`]) with everything a player
//! sees, hears and touches. The `sightline` binary opens a window with the main menu, or
//! joins a server at once (`--connect`), or plays offline (`--map`); `--headless` runs
//! without a window, a bot at the controls.
//!
//! The game is [`GamePlugins`], one plugin per concern; [`windowed_app`] adds Bevy's
//! window and renderer to it, [`windowless_app`] runs the same plugins without either
//! (for tests of whole sessions).

// The binary's flags, the console's variables, and a session: what is joined (a server
// named or one a matchmaker found), played offline, hosted (its port asked of the home
// router) or watched from a demo, and the camera a session looks through.
mod args;
mod camera;
mod cvars;
mod offline;
mod playback;
mod quick_play;
mod router;
mod session;
mod spectator;
// What the player touches, what is drawn over the world, how the world reaches the
// screen, the world as drawn, and what is heard.
mod controls;
mod scene;
mod sound;
mod ui;
mod view;
// Without a window: the headless client, and timed screenshots and frame summaries.
mod headless;
mod smoke;

#[cfg(test)]
mod tests;

pub use args::{Args, LOG_FILTER, RemoteSecurity, parse_window, resolve, seed_for, usage_error};
pub use camera::MainCamera;
pub use headless::run as run_headless;
pub use offline::EmbeddedServer;
pub use session::{AppState, Session, SessionRequest, StartWith, Target, describe};
pub use smoke::ScreenshotAt;

use bevy::app::PluginGroupBuilder;
use bevy::prelude::*;
use bevy::window::{PresentMode, WindowResolution};
use sightline_client::{Autopilot, ClientPlugin, InputSource};
use sightline_console::{ConfigLocation, ConsolePlugin};
use sightline_net::{ClientNetPlugin, ClientSecurity, ConditionerSettings, LinkConditions};
use std::path::PathBuf;

/// Everything the game adds to Bevy, a plugin per concern: the client core and its
/// transport, the console and its settings, sessions and the menu, input, the camera and
/// view model, the world, other players, effects, the HUD, chat, sound, the netgraph.
pub struct GamePlugins {
    /// The player's name ("" for the config's or a default).
    pub name: String,
    /// Who plays: the person at the keyboard, or the autopilot (`--auto`).
    pub input: InputSource,
    /// Console lines run at start-up, after the config file.
    pub startup: Vec<String>,
    /// The config file to use instead of the platform's.
    pub config: Option<PathBuf>,
    /// How to connect to remote servers.
    pub security: ClientSecurity,
    /// The matchmaker's certificate authority, if not a public one (`--matchmaker-ca`).
    pub matchmaker_ca: Option<Vec<u8>>,
    /// The fake link conditions to start with (`--fake-*`).
    pub link: ConditionerSettings,
    /// What to join at start-up.
    pub start: StartWith,
}

impl GamePlugins {
    /// The game as the command line asks for it.
    pub fn from_args(args: &Args, startup: Vec<String>) -> Self {
        Self {
            name: args.name.clone().unwrap_or_default(),
            input: if args.auto {
                InputSource::Autopilot(Autopilot::new(
                    args.seed.unwrap_or_else(|| seed_for("auto")),
                ))
            } else {
                InputSource::Local
            },
            startup,
            config: args.config.clone(),
            security: args.security(),
            matchmaker_ca: args.matchmaker_ca(),
            link: args.fake.settings().unwrap_or_else(|e| usage_error(e)),
            start: StartWith::from_args(args),
        }
    }
}

impl PluginGroup for GamePlugins {
    fn build(self) -> PluginGroupBuilder {
        PluginGroupBuilder::start::<Self>()
            .add(Launch {
                security: self.security,
                matchmaker_ca: self.matchmaker_ca,
                link: self.link,
                start: self.start,
            })
            .add(ClientNetPlugin::deferred())
            .add(ClientPlugin {
                name: self.name,
                input: self.input,
            })
            .add(ConsolePlugin {
                startup: self.startup,
                config: self
                    .config
                    .map_or(ConfigLocation::Platform, ConfigLocation::At),
            })
            .add(sightline_console_ui::ConsoleUiPlugin)
            .add(cvars::CvarsPlugin)
            .add(session::SessionPlugin)
            .add(ui::menu::MenuPlugin)
            .add(ui::settings::SettingsPlugin)
            .add(ui::browser::BrowserPlugin)
            .add(controls::input::InputPlugin)
            .add(camera::CameraPlugin)
            .add(view::deathcam::DeathCamPlugin)
            .add(view::killcam::KillcamPlugin)
            .add(spectator::SpectatorPlugin)
            .add(playback::DemoControlsPlugin)
            .add(scene::materials::MaterialsPlugin)
            .add(scene::world::WorldPlugin)
            .add(scene::flags::FlagsPlugin)
            .add(scene::sky::SkyPlugin)
            .add(view::graphics::GraphicsPlugin)
            .add(view::resolution::ResolutionPlugin)
            .add(scene::players::PlayersPlugin)
            .add(scene::particles::ParticlesPlugin)
            .add(scene::effects::EffectsPlugin)
            .add(view::shake::ShakePlugin)
            .add(scene::viewmodel::ViewModelPlugin)
            .add(view::vignette::VignettePlugin)
            .add(ui::hud::HudPlugin)
            .add(ui::chat::ChatPlugin)
            .add(sound::SoundPlugin)
            .add(sightline_netgraph::NetgraphPlugin)
            .add(smoke::SmokePlugin)
            .add(scene::long_frames::LongFramesPlugin)
            .add(view::frame_cost::FrameCostPlugin)
    }
}

/// What the game starts with, from the command line.
struct Launch {
    security: ClientSecurity,
    matchmaker_ca: Option<Vec<u8>>,
    link: ConditionerSettings,
    start: StartWith,
}

impl Plugin for Launch {
    fn build(&self, app: &mut App) {
        app.insert_resource(RemoteSecurity(self.security.clone()))
            .insert_resource(quick_play::MatchmakerTrust(self.matchmaker_ca.clone()))
            .insert_resource(LinkConditions(self.link))
            .insert_resource(self.start.clone());
    }
}

/// The game in a window of `width` x `height`, with Bevy's renderer, audio and egui.
pub fn windowed_app(game: GamePlugins, (width, height): (u32, u32)) -> App {
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "Sightline".into(),
                    resolution: WindowResolution::new(width, height),
                    present_mode: PresentMode::AutoNoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: LOG_FILTER.into(),
                ..default()
            }),
    )
    .add_plugins((
        bevy_egui::EguiPlugin::default(),
        // Each render pass's CPU and GPU time (wgpu timestamps where the adapter has them).
        bevy::render::diagnostic::RenderDiagnosticsPlugin,
        game,
    ));
    app
}

/// The game's own plugins without a window, renderer, audio output or egui: what they
/// draw is never drawn, and everything else (sessions, the client, prediction, the
/// netgraph's figures, effects and sounds as entities) runs as in the window. Time is
/// real; call `update` once per frame.
pub fn windowless_app(game: GamePlugins) -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        bevy::state::app::StatesPlugin,
        bevy::input::InputPlugin,
        AssetPlugin::default(),
        game,
    ))
    // The asset types the drawing plugins create, registered without their renderers.
    .init_asset::<Mesh>()
    .init_asset::<StandardMaterial>()
    .init_asset::<bevy::audio::AudioSource>()
    .init_resource::<bevy::audio::GlobalVolume>();
    app
}
