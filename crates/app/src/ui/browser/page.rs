//! The browser's page in the main menu (egui): tabs, filters, the table, the password
//! prompt, turning clicks into joins and refreshes.

use crate::args::RemoteSecurity;
use crate::cvars::cvar;
use crate::session::{Session, SessionRequest, Target, join_server};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use sightline_console::Cvars;
use std::net::SocketAddr;

use super::*;

pub(super) const ROW_HEIGHT: f32 = 20.0;
pub(super) const TABLE_HEIGHT: f32 = 340.0;
pub(super) const ERROR_COLOUR: egui::Color32 = egui::Color32::from_rgb(255, 120, 100);

pub(super) fn table_width() -> f32 {
    Column::ALL.iter().map(|c| c.width()).sum()
}

/// What a click on the page asks for.
pub(super) enum Action {
    /// Join the server at this address: to play, or (`watch`) as a spectator.
    Join {
        addr: SocketAddr,
        watch: bool,
    },
    Refresh,
}

pub(super) fn draw_browser(
    mut contexts: EguiContexts,
    mut browser: ResMut<ServerBrowser>,
    cvars: Res<Cvars>,
    session: Res<Session>,
    mut security: ResMut<RemoteSecurity>,
    mut requests: MessageWriter<SessionRequest>,
) -> Result {
    if !browser.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let masters = cvars.read(cvar::CL_MASTERS);
    let browser = &mut *browser;
    let mut action = None;
    egui::Window::new("Find servers")
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .collapsible(false)
        .resizable(false)
        .min_width(table_width())
        .show(ctx, |ui| {
            if let Some(reason) = &session.ended {
                ui.colored_label(ERROR_COLOUR, reason);
            }
            action = page(ui, browser, &masters);
        });
    match action {
        Some(Action::Refresh) => browser.refresh(browser.tab, &masters),
        Some(Action::Join { addr, watch }) => {
            let row = browser.listing(browser.tab).row(addr).cloned();
            match row {
                Some(row) if row.needs_password() => {
                    browser.prompt = Some(PasswordPrompt {
                        addr: row.join_addr(),
                        watch,
                        name: row.info().map_or_else(String::new, |i| i.name.clone()),
                        password: String::new(),
                        focused: false,
                    });
                }
                Some(row) => {
                    let target = target(row.join_addr(), watch);
                    join_server(target, "", &mut security, &mut requests);
                }
                None => {}
            }
        }
        None => {}
    }
    if let Some((addr, watch, password)) = password_prompt(ctx, &mut browser.prompt) {
        join_server(target(addr, watch), &password, &mut security, &mut requests);
    }
    Ok(())
}

/// The page: tabs, the refresh bar, filters, the table, the buttons.
pub(super) fn page(
    ui: &mut egui::Ui,
    browser: &mut ServerBrowser,
    masters: &str,
) -> Option<Action> {
    let mut action = None;
    ui.horizontal(|ui| {
        for tab in Tab::ALL {
            if ui
                .selectable_label(browser.tab == tab, tab.label())
                .clicked()
                && browser.tab != tab
            {
                browser.show(tab);
                if !browser.listing(tab).refreshed {
                    action = Some(Action::Refresh);
                }
            }
        }
    });
    ui.separator();
    let tab = browser.tab;
    ui.horizontal(|ui| {
        if ui.button("Refresh").clicked() {
            action = Some(Action::Refresh);
        }
        let listing = browser.listing(tab);
        if listing.is_running() {
            ui.spinner();
        }
        ui.label(listing.progress());
        if listing.is_running()
            && let Some(asked) = listing.asked.filter(|&n| n > 0)
        {
            ui.add(
                egui::ProgressBar::new(listing.heard as f32 / asked as f32).desired_width(160.0),
            );
        }
    });
    ui.horizontal(|ui| {
        let f = &mut browser.filters;
        ui.label("Show only:");
        ui.checkbox(&mut f.not_full, "not full");
        ui.checkbox(&mut f.not_empty, "not empty");
        ui.checkbox(&mut f.no_password, "no password");
        ui.label("ping below");
        ui.add(
            egui::DragValue::new(&mut f.max_ping_ms)
                .range(0..=999)
                .suffix(" ms"),
        );
        ui.weak("(0: any)");
    });
    if tab == Tab::Internet && parse_masters(masters).is_empty() {
        ui.colored_label(
            ERROR_COLOUR,
            "No master list set: type `cl_masters HOST:PORT` in the console (` key), \
             comma-separated for several. LAN, Favourites and History work without one.",
        );
    }
    if tab == Tab::Favourites && browser.favourites().is_empty() {
        ui.weak(
            "No favourites yet: select a server on another tab and press \"Add to \
             favourites\", or add an address below.",
        );
    }
    if tab == Tab::History && browser.history().is_empty() {
        ui.weak("No servers joined yet.");
    }
    for note in &browser.listing(tab).notes {
        ui.colored_label(ERROR_COLOUR, note);
    }
    ui.separator();
    if let Some(addr) = table(ui, browser) {
        action = Some(Action::Join { addr, watch: false });
    }
    ui.separator();
    ui.horizontal(|ui| {
        let selected = browser.selected;
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Join"))
            .clicked()
            && let Some(addr) = selected
        {
            action = Some(Action::Join { addr, watch: false });
        }
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Spectate"))
            .on_hover_text("watch the game a few seconds behind, without playing")
            .clicked()
            && let Some(addr) = selected
        {
            action = Some(Action::Join { addr, watch: true });
        }
        match selected {
            Some(addr) if browser.is_favourite(addr) => {
                if ui.button("Remove from favourites").clicked() {
                    browser.remove_favourite(addr);
                }
            }
            _ => {
                let row = selected.and_then(|a| browser.listing(tab).row(a).cloned());
                if ui
                    .add_enabled(row.is_some(), egui::Button::new("Add to favourites"))
                    .clicked()
                    && let Some(row) = row
                {
                    browser.add_favourite(row);
                }
            }
        }
        if tab == Tab::Favourites {
            ui.separator();
            ui.add(
                egui::TextEdit::singleline(&mut browser.new_favourite)
                    .hint_text("IP:PORT")
                    .desired_width(150.0),
            );
            if ui.button("Add address").clicked() {
                match browser.new_favourite.trim().parse::<SocketAddr>() {
                    Ok(addr) => {
                        browser.new_favourite.clear();
                        browser.add_favourite(Row {
                            addr,
                            reply: Reply::Waiting,
                        });
                    }
                    Err(_) => browser.problem = Some("expected an address, IP:PORT".into()),
                }
            }
        }
        if ui.button("Back").clicked() {
            browser.open = false;
        }
    });
    if let Some(problem) = &browser.problem {
        ui.colored_label(ERROR_COLOUR, problem);
    }
    action
}

/// The table: headers that sort, rows that select and join. Gives the server to join
/// (a double click, or Enter on the selection).
pub(super) fn table(ui: &mut egui::Ui, browser: &mut ServerBrowser) -> Option<SocketAddr> {
    let width = table_width();
    let text_colour = ui.visuals().text_color();
    let font = egui::TextStyle::Body.resolve(ui.style());
    let (header, _) = ui.allocate_exact_size(egui::vec2(width, ROW_HEIGHT), egui::Sense::hover());
    let mut x = header.left();
    for column in Column::ALL {
        let cell = egui::Rect::from_min_size(
            egui::pos2(x, header.top()),
            egui::vec2(column.width(), ROW_HEIGHT),
        );
        x += column.width();
        let response = ui.interact(
            cell,
            ui.id().with(("browser header", column as u8)),
            egui::Sense::click(),
        );
        if response.clicked() {
            browser.sort.click(column);
        }
        let arrow = match browser.sort {
            s if s.column != column => "",
            s if s.descending => " ⏷",
            _ => " ⏶",
        };
        let colour = if response.hovered() {
            ui.visuals().strong_text_color()
        } else {
            text_colour
        };
        ui.painter().with_clip_rect(cell).text(
            cell.left_center() + egui::vec2(4.0, 0.0),
            egui::Align2::LEFT_CENTER,
            format!("{}{arrow}", column.title()),
            font.clone(),
            colour,
        );
    }

    let tab = browser.tab;
    let (sort, filters) = (browser.sort, browser.filters);
    let visible = browser.listings[tab.index()].view(sort, &filters);
    // A field borrow, not `listing()`: the selection changes below while rows are read.
    let listing = &browser.listings[tab.index()];
    let mut clicked = None;
    let mut joined = None;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .max_height(TABLE_HEIGHT)
        .min_scrolled_height(TABLE_HEIGHT)
        .show_rows(ui, ROW_HEIGHT, visible.len(), |ui, range| {
            for &i in &visible[range] {
                let row = &listing.rows[i];
                let selected = browser.selected == Some(row.addr);
                let (rect, response) =
                    ui.allocate_exact_size(egui::vec2(width, ROW_HEIGHT), egui::Sense::click());
                let visuals = ui.visuals();
                if selected {
                    ui.painter()
                        .rect_filled(rect, 2.0, visuals.selection.bg_fill);
                } else if response.hovered() {
                    ui.painter()
                        .rect_filled(rect, 2.0, visuals.widgets.hovered.weak_bg_fill);
                }
                let colour = match (&row.reply, selected) {
                    (_, true) => visuals.selection.stroke.color,
                    (Reply::Info { .. }, false) => text_colour,
                    _ => visuals.weak_text_color(),
                };
                let mut x = rect.left();
                for (column, text) in Column::ALL.into_iter().zip(cells(row)) {
                    let cell = egui::Rect::from_min_size(
                        egui::pos2(x, rect.top()),
                        egui::vec2(column.width() - 4.0, ROW_HEIGHT),
                    );
                    x += column.width();
                    ui.painter().with_clip_rect(cell).text(
                        cell.left_center() + egui::vec2(4.0, 0.0),
                        egui::Align2::LEFT_CENTER,
                        text,
                        font.clone(),
                        colour,
                    );
                }
                if response.clicked() {
                    clicked = Some(row.addr);
                }
                if response.double_clicked() {
                    joined = Some(row.addr);
                }
                response.on_hover_text(row.addr.to_string());
            }
        });
    if let Some(addr) = clicked {
        browser.selected = Some(addr);
    }
    // The keyboard works the table unless a text field or the password prompt has it.
    let keys_free = !ui.ctx().egui_wants_keyboard_input() && browser.prompt.is_none();
    if keys_free {
        let (enter, up, down) = ui.input(|i| {
            (
                i.key_pressed(egui::Key::Enter),
                i.key_pressed(egui::Key::ArrowUp),
                i.key_pressed(egui::Key::ArrowDown),
            )
        });
        let at = browser
            .selected
            .and_then(|s| visible.iter().position(|&i| listing.rows[i].addr == s));
        let next = match (at, up, down) {
            (None, _, true) => Some(0),
            (Some(at), true, _) => Some(at.saturating_sub(1)),
            (Some(at), _, true) => Some((at + 1).min(visible.len().saturating_sub(1))),
            _ => None,
        };
        if let Some(&i) = next.and_then(|n| visible.get(n)) {
            browser.selected = Some(listing.rows[i].addr);
        }
        if enter && joined.is_none() {
            joined = browser.selected;
        }
    }
    joined
}

/// A row's cells, left to right.
pub(super) fn cells(row: &Row) -> [String; 6] {
    match &row.reply {
        Reply::Info { info, ping } => [
            if info.password { "🔒" } else { "" }.into(),
            info.name.clone(),
            info.map.clone(),
            info.keywords.clone(),
            match info.bots {
                0 => format!("{}/{}", info.players, info.max_players),
                1 => format!("{}/{} (1 bot)", info.players, info.max_players),
                bots => format!("{}/{} ({bots} bots)", info.players, info.max_players),
            },
            format!("{} ms", ping.as_millis()),
        ],
        Reply::Waiting => [
            String::new(),
            row.addr.to_string(),
            "asking…".into(),
            String::new(),
            String::new(),
            String::new(),
        ],
        Reply::Failed(why) => [
            String::new(),
            row.addr.to_string(),
            why.clone(),
            String::new(),
            String::new(),
            String::new(),
        ],
    }
}

/// The password prompt, while one is open; gives the server and password to join with.
/// What joining `addr` is: to play, or (`watch`) as a spectator.
pub(super) fn target(addr: SocketAddr, watch: bool) -> Target {
    match watch {
        true => Target::Spectate(addr),
        false => Target::Remote(addr),
    }
}

/// The password prompt of a server that needs one: the address, whether the join is to
/// watch, and the password, once given.
pub(super) fn password_prompt(
    ctx: &egui::Context,
    prompt: &mut Option<PasswordPrompt>,
) -> Option<(SocketAddr, bool, String)> {
    let open = prompt.as_mut()?;
    let mut decided = None;
    let modal = egui::Modal::new(egui::Id::new("server password")).show(ctx, |ui| {
        ui.heading(format!("\"{}\" needs a password", open.name));
        let edit = ui.add(
            egui::TextEdit::singleline(&mut open.password)
                .password(true)
                .hint_text("password"),
        );
        if !open.focused {
            edit.request_focus();
            open.focused = true;
        }
        let entered = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        ui.horizontal(|ui| {
            if ui.button("Join").clicked() || entered {
                decided = Some(true);
            }
            if ui.button("Cancel").clicked() {
                decided = Some(false);
            }
        });
    });
    if modal.should_close() {
        decided.get_or_insert(false);
    }
    match decided? {
        true => prompt.take().map(|p| (p.addr, p.watch, p.password)),
        false => {
            *prompt = None;
            None
        }
    }
}
