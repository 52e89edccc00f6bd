//! Chat: the box to type a line in (its key opens it, to everyone or to one's team; Enter
//! sends, Escape cancels), the newest lines received, and the console's commands that
//! speak to the server: `say`, `say_team`, `ignore`, `unignore`, `team` and `rcon`.

use crate::controls::input::{Action, Controls, TextFocus};
use crate::cvars::cvar;
use crate::session::AppState;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use leafwing_input_manager::prelude::ActionState;
use sightline_client::{ChatLog, FromServer, Ignored, MatchInfo, Roster, VoteInfo};
use sightline_console::{Console, ConsoleCommands, Cvars, RunCommand};
use sightline_net::RenetClient;
use sightline_protocol::{
    Channel, ClientMessage, MAX_CHAT_LEN, ServerMessage, ServerTextKind, TeamChoice, VoteProposal,
    Wire,
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
        "team red|blue|auto|spectator: change side in a team game (your frags start again), go to watch, or come to play",
    ),
    (
        "callvote",
        "callvote map NAME | nextmap | kick NAME | restart | fraglimit N | mode dm|tdm|ctf: put it to a vote",
    ),
    ("vote", "vote yes|no: vote on the vote running (F1, F2)"),
    (
        "ready",
        "ready: in the warmup, say you are ready to start, or no longer (F3)",
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
                    call_votes,
                ),
            )
            .add_systems(
                Update,
                (open_chat.run_if(in_state(AppState::Playing)), hold_focus).chain(),
            )
            .add_systems(Update, vote_with_keys.run_if(in_state(AppState::Playing)))
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

/// What `callvote WORDS` proposes, with the roster naming a player to kick; or how to
/// write it.
fn proposal(words: &[String], roster: &Roster) -> Result<VoteProposal, String> {
    let usage =
        "usage: callvote map NAME | nextmap | kick NAME | restart | fraglimit N | mode dm|tdm|ctf";
    let (kind, rest) = words.split_first().ok_or(usage)?;
    let rest = rest.join(" ");
    Ok(match (kind.to_ascii_lowercase().as_str(), rest.trim()) {
        ("map", name) if sightline_map::is_map_identifier(name) => VoteProposal::Map(name.into()),
        ("map", _) => return Err("callvote map NAME: a map's name, as in maps/".into()),
        ("nextmap", "") => VoteProposal::NextMap,
        ("restart", "") => VoteProposal::Restart,
        ("mode", mode) => VoteProposal::Mode(
            sightline_combat::GameMode::ALL
                .into_iter()
                .find(|m| m.keyword().eq_ignore_ascii_case(mode))
                .ok_or("callvote mode dm|tdm|ctf")?,
        ),
        ("fraglimit", n) => VoteProposal::Fraglimit(
            n.parse()
                .map_err(|_| "callvote fraglimit N: a whole number".to_string())?,
        ),
        ("kick", name) if !name.is_empty() => {
            let key = sightline_protocol::name_key(name);
            let (id, _) = roster
                .0
                .iter()
                .find(|(_, p)| sightline_protocol::name_key(&p.name) == key)
                .ok_or_else(|| format!("callvote kick: nobody is called {name}"))?;
            VoteProposal::Kick(*id)
        }
        _ => return Err(usage.into()),
    })
}

/// `callvote ...` and `vote yes|no`.
fn call_votes(
    mut run: MessageReader<RunCommand>,
    mut console: ResMut<Console>,
    client: Option<ResMut<RenetClient>>,
    roster: Option<Res<Roster>>,
) {
    let mut client = client;
    for cmd in run.read() {
        let msg = match (cmd.name.as_str(), roster.as_deref()) {
            ("callvote", Some(roster)) => {
                proposal(&cmd.args, roster).map(|proposal| ClientMessage::CallVote { proposal })
            }
            ("vote", _) => match cmd.args.first().map(|w| w.to_ascii_lowercase()).as_deref() {
                Some("yes" | "y" | "1") => Ok(ClientMessage::Vote { yes: true }),
                Some("no" | "n" | "0") => Ok(ClientMessage::Vote { yes: false }),
                _ => Err("usage: vote yes|no".into()),
            },
            ("callvote", None) => Err("callvote: not connected".into()),
            ("ready", _) => Ok(ClientMessage::Ready),
            _ => continue,
        };
        match (msg, client.as_mut().filter(|c| c.is_connected())) {
            (Err(why), _) => console.print(why),
            (Ok(msg), Some(client)) => {
                sightline_client::send_to_server(client, Channel::Reliable, &msg)
            }
            (Ok(_), None) => console.print(format!("{}: not connected", cmd.name)),
        }
    }
}

/// F1 and F2 (by default) vote while a vote runs; F3 says ready in the warmup.
fn vote_with_keys(
    actions: Single<&ActionState<Action>, With<Controls>>,
    vote: Option<Res<VoteInfo>>,
    warmup: Option<Res<MatchInfo>>,
    chat: Res<ChatInput>,
    client: Option<ResMut<RenetClient>>,
) {
    if chat.0.is_some() {
        return;
    }
    let Some(mut client) = client else {
        return;
    };
    let yes = actions.just_pressed(&Action::VoteYes);
    if (yes || actions.just_pressed(&Action::VoteNo)) && vote.is_some_and(|v| v.tally.is_some()) {
        let msg = ClientMessage::Vote { yes };
        sightline_client::send_to_server(&mut client, Channel::Reliable, &msg);
    }
    if actions.just_pressed(&Action::Ready) && warmup.is_some_and(|m| m.warmup.is_some()) {
        let msg = ClientMessage::Ready;
        sightline_client::send_to_server(&mut client, Channel::Reliable, &msg);
    }
}

/// `team red|blue|auto|spectator`: asks the server for that side, or to watch or play.
fn choose_team(
    mut run: MessageReader<RunCommand>,
    mut console: ResMut<Console>,
    client: Option<ResMut<RenetClient>>,
) {
    let mut client = client;
    for cmd in run.read().filter(|c| c.name == "team") {
        let choice = cmd.args.first().and_then(|w| TeamChoice::parse(w));
        match (choice, client.as_mut().filter(|c| c.is_connected())) {
            (None, _) => console.print("usage: team red|blue|auto|spectator"),
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
        // Above the health line, which the HUD draws in the bottom-left corner.
        .anchor(egui::Align2::LEFT_BOTTOM, [12.0, -52.0])
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
