//! Drawing the graph: the text, and with `cl_netgraph 2` the rolling graphs.

use crate::gather::GRAPH_LEN;
use crate::{Netgraph, NetgraphMode};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// Paints the text and, in mode 2, the graphs, at the bottom right.
pub(crate) fn draw(
    mut contexts: EguiContexts,
    mode: Res<NetgraphMode>,
    graph: Res<Netgraph>,
) -> Result {
    if mode.0 == 0 {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    egui::Area::new(egui::Id::new("netgraph"))
        .anchor(egui::Align2::RIGHT_BOTTOM, [-8.0, -8.0])
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(160))
                .inner_margin(6.0)
                .show(ui, |ui| {
                    ui.set_min_width(GRAPH_LEN as f32 * 2.0);
                    if mode.0 >= 2 {
                        draw_graphs(ui, &graph);
                    }
                    for line in &graph.text {
                        ui.label(
                            egui::RichText::new(line)
                                .monospace()
                                .size(12.0)
                                .color(egui::Color32::WHITE),
                        );
                    }
                });
        });
    Ok(())
}

fn draw_graphs(ui: &mut egui::Ui, graph: &Netgraph) {
    let width = GRAPH_LEN as f32 * 2.0;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, 96.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, egui::Color32::from_black_alpha(120));
    // Lagometer: one bar per snapshot, height from ping (100 ms = full).
    let lag = egui::Rect::from_min_size(rect.min, egui::vec2(width, 48.0));
    for (i, bar) in graph.bars.iter().enumerate() {
        let x = lag.min.x + i as f32 * 2.0;
        let (h, color) = if bar.lost > 0 {
            (lag.height(), egui::Color32::RED)
        } else if bar.extrapolated {
            (
                (bar.ping_ms / 100.0).clamp(0.05, 1.0) * lag.height(),
                egui::Color32::YELLOW,
            )
        } else {
            (
                (bar.ping_ms / 100.0).clamp(0.05, 1.0) * lag.height(),
                egui::Color32::GREEN,
            )
        };
        painter.line_segment(
            [egui::pos2(x, lag.max.y), egui::pos2(x, lag.max.y - h)],
            egui::Stroke::new(2.0, color),
        );
    }
    // Prediction corrections (blue, 10 cm = full) and ping (white, 200 ms = full).
    let low = egui::Rect::from_min_max(egui::pos2(rect.min.x, lag.max.y + 2.0), rect.max);
    let line = |values: Vec<f32>, full: f32, color: egui::Color32| {
        let points: Vec<egui::Pos2> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                egui::pos2(
                    low.min.x + i as f32 * 2.0,
                    low.max.y - (v / full).clamp(0.0, 1.0) * low.height(),
                )
            })
            .collect();
        painter.add(egui::Shape::line(points, egui::Stroke::new(1.0, color)));
    };
    line(
        graph.corrections.iter().collect(),
        100.0,
        egui::Color32::LIGHT_BLUE,
    );
    line(graph.pings.iter().collect(), 200.0, egui::Color32::WHITE);
}
