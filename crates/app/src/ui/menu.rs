//! The main menu (quick play, play offline or host a game, connect or find servers in
//! the browser, settings, quit)
//! and the game menu that Escape opens while playing (resume, settings, disconnect,
//! quit), which frees the mouse while it is open.

use crate::args::RemoteSecurity;
use crate::controls::overlays::{GameMenu, MouseLook, SettingsPage, TextFocus};
use crate::cvars::cvar;
use crate::offline::HostSettings;
use crate::quick_play::QuickPlaySearch;
use crate::session::{AppState, Session, SessionRequest, Target, join_server};
use crate::ui::browser::ServerBrowser;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_console::{ConfigFile, Console, ConsoleCommands, Cvars, RunCommand};
use sightline_net::ClientSecurity;
use sightline_protocol::TeamChoice;

/// What the menu's fields hold.
#[derive(Resource, Debug)]
struct MenuForm {
    address: String,
    map: String,
    maps: Vec<String>,
    bots: u8,
    skill: sightline_bots::BotSkill,
    /// The password Connect gives; starts as `--password`'s.
    password: String,
    /// Host a game: its name, port, password, players at most, and whether it is listed
    /// on the masters of `cl_masters`.
    host_name: String,
    host_port: String,
    host_password: String,
    host_max_players: u8,
    host_listed: bool,
    host_upnp: bool,
    host_relay: bool,
    error: Option<String>,
}

impl FromWorld for MenuForm {
    fn from_world(world: &mut World) -> Self {
        let password = match world.get_resource::<RemoteSecurity>().map(|s| &s.0) {
            Some(ClientSecurity::Secure { password, .. }) => password.clone(),
            _ => String::new(),
        };
        let mut maps: Vec<String> = std::fs::read_dir(sightline_map::maps_dir())
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        name.strip_suffix(".ron").map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        maps.sort();
        Self {
            address: "127.0.0.1:27015".into(),
            map: maps.first().cloned().unwrap_or_else(|| "duel".into()),
            maps,
            bots: 4,
            skill: sightline_bots::BotSkill::Normal,
            password,
            host_name: String::new(),
            host_port: DEFAULT_HOST_PORT.to_string(),
            host_password: String::new(),
            host_max_players: 8,
            host_listed: false,
            host_upnp: true,
            host_relay: false,
            error: None,
        }
    }
}

/// The port a game hosted from the menu takes unless told otherwise (the dedicated
/// server's).
const DEFAULT_HOST_PORT: u16 = 27015;

/// The settings of a game to host from the form, or what is wrong with them: `masters`
/// and `relay` are the cvars `cl_masters` and `cl_relay`.
fn host_settings(
    form: &MenuForm,
    player: &str,
    masters: &str,
    relay: &str,
) -> Result<HostSettings, String> {
    let port: u16 = form
        .host_port
        .trim()
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("\"{}\" is not a port (1 to 65535)", form.host_port))?;
    let name = match form.host_name.trim() {
        "" => format!("{player}'s game"),
        name => name.to_string(),
    };
    let masters = match form.host_listed {
        false => Vec::new(),
        true => {
            let named = crate::ui::browser::parse_masters(masters);
            if named.is_empty() {
                return Err("to list the game on the internet, set cl_masters first".into());
            }
            named
                .iter()
                .map(|m| crate::ui::browser::resolve_master(m).map_err(|e| format!("{m}: {e}")))
                .collect::<Result<_, _>>()?
        }
    };
    // With cl_relay set, the relay at least probes the port; ticked, it forwards too.
    let named = match relay.trim() {
        "" => None,
        relay => Some(
            crate::ui::browser::resolve_host(relay, sightline_net::DEFAULT_RELAY_PORT)
                .map_err(|e| format!("{relay}: {e}"))?,
        ),
    };
    if form.host_relay && named.is_none() {
        return Err("to host through a relay, set cl_relay first".into());
    }
    let (relay, probe) = match form.host_relay {
        true => (named, None),
        false => (None, named),
    };
    Ok(HostSettings {
        name,
        map: form.map.clone(),
        bots: form.bots,
        skill: form.skill,
        max_players: form.host_max_players,
        port,
        password: form.host_password.clone(),
        masters,
        upnp: form.host_upnp.then_some(crate::router::SSDP),
        relay,
        probe,
    })
}

/// Draws the main menu in [`AppState::Menu`] and the game menu while playing.
pub struct MenuPlugin;

impl Plugin for MenuPlugin {
    fn build(&self, app: &mut App) {
        app.world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default)
            .register(
                "togglemenu",
                "open or close the game menu (what Esc does in a game)",
            );
        app.init_resource::<MenuForm>()
            .init_resource::<GameMenu>()
            .add_systems(Update, (toggle_game_menu, run_togglemenu))
            .add_systems(OnExit(AppState::Playing), close_game_menu)
            .add_systems(
                EguiPrimaryContextPass,
                (
                    draw_menu.run_if(in_state(AppState::Menu)),
                    draw_game_menu.run_if(in_state(AppState::Playing)),
                ),
            );
    }
}

/// Escape opens the game menu, or steps back out of it: from the settings to the menu
/// that opened them, from the game menu to the game. While the console or the chat box
/// has the keyboard, Escape is theirs; while the settings wait for a key to bind, it
/// cancels that.
pub(crate) fn toggle_game_menu(
    state: Res<State<AppState>>,
    keys: Res<ButtonInput<KeyCode>>,
    console: Res<Console>,
    focus: Res<TextFocus>,
    mut menu: ResMut<GameMenu>,
    mut settings: ResMut<SettingsPage>,
    mut look: ResMut<MouseLook>,
) {
    if !keys.just_pressed(KeyCode::Escape) || console.open || focus.0 || settings.capturing() {
        return;
    }
    let playing = *state.get() == AppState::Playing;
    if settings.open {
        settings.open = false;
        menu.open = playing;
    } else if !playing {
        // The main menu has nothing to step back to.
    } else if menu.open {
        menu.open = false;
        look.0 = true;
    } else {
        menu.open = true;
    }
}

/// `togglemenu`: the game menu, as Escape opens and closes it. Typed in the console it
/// shows once the console closes; on the command line (`+togglemenu`) it opens with the
/// game.
fn run_togglemenu(
    mut run: MessageReader<RunCommand>,
    mut menu: ResMut<GameMenu>,
    mut look: ResMut<MouseLook>,
) {
    for _ in run.read().filter(|c| c.name == "togglemenu") {
        menu.open = !menu.open;
        if !menu.open {
            look.0 = true;
        }
    }
}

/// Leaving a game closes its menu and the settings opened from it.
fn close_game_menu(mut menu: ResMut<GameMenu>, mut settings: ResMut<SettingsPage>) {
    menu.open = false;
    settings.open = false;
}

/// The Team page's buttons: the sides of a team game (or, without teams, to play) for
/// one watching; for one playing, the other side and to watch.
fn team_choices(team_game: bool, watching: bool) -> Vec<(&'static str, TeamChoice)> {
    let mut choices = match team_game {
        true => vec![
            ("Join Red", TeamChoice::Red),
            ("Join Blue", TeamChoice::Blue),
            ("Auto", TeamChoice::Auto),
        ],
        false if watching => vec![("Join game", TeamChoice::Auto)],
        false => Vec::new(),
    };
    if !watching {
        choices.push(("Spectate", TeamChoice::Spectator));
    }
    choices
}

/// The game menu: a small window in the middle of the screen over the game.
fn draw_game_menu(
    mut contexts: EguiContexts,
    mut menu: ResMut<GameMenu>,
    mut settings: ResMut<SettingsPage>,
    mut look: ResMut<MouseLook>,
    mut requests: MessageWriter<SessionRequest>,
    mut exit: MessageWriter<AppExit>,
    (match_info, client, watching, session): (
        Option<Res<sightline_client::MatchInfo>>,
        Option<ResMut<sightline_net::RenetClient>>,
        Option<Res<sightline_client::Watching>>,
        Res<Session>,
    ),
) -> Result {
    if !menu.open || settings.open {
        return Ok(());
    }
    let mut client = client;
    let team_game = match_info.is_some_and(|m| m.team_game);
    let (watching, demo) = (watching.is_some(), session.demo().is_some());
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("MENU")
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .collapsible(false)
        .resizable(false)
        .title_bar(false)
        .min_width(240.0)
        .show(ctx, |ui| {
            ui.vertical_centered_justified(|ui| {
                ui.heading("SIGHTLINE");
                ui.add_space(8.0);
                let button = |ui: &mut egui::Ui, text: &str| {
                    ui.add(egui::Button::new(egui::RichText::new(text).size(18.0)))
                        .clicked()
                };
                if button(ui, "Resume") {
                    menu.open = false;
                    look.0 = true;
                }
                if button(ui, "Settings") {
                    settings.open = true;
                }
                // The Team page: a side, or between watching and playing, as the
                // console's `team` asks (a demo has no game to join).
                if let Some(client) = client.as_mut().filter(|c| c.is_connected() && !demo) {
                    let choice = ui
                        .horizontal(|ui| {
                            let mut choice = None;
                            for (label, side) in team_choices(team_game, watching) {
                                if ui.button(label).clicked() {
                                    choice = Some(side);
                                }
                            }
                            choice
                        })
                        .inner;
                    if let Some(choice) = choice {
                        let msg = sightline_protocol::ClientMessage::JoinTeam { choice };
                        sightline_client::send_to_server(
                            client,
                            sightline_protocol::Channel::Reliable,
                            &msg,
                        );
                        menu.open = false;
                        look.0 = true;
                    }
                }
                if button(ui, "Disconnect") {
                    menu.open = false;
                    requests.write(SessionRequest::Leave);
                }
                if button(ui, "Quit") {
                    exit.write(AppExit::Success);
                }
                ui.add_space(4.0);
                ui.weak("Esc returns to the game");
            });
        });
    Ok(())
}

fn draw_menu(
    mut contexts: EguiContexts,
    mut form: ResMut<MenuForm>,
    mut cvars: ResMut<Cvars>,
    mut config: ResMut<ConfigFile>,
    mut console: ResMut<Console>,
    session: Res<Session>,
    mut browser: ResMut<ServerBrowser>,
    mut settings: ResMut<SettingsPage>,
    mut security: ResMut<RemoteSecurity>,
    mut requests: MessageWriter<SessionRequest>,
    mut exit: MessageWriter<AppExit>,
    search: Option<Res<QuickPlaySearch>>,
    mut commands: Commands,
) -> Result {
    // The browser and the settings are pages of the menu: they draw in the menu's place.
    if browser.open || settings.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Window::new("SIGHTLINE")
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .collapsible(false)
        .resizable(false)
        .min_width(360.0)
        .show(ctx, |ui| {
            if let Some(reason) = &session.ended {
                ui.colored_label(egui::Color32::from_rgb(255, 120, 100), reason);
                ui.separator();
            }
            ui.heading("Quick play");
            let matchmaker = cvars.read(cvar::CL_MATCHMAKER);
            match &search {
                Some(search) => {
                    ui.horizontal(|ui| {
                        ui.spinner();
                        ui.label(format!(
                            "Finding a server… {} s",
                            search.since.elapsed().as_secs()
                        ))
                        .on_hover_text(format!("asking {}", search.url));
                        if ui.button("Cancel").clicked() {
                            commands.remove_resource::<QuickPlaySearch>();
                        }
                    });
                }
                None => {
                    let button =
                        ui.add_enabled(!matchmaker.is_empty(), egui::Button::new("Quick play"));
                    let button = button
                        .on_hover_text("join a game on whatever server the matchmaker finds")
                        .on_disabled_hover_text(
                            "set cl_matchmaker in the console to your community's or fleet's \
                             matchmaker (https://HOST[:PORT])",
                        );
                    if button.clicked() {
                        requests.write(SessionRequest::Join(Target::QuickPlay(matchmaker)));
                    }
                }
            }
            ui.separator();
            ui.heading("Play offline");
            ui.horizontal(|ui| {
                ui.label("Map");
                egui::ComboBox::from_id_salt("map")
                    .selected_text(form.map.clone())
                    .show_ui(ui, |ui| {
                        for m in form.maps.clone() {
                            ui.selectable_value(&mut form.map, m.clone(), m);
                        }
                    });
                ui.label("Bots");
                ui.add(egui::Slider::new(&mut form.bots, 0..=15));
            });
            ui.horizontal(|ui| {
                ui.label("Bot skill");
                for (skill, name) in [
                    (sightline_bots::BotSkill::Easy, "easy"),
                    (sightline_bots::BotSkill::Normal, "normal"),
                    (sightline_bots::BotSkill::Hard, "hard"),
                ] {
                    ui.radio_value(&mut form.skill, skill, name);
                }
            });
            if ui.button("Play offline").clicked() {
                requests.write(SessionRequest::Join(Target::Offline {
                    map: form.map.clone(),
                    bots: form.bots,
                    skill: form.skill,
                }));
            }
            ui.collapsing("Host a game for others", |ui| {
                ui.label("The map, bots and skill above, on this computer, for others to join.");
                ui.horizontal(|ui| {
                    ui.label("Name");
                    ui.add(
                        egui::TextEdit::singleline(&mut form.host_name)
                            .hint_text(format!("{}'s game", cvars.read(cvar::NAME))),
                    );
                });
                ui.horizontal(|ui| {
                    ui.label("Port");
                    ui.add(egui::TextEdit::singleline(&mut form.host_port).desired_width(60.0));
                    ui.label("Players");
                    ui.add(egui::Slider::new(&mut form.host_max_players, 2..=16));
                });
                ui.horizontal(|ui| {
                    ui.label("Password");
                    ui.add(
                        egui::TextEdit::singleline(&mut form.host_password)
                            .password(true)
                            .hint_text("none: anyone may join"),
                    );
                });
                ui.checkbox(
                    &mut form.host_listed,
                    "List it on the internet (cl_masters)",
                )
                .on_hover_text(
                    "LAN players find it either way; players elsewhere need the port \
                         open for UDP and TCP on your router",
                );
                ui.checkbox(
                    &mut form.host_upnp,
                    "Ask the router to forward the port (UPnP)",
                )
                .on_hover_text(
                    "what the router answers is printed in the console; without it, \
                         forward the port on the router by hand",
                );
                ui.checkbox(&mut form.host_relay, "Also through a relay (cl_relay)")
                    .on_hover_text(
                        "for a router that opens no port: players elsewhere join the \
                         relay's address (printed in the console), which forwards the game \
                         sealed, unread. With cl_relay set, ticked or not, the relay probes \
                         the port and the console says whether players could reach you \
                         directly",
                    );
                if ui.button("Host game").clicked() {
                    let player = cvars.read(cvar::NAME);
                    let (masters, relay) =
                        (cvars.read(cvar::CL_MASTERS), cvars.read(cvar::CL_RELAY));
                    match host_settings(&form, &player, &masters, &relay) {
                        Ok(host) => {
                            form.error = None;
                            requests.write(SessionRequest::Join(Target::Host(host)));
                        }
                        Err(e) => form.error = Some(e),
                    }
                }
            });
            ui.separator();
            ui.heading("Connect");
            let mut name = cvars.read(cvar::NAME);
            ui.horizontal(|ui| {
                ui.label("Name");
                if ui.text_edit_singleline(&mut name).changed() {
                    // As if typed in the console: `name` is saved, so the file is rewritten.
                    match cvars.set_handle(cvar::NAME, &name) {
                        Ok(_) => config.dirty = true,
                        Err(e) => console.print(format!("error: {e}")),
                    }
                }
            });
            ui.horizontal(|ui| {
                ui.label("Server");
                ui.text_edit_singleline(&mut form.address);
            });
            if matches!(security.0, ClientSecurity::Secure { .. }) {
                ui.horizontal(|ui| {
                    ui.label("Password");
                    ui.add(
                        egui::TextEdit::singleline(&mut form.password)
                            .password(true)
                            .hint_text("if the server has one"),
                    );
                });
            }
            ui.horizontal(|ui| {
                let play = ui.button("Connect").clicked();
                let watch = ui
                    .button("Spectate")
                    .on_hover_text("watch the game a few seconds behind, without playing")
                    .clicked();
                if play || watch {
                    match crate::args::lookup(&form.address) {
                        Some(addr) => {
                            form.error = None;
                            let target = match watch {
                                true => Target::Spectate(addr),
                                false => Target::Remote(addr),
                            };
                            join_server(target, &form.password, &mut security, &mut requests);
                        }
                        None => {
                            form.error = Some(format!(
                                "cannot resolve \"{}\"; expected HOST:PORT",
                                form.address
                            ))
                        }
                    }
                }
                if ui.button("Find servers…").clicked() {
                    browser.open_page(&cvars.read(cvar::CL_MASTERS));
                }
            });
            if let Some(error) = &form.error {
                ui.colored_label(egui::Color32::from_rgb(255, 120, 100), error);
            }
            ui.separator();
            if ui.button("Settings…").clicked() {
                settings.open = true;
            }
            ui.label("More in the console: press ` and type help.");
            ui.separator();
            if ui.button("Quit").clicked() {
                exit.write(AppExit::Success);
            }
        });
    Ok(())
}
