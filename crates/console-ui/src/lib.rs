//! The game window's drop-down console: an egui panel (backquote/tilde) over the
//! headless core in `sightline-console`, with scrollback, history and tab completion.
//! Only the windowed game adds it; the dedicated server speaks the same console language
//! without it.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use sightline_console::{Console, ConsoleCommands, Cvars};

/// The console window. Needs [`sightline_console::ConsolePlugin`] and bevy_egui.
pub struct ConsoleUiPlugin;

impl Plugin for ConsoleUiPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, toggle_console)
            .add_systems(bevy_egui::EguiPrimaryContextPass, draw_console);
    }
}

/// Backquote (the tilde key on US layouts) opens and closes the console.
fn toggle_console(keys: Res<ButtonInput<KeyCode>>, mut console: ResMut<Console>) {
    if keys.just_pressed(KeyCode::Backquote) {
        console.open = !console.open;
    }
}

/// Draws the console over the top 40 % of the screen while it is open.
fn draw_console(
    mut contexts: EguiContexts,
    mut console: ResMut<Console>,
    cvars: Res<Cvars>,
    declared: Res<ConsoleCommands>,
) -> Result {
    if !console.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let screen = ctx.content_rect();
    let height = screen.height() * 0.4;
    egui::Area::new(egui::Id::new("console"))
        .fixed_pos(screen.min)
        .order(egui::Order::Foreground)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(225))
                .inner_margin(6.0)
                .show(ui, |ui| {
                    ui.set_width(screen.width() - 12.0);
                    ui.set_height(height);
                    let (tab, up, down) = ui.input_mut(|i| {
                        (
                            i.consume_key(egui::Modifiers::NONE, egui::Key::Tab),
                            i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowUp),
                            i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowDown),
                        )
                    });
                    if up || down {
                        console.recall(up);
                    }
                    if tab {
                        console.complete_input(&cvars, &declared);
                    }
                    let input_height = 24.0;
                    egui::ScrollArea::vertical()
                        .max_height(height - input_height - 16.0)
                        .stick_to_bottom(true)
                        .auto_shrink([false, false])
                        .show(ui, |ui| {
                            for line in console.lines() {
                                ui.label(
                                    egui::RichText::new(line)
                                        .monospace()
                                        .color(egui::Color32::LIGHT_GRAY),
                                );
                            }
                        });
                    let edit = ui.add(
                        egui::TextEdit::singleline(&mut console.input)
                            .font(egui::TextStyle::Monospace)
                            .desired_width(f32::INFINITY)
                            .hint_text("type help"),
                    );
                    // The key that opens the console must not end up in the line.
                    console.input.retain(|c| c != '`' && c != '~');
                    if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                        console.submit();
                    }
                    edit.request_focus();
                });
        });
    Ok(())
}
