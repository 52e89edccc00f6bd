//! Chat: the box to type a line in (its key opens it; Enter sends, Escape cancels) and
//! the newest lines received.

use crate::controls::input::{Action, Controls, TextFocus};
use crate::cvars::cvar;
use crate::session::AppState;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{ChatLog, FromServer};
use sightline_console::{Console, ConsoleCommands, Cvars, RunCommand};
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientMessage, MAX_CHAT_LEN, ServerMessage, ServerTextKind, Wire,
};
use sightline_sim::SessionAppExt;

/// The chat line being typed, while the chat box is open.
#[derive(Resource, Debug, Default)]
pub struct ChatInput(pub Option<String>);

/// Typing and showing chat.
pub struct ChatPlugin;

impl Plugin for ChatPlugin {
    fn build(&self, app: &mut App) {
        app.world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default)
            .register(
                "rcon",
                "rcon COMMAND: run COMMAND on the server's console (set rcon_password first)",
            );
        app.init_session_resource::<ChatInput>()
            .add_systems(Update, (send_rcon, print_rcon_replies))
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
    if actions.just_pressed(&Action::Chat) && !console.open && chat.0.is_none() {
        chat.0 = Some(String::new());
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
                ui.label(
                    egui::RichText::new(format!("{name}: {text}"))
                        .color(egui::Color32::WHITE)
                        .background_color(egui::Color32::from_black_alpha(120)),
                );
            }
            let Some(line) = chat.0.as_mut() else {
                return;
            };
            let edit = ui.add(
                egui::TextEdit::singleline(line)
                    .char_limit(MAX_CHAT_LEN)
                    .desired_width(360.0)
                    .hint_text("say (Enter sends, Esc cancels)"),
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
                let text = chat.0.take().unwrap_or_default();
                if let Some(mut client) = client
                    && !text.trim().is_empty()
                {
                    // Long lines are cut here: the server refuses (and counts) oversized chat.
                    let text =
                        sightline_protocol::clean_text(&text, sightline_protocol::MAX_CHAT_LEN);
                    sightline_client::send_to_server(
                        &mut client,
                        Channel::Reliable,
                        &ClientMessage::Chat { text },
                    );
                }
            }
        });
    Ok(())
}
