//! The drop-down console panel.

use crate::{Console, ConsoleCommands, Cvars, complete};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// Backquote (the tilde key on US layouts) opens and closes the console.
pub(crate) fn toggle_console(keys: Res<ButtonInput<KeyCode>>, mut console: ResMut<Console>) {
    if keys.just_pressed(KeyCode::Backquote) {
        console.open = !console.open;
    }
}

/// Draws the console over the top 40 % of the screen while it is open.
pub(crate) fn draw_console(
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
                        let first = console
                            .input
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .to_string();
                        if !first.is_empty() && !console.input.contains(' ') {
                            let (common, all) = complete(&first, &cvars, &declared);
                            if all.len() > 1 {
                                console.print(all.join("  "));
                            }
                            console.input = if all.len() == 1 {
                                format!("{common} ")
                            } else {
                                common
                            };
                        }
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
