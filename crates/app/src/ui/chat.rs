//! Chat: the box to type a line in (its key opens it, to everyone or to one's team; Enter
//! sends, Escape cancels), the newest lines received, and the console's commands that
//! speak to the server: `say`, `say_team`, `ignore`, `unignore`, `team` and `rcon`.

use crate::controls::input::{Action, Controls, TextFocus};
use crate::cvars::cvar;
use crate::session::AppState;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{ChatLog, FromServer, Ignored, Roster};
use sightline_console::{Console, ConsoleCommands, Cvars, RunCommand};
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientMessage, MAX_CHAT_LEN, ServerMessage, ServerTextKind, TeamChoice, Wire,
};
use sightline_sim::SessionAppExt;

/// The chat line being typed while the chat box is open, and whether to one's team.
#[derive(Resource, Debug, Default)]
pub struct ChatInput(pub Option<(String, bool)>);

/// The console commands of this module, and their help: registered from here, and
/// matched by name in the systems below.
const COMMANDS: &[(&str, &str)] = &[
    (
        "rcon",
        "rcon COMMAND: run COMMAND on the server's console (set rcon_password first)",
    ),
    ("say", "say TEXT: chat to everyone in the game"),
    (
        "say_team",
        "say_team TEXT: chat to your own team (to everyone in a game without teams)",
    ),
    (
        "ignore",
        "ignore NAME: hide chat from that player or spectator; alone, list who is ignored",
    ),
    ("unignore", "unignore NAME: show that one's chat again"),
    (
        "team",
        "team red|blue|auto: change side in a team game (your frags start again)",
    ),
];

/// Typing and showing chat.
pub struct ChatPlugin;

impl Plugin for ChatPlugin {
    fn build(&self, app: &mut App) {
        let mut commands = app
            .world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default);
        for (name, help) in COMMANDS {
            commands.register(name, help);
        }
        app.init_session_resource::<ChatInput>()
            .add_systems(
                Update,
                (
                    send_rcon,
                    print_rcon_replies,
                    run_chat_commands,
                    choose_team,
                ),
            )
            .add_systems(
                Update,
                (open_chat.run_if(in_state(AppState::Playing)), hold_focus).chain(),
            )
            .add_systems(
                EguiPrimaryContextPass,
                draw_chat.run_if(in_state(AppState::Playing)),
            );
    }
}

/// `rcon COMMAND`: sends the line with `rcon_password` over the game's own encrypted
/// connection.
fn send_rcon(
    mut run: MessageReader<RunCommand>,
    cvars: Res<Cvars>,
    mut console: ResMut<Console>,
    client: Option<ResMut<RenetClient>>,
) {
    let mut client = client;
    for cmd in run.read().filter(|c| c.name == "rcon") {
        let command = cmd
            .args
            .iter()
            .map(|a| sightline_console::quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let password = cvars.read(cvar::RCON_PASSWORD);
        let message = ClientMessage::Rcon { password, command };
        match client.as_mut().filter(|c| c.is_connected()) {
            _ if cmd.args.is_empty() => console.print("usage: rcon COMMAND"),
            _ if message.validate().is_err() => {
                console.print("rcon: the command or the password is too long")
            }
            Some(client) => sightline_client::send_to_server(client, Channel::Reliable, &message),
            None => console.print("rcon: not connected to a server"),
        }
    }
}

/// Prints the server's answers to rcon commands in the console.
fn print_rcon_replies(mut inbound: MessageReader<FromServer>, mut console: ResMut<Console>) {
    for FromServer(msg) in inbound.read() {
        if let ServerMessage::ServerText {
            kind: ServerTextKind::Rcon,
            text,
        } = msg
        {
            console.print(text.clone());
        }
    }
}

/// Sends a chat line, cut to fit; what is blank is not sent.
fn send_chat(client: &mut RenetClient, text: &str, team: bool) {
    // Long lines are cut here: the server refuses (and counts) oversized chat.
    let text = sightline_protocol::clean_text(text, MAX_CHAT_LEN);
    if !text.is_empty() {
        sightline_client::send_to_server(
            client,
            Channel::Reliable,
            &ClientMessage::Chat { text, team },
        );
    }
}

/// `say`, `say_team`, `ignore` and `unignore`.
fn run_chat_commands(
    mut run: MessageReader<RunCommand>,
    mut console: ResMut<Console>,
    client: Option<ResMut<RenetClient>>,
    roster: Option<Res<Roster>>,
    ignored: Option<ResMut<Ignored>>,
) {
    let (mut client, mut ignored) = (client, ignored);
    for cmd in run.read() {
        let words = cmd.args.join(" ");
        match (
            cmd.name.as_str(),
            client.as_mut().filter(|c| c.is_connected()),
        ) {
            ("say" | "say_team", _) if words.trim().is_empty() => {
                console.print(format!("usage: {} TEXT", cmd.name));
            }
            ("say" | "say_team", Some(client)) => send_chat(client, &words, cmd.name == "say_team"),
            ("say" | "say_team", None) => console.print(format!("{}: not connected", cmd.name)),
            ("ignore" | "unignore", _) => {
                let (Some(ignored), Some(roster)) = (ignored.as_mut(), roster.as_ref()) else {
                    console.print(format!("{}: not connected", cmd.name));
                    continue;
                };
                console.print(match (cmd.name.as_str(), words.trim()) {
                    ("ignore", "") => ignored_list(ignored, roster),
                    ("ignore", name) => ignored.ignore(roster, name).unwrap_or_else(|e| e),
                    (_, "") => "usage: unignore NAME".into(),
                    (_, name) if ignored.unignore(roster, name) => {
                        format!("no longer ignoring {name}")
                    }
                    (_, name) => format!("unignore: not ignoring {name}"),
                });
            }
            _ => {}
        }
    }
}

/// Who is ignored, in words.
fn ignored_list(ignored: &Ignored, roster: &Roster) -> String {
    let names: Vec<String> = ignored
        .players
        .iter()
        .map(|id| roster.name(*id).to_string())
        .chain(
            ignored
                .spectators
                .iter()
                .map(|s| format!("{s} (spectator)")),
        )
        .collect();
    if names.is_empty() {
        "ignoring nobody".into()
    } else {
        format!("ignoring {}", names.join(", "))
    }
}

/// `team red|blue|auto`: asks the server for that side.
fn choose_team(
    mut run: MessageReader<RunCommand>,
    mut console: ResMut<Console>,
    client: Option<ResMut<RenetClient>>,
) {
    let mut client = client;
    for cmd in run.read().filter(|c| c.name == "team") {
        let choice = cmd.args.first().and_then(|w| TeamChoice::parse(w));
        match (choice, client.as_mut().filter(|c| c.is_connected())) {
            (None, _) => console.print("usage: team red|blue|auto"),
            (Some(choice), Some(client)) => sightline_client::send_to_server(
                client,
                Channel::Reliable,
                &ClientMessage::JoinTeam { choice },
            ),
            (Some(_), None) => console.print("team: not connected"),
        }
    }
}

/// While the box is open the keyboard types into it: the player stands still and the
/// mouse is free.
fn hold_focus(chat: Res<ChatInput>, mut focus: ResMut<TextFocus>) {
    focus.set_if_neq(TextFocus(chat.0.is_some()));
}

fn open_chat(
    actions: Single<&ActionState<Action>, With<Controls>>,
    console: Res<Console>,
    mut chat: ResMut<ChatInput>,
) {
    if console.open || chat.0.is_some() {
        return;
    }
    if actions.just_pressed(&Action::Chat) {
        chat.0 = Some((String::new(), false));
    } else if actions.just_pressed(&Action::TeamChat) {
        chat.0 = Some((String::new(), true));
    }
}

fn draw_chat(
    mut contexts: EguiContexts,
    mut chat: ResMut<ChatInput>,
    log: Res<ChatLog>,
    client: Option<ResMut<RenetClient>>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    egui::Area::new(egui::Id::new("chat"))
        .anchor(egui::Align2::LEFT_BOTTOM, [12.0, -12.0])
        .show(ctx, |ui| {
            // An area takes the size of what it first held: empty, lines would wrap a
            // letter at a time.
            ui.set_min_width(480.0);
            for (name, text) in log.0.iter().rev().take(6).rev() {
                let line = if name.is_empty() {
                    text.clone()
                } else {
                    format!("{name}: {text}")
                };
                ui.label(
                    egui::RichText::new(line)
                        .color(egui::Color32::WHITE)
                        .background_color(egui::Color32::from_black_alpha(120)),
                );
            }
            let Some((line, team)) = chat.0.as_mut() else {
                return;
            };
            let hint = if *team {
                "say to your team (Enter sends, Esc cancels)"
            } else {
                "say (Enter sends, Esc cancels)"
            };
            let edit = ui.add(
                egui::TextEdit::singleline(line)
                    .char_limit(MAX_CHAT_LEN)
                    .desired_width(360.0)
                    .hint_text(hint),
            );
            edit.request_focus();
            let (enter, escape) = ui.input(|i| {
                (
                    i.key_pressed(egui::Key::Enter),
                    i.key_pressed(egui::Key::Escape),
                )
            });
            if escape {
                chat.0 = None;
            } else if enter {
                let (text, team) = chat.0.take().unwrap_or_default();
                if let Some(mut client) = client {
                    send_chat(&mut client, &text, team);
                }
            }
        });
    Ok(())
}
