//! The settings pages, reached from the main menu and the game menu: video, audio,
//! controls (with key binding by pressing the key), crosshair (with a live preview) and
//! network. Every widget edits a cvar of the client's table, so the console and the page
//! are the same settings, saved to the config file alike; hovering a setting shows its
//! cvar's name and help.
//!
//! The console refuses a value outside a cvar's range; the widgets clamp to the range
//! instead, and say so in the console when they had to.
//!
//! Also where the window's cvars take effect (`vid_mode`, `vid_width`, `vid_height`,
//! `vid_vsync`) and where `r_preset` writes the quality settings it stands for.

use crate::controls::actions::ACTIONS;
use crate::controls::input::{Input, name_of, rebind, restore_default_bindings};
use crate::controls::overlays::{SettingsPage, Tab};
use crate::cvars::cvar;
use crate::ui::hud::{CrosshairLook, draw_crosshair, format_color};
use bevy::prelude::*;
use bevy::window::{
    Monitor, MonitorSelection, PresentMode, PrimaryMonitor, PrimaryWindow, VideoModeSelection,
    WindowMode,
};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use sightline_console::{
    Bindings, ConfigFile, Console, ConsoleCommands, CvarHandle, CvarKind, Cvars, RunCommand,
};

/// The settings pages, the window's cvars and `r_preset`.
pub struct SettingsPlugin;

impl Plugin for SettingsPlugin {
    fn build(&self, app: &mut App) {
        app.world_mut()
            .get_resource_or_insert_with(ConsoleCommands::default)
            .register(
                "settings",
                "settings [video|audio|controls|crosshair|network]: open the settings",
            );
        app.init_resource::<SettingsPage>()
            .add_systems(
                Update,
                (
                    run_settings_command,
                    apply_preset,
                    apply_video,
                    capture_key.after(crate::ui::menu::toggle_game_menu),
                ),
            )
            .add_systems(EguiPrimaryContextPass, draw_settings);
    }
}

/// The quality settings a preset stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityParts {
    /// `r_shadows`.
    pub shadows: bool,
    /// `r_particles`: 0 off, 1 few, 2 all.
    pub particles: i64,
    /// `r_scale`.
    pub scale: f64,
    /// `r_aa`: 0 off, 1 FXAA, 2 MSAA 4x.
    pub aa: i64,
    /// `r_bloom`.
    pub bloom: bool,
    /// `r_anisotropy`: anisotropic filtering's most samples, 1 (off) to 16.
    pub anisotropy: i64,
}

impl QualityParts {
    /// The console lines that set these parts.
    fn cvar_values(&self) -> [(&'static str, String); 6] {
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        [
            (cvar::R_SHADOWS.name(), flag(self.shadows)),
            (cvar::R_PARTICLES.name(), self.particles.to_string()),
            (cvar::R_SCALE.name(), self.scale.to_string()),
            (cvar::R_AA.name(), self.aa.to_string()),
            (cvar::R_BLOOM.name(), flag(self.bloom)),
            (cvar::R_ANISOTROPY.name(), self.anisotropy.to_string()),
        ]
    }
}

/// What each `r_preset` sets: 0 low (for software rendering and old laptops: no shadows,
/// few particles, 3/4 resolution, no anti-aliasing, no bloom, plain texture filtering), 1
/// medium, 2 high (the default), 3 ultra (MSAA, 8x anisotropic filtering). Out-of-range
/// presets are the nearest one.
pub fn preset_parts(preset: i64) -> QualityParts {
    match preset.clamp(0, 3) {
        0 => QualityParts {
            shadows: false,
            particles: 1,
            scale: 0.75,
            aa: 0,
            bloom: false,
            anisotropy: 1,
        },
        1 => QualityParts {
            shadows: true,
            particles: 1,
            scale: 1.0,
            aa: 1,
            bloom: false,
            anisotropy: 2,
        },
        2 => QualityParts {
            shadows: true,
            particles: 2,
            scale: 1.0,
            aa: 1,
            bloom: true,
            anisotropy: 4,
        },
        _ => QualityParts {
            shadows: true,
            particles: 2,
            scale: 1.0,
            aa: 2,
            bloom: true,
            anisotropy: 8,
        },
    }
}

/// `x` brought into a number cvar's range (whole numbers rounded); a value that is not a
/// number is the range's low end.
pub fn clamp_to_kind(kind: &CvarKind, x: f64) -> f64 {
    let (min, max, whole) = match *kind {
        CvarKind::Int { min, max } => (min as f64, max as f64, true),
        CvarKind::Float { min, max } => (min, max, false),
        CvarKind::Bool => (0.0, 1.0, true),
        CvarKind::Text { .. } | CvarKind::Choice { .. } => return x,
    };
    if x.is_nan() {
        return min;
    }
    let x = x.clamp(min, max);
    if whole { x.round() } else { x }
}

/// Sets cvars as the console would (a saved cvar marks the config file to be written),
/// printing any error in the console.
struct CvarEditor<'a> {
    cvars: &'a mut Cvars,
    config: &'a mut ConfigFile,
    console: &'a mut Console,
}

impl CvarEditor<'_> {
    fn set(&mut self, name: &str, text: &str) {
        match self.cvars.set(name, text) {
            Ok(c) => {
                if c.def.flags.saved {
                    self.config.dirty = true;
                }
            }
            Err(e) => self.console.print(format!("error: {e}")),
        }
    }

    /// Sets a number cvar, clamped to its range (saying so when it had to be).
    fn set_number(&mut self, name: &str, x: f64) {
        let Some(def) = self.cvars.get(name).map(|c| c.def.clone()) else {
            self.console
                .print(format!("error: unknown variable \"{name}\""));
            return;
        };
        let clamped = clamp_to_kind(&def.kind, x);
        if clamped != x {
            self.console
                .print(format!("{name}: {x} is out of range; set to {clamped}"));
        }
        let text = match def.kind {
            CvarKind::Float { .. } => format!("{}", (clamped * 1000.0).round() / 1000.0),
            _ => format!("{}", clamped as i64),
        };
        self.set(name, &text);
    }

    /// A row: the label (hovering shows the cvar's name and help) and a slider.
    fn slider(&mut self, ui: &mut egui::Ui, label: &str, name: &str) {
        self.label(ui, label, name);
        let Some((min, max)) = self.cvars.range(name) else {
            ui.end_row();
            return;
        };
        let mut x = self.cvars.number(name);
        let whole = matches!(
            self.cvars.get(name).map(|c| &c.def.kind),
            Some(CvarKind::Int { .. })
        );
        let mut slider = egui::Slider::new(&mut x, min..=max);
        if whole {
            slider = slider.integer();
        }
        if ui.add(slider).changed() {
            self.set_number(name, x);
        }
        ui.end_row();
    }

    /// A row with a checkbox for a 0/1 cvar.
    fn checkbox(&mut self, ui: &mut egui::Ui, label: &str, handle: CvarHandle<bool>) {
        self.label(ui, label, handle.name());
        let mut on = self.cvars.read(handle);
        if ui.checkbox(&mut on, "").changed() {
            self.set(handle.name(), if on { "1" } else { "0" });
        }
        ui.end_row();
    }

    /// A row of radio buttons for a cvar whose values 0, 1, 2... mean `options`.
    fn choice(
        &mut self,
        ui: &mut egui::Ui,
        label: &str,
        handle: CvarHandle<i64>,
        options: &[&str],
    ) {
        self.label(ui, label, handle.name());
        let mut value = self.cvars.read(handle);
        ui.horizontal(|ui| {
            for (i, option) in options.iter().enumerate() {
                if ui.radio_value(&mut value, i as i64, *option).changed() {
                    self.set(handle.name(), &value.to_string());
                }
            }
        });
        ui.end_row();
    }

    fn label(&self, ui: &mut egui::Ui, label: &str, name: &str) {
        let help = self.cvars.get(name).map_or("", |c| c.def.help);
        ui.label(label).on_hover_text(format!("{name}: {help}"));
    }
}

/// `settings [PAGE]`: opens the settings, on a page if one is named.
fn run_settings_command(
    mut run: MessageReader<RunCommand>,
    mut page: ResMut<SettingsPage>,
    mut console: ResMut<Console>,
) {
    for command in run.read().filter(|c| c.name == "settings") {
        match command.args.first().map(|name| (name, Tab::named(name))) {
            Some((name, None)) => {
                let pages: Vec<&str> = Tab::ALL.iter().map(|t| t.title()).collect();
                console.print(format!(
                    "settings: no page \"{name}\"; the pages are {}",
                    pages.join(", ").to_lowercase()
                ));
                continue;
            }
            Some((_, Some(tab))) => page.tab = tab,
            None => {}
        }
        page.open = true;
        page.capture = None;
    }
}

/// When `r_preset` changes, writes the settings it stands for. The first value seen (the
/// config file's, read before the first frame) only sets the baseline, so quality
/// settings changed one by one and saved are not overwritten at start-up.
fn apply_preset(
    mut cvars: ResMut<Cvars>,
    mut config: ResMut<ConfigFile>,
    mut console: ResMut<Console>,
    mut seen: Local<Option<i64>>,
) {
    if !cvars.is_changed() {
        return;
    }
    let preset = cvars.read(cvar::R_PRESET);
    if seen.replace(preset).is_none_or(|p| p == preset) {
        return;
    }
    let mut editor = CvarEditor {
        cvars: &mut cvars,
        config: &mut config,
        console: &mut console,
    };
    let values = preset_parts(preset).cvar_values();
    for (name, value) in &values {
        editor.set(name, value);
    }
    let summary: Vec<String> = values.iter().map(|(n, v)| format!("{n} {v}")).collect();
    console.print(format!("r_preset {preset}: {}", summary.join(", ")));
}

/// The window as the `vid_*` cvars ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct VideoSettings {
    mode: i64,
    width: u32,
    height: u32,
    vsync: bool,
}

impl VideoSettings {
    fn from_cvars(cvars: &Cvars) -> Self {
        Self {
            mode: cvars.read(cvar::VID_MODE),
            width: cvars.read(cvar::VID_WIDTH) as u32,
            height: cvars.read(cvar::VID_HEIGHT) as u32,
            vsync: cvars.read(cvar::VID_VSYNC),
        }
    }

    /// The size asked for, when one is (0 keeps the window's).
    fn size(&self) -> Option<UVec2> {
        (self.width > 0 && self.height > 0).then(|| UVec2::new(self.width, self.height))
    }

    /// The window mode: exclusive full screen takes the monitor's video mode of the size
    /// asked for with the highest refresh rate, or the monitor's current one.
    fn window_mode(&self, modes: &[bevy::window::VideoMode]) -> WindowMode {
        match self.mode {
            1 => WindowMode::BorderlessFullscreen(MonitorSelection::Current),
            2 => {
                let chosen = self.size().and_then(|size| {
                    modes
                        .iter()
                        .filter(|m| m.physical_size == size)
                        .max_by_key(|m| (m.refresh_rate_millihertz, m.bit_depth))
                });
                WindowMode::Fullscreen(
                    MonitorSelection::Current,
                    chosen.map_or(VideoModeSelection::Current, |m| {
                        VideoModeSelection::Specific(*m)
                    }),
                )
            }
            _ => WindowMode::Windowed,
        }
    }
}

/// Applies the `vid_*` cvars to the window when they change (and once at start, for the
/// config file's), so a window resized by hand stays as it is until they change again.
fn apply_video(
    cvars: Res<Cvars>,
    monitors: Query<&Monitor, With<PrimaryMonitor>>,
    mut windows: Query<&mut Window, With<PrimaryWindow>>,
    mut applied: Local<Option<VideoSettings>>,
) {
    if !cvars.is_changed() {
        return;
    }
    let wanted = VideoSettings::from_cvars(&cvars);
    if *applied == Some(wanted) {
        return;
    }
    let Ok(mut window) = windows.single_mut() else {
        return;
    };
    *applied = Some(wanted);
    let present = if wanted.vsync {
        PresentMode::AutoVsync
    } else {
        PresentMode::AutoNoVsync
    };
    if window.present_mode != present {
        window.present_mode = present;
    }
    let modes = monitors
        .iter()
        .next()
        .map(|m| m.video_modes.clone())
        .unwrap_or_default();
    let mode = wanted.window_mode(&modes);
    if window.mode != mode {
        window.mode = mode;
    }
    if wanted.mode == 0
        && let Some(size) = wanted.size()
        && window.resolution.physical_size() != size
    {
        window.resolution.set_physical_resolution(size.x, size.y);
    }
}

/// Sizes people play at, for a monitor that lists no video modes.
const COMMON_SIZES: &[(u32, u32)] = &[
    (1280, 720),
    (1366, 768),
    (1600, 900),
    (1920, 1080),
    (2560, 1440),
    (3840, 2160),
];

/// The sizes the resolution list offers: the monitor's video modes (at least 640x480,
/// once each), largest first, or common sizes when it lists none.
pub fn resolution_choices(monitor: &[UVec2]) -> Vec<(u32, u32)> {
    let mut sizes: Vec<(u32, u32)> = monitor
        .iter()
        .filter(|s| s.x >= 640 && s.y >= 480)
        .map(|s| (s.x, s.y))
        .collect();
    if sizes.is_empty() {
        sizes = COMMON_SIZES.to_vec();
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    sizes
}

/// While an action waits for its key: the next key, button or turn of the wheel is bound to it,
/// Escape cancels. A key `bind` has no name for is refused with a line in the console.
fn capture_key(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    scroll: Res<bevy::input::mouse::AccumulatedMouseScroll>,
    mut page: ResMut<SettingsPage>,
    mut bindings: ResMut<Bindings>,
    mut config: ResMut<ConfigFile>,
    mut console: ResMut<Console>,
) {
    let Some(action) = page.capture else {
        return;
    };
    if !page.open || keys.just_pressed(KeyCode::Escape) {
        page.capture = None;
        return;
    }
    let wheel = match scroll.delta.y {
        y if y > 0.0 => Some(Input::WheelUp),
        y if y < 0.0 => Some(Input::WheelDown),
        _ => None,
    };
    let Some(input) = keys
        .get_just_pressed()
        .map(|k| Input::Key(*k))
        .chain(mouse.get_just_pressed().map(|b| Input::Mouse(*b)))
        .chain(wheel)
        .next()
    else {
        return;
    };
    let Some(name) = name_of(input) else {
        console.print(format!("{input:?} cannot be bound; press another key"));
        return;
    };
    let command = action.command();
    rebind(&mut bindings, command, name);
    config.dirty = true;
    console.print(format!("bind {name} \"{command}\""));
    page.capture = None;
}

/// Draws the settings window while it is open.
#[allow(clippy::too_many_arguments)]
fn draw_settings(
    mut contexts: EguiContexts,
    mut page: ResMut<SettingsPage>,
    mut cvars: ResMut<Cvars>,
    mut config: ResMut<ConfigFile>,
    mut console: ResMut<Console>,
    mut bindings: ResMut<Bindings>,
    crosshair: Res<CrosshairLook>,
    monitors: Query<&Monitor, With<PrimaryMonitor>>,
) -> Result {
    if !page.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let sizes: Vec<UVec2> = monitors
        .iter()
        .flat_map(|m| m.video_modes.iter().map(|v| v.physical_size))
        .collect();
    let mut editor = CvarEditor {
        cvars: &mut cvars,
        config: &mut config,
        console: &mut console,
    };
    let mut open = true;
    egui::Window::new("SETTINGS")
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .collapsible(false)
        .resizable(false)
        .min_width(520.0)
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                for tab in Tab::ALL {
                    if ui.selectable_label(page.tab == tab, tab.title()).clicked() {
                        page.tab = tab;
                        page.capture = None;
                    }
                }
            });
            ui.separator();
            egui::Grid::new(("settings", page.tab as u8))
                .num_columns(2)
                .spacing([16.0, 8.0])
                .min_col_width(150.0)
                .show(ui, |ui| match page.tab {
                    Tab::Video => video_page(ui, &mut editor, &sizes),
                    Tab::Audio => audio_page(ui, &mut editor),
                    Tab::Controls => controls_page(ui, &mut editor, &mut bindings, &mut page),
                    Tab::Crosshair => crosshair_page(ui, &mut editor, &crosshair),
                    Tab::Network => network_page(ui, &mut editor),
                });
            ui.separator();
            ui.horizontal(|ui| {
                if ui.button("Back").clicked() {
                    open = false;
                }
                ui.weak("Saved as you change them · hover a setting for its console name");
            });
        });
    if !open {
        page.open = false;
        page.capture = None;
    }
    Ok(())
}

fn video_page(ui: &mut egui::Ui, ed: &mut CvarEditor, sizes: &[UVec2]) {
    ed.choice(
        ui,
        "Window",
        cvar::VID_MODE,
        &["windowed", "borderless", "full screen"],
    );
    ed.label(ui, "Resolution", cvar::VID_WIDTH.name());
    let current = (
        ed.cvars.read(cvar::VID_WIDTH) as u32,
        ed.cvars.read(cvar::VID_HEIGHT) as u32,
    );
    let text = |(w, h): (u32, u32)| {
        if w == 0 || h == 0 {
            "as started".to_string()
        } else {
            format!("{w} x {h}")
        }
    };
    let mut chosen = current;
    egui::ComboBox::from_id_salt("resolution")
        .selected_text(text(current))
        .show_ui(ui, |ui| {
            ui.selectable_value(&mut chosen, (0, 0), text((0, 0)));
            for size in resolution_choices(sizes) {
                ui.selectable_value(&mut chosen, size, text(size));
            }
        });
    if chosen != current {
        ed.set(cvar::VID_WIDTH.name(), &chosen.0.to_string());
        ed.set(cvar::VID_HEIGHT.name(), &chosen.1.to_string());
    }
    ui.end_row();
    ed.checkbox(ui, "Vertical sync", cvar::VID_VSYNC);
    ed.slider(ui, "Frame rate cap (0: none)", cvar::FPS_MAX.name());
    ed.choice(
        ui,
        "Frame rate shown",
        cvar::CL_SHOWFPS,
        &["off", "frame rate", "frame rate and its split"],
    );
    ed.slider(ui, "Field of view", cvar::FOV.name());
    ui.strong("Quality");
    ui.end_row();
    ed.choice(
        ui,
        "Preset",
        cvar::R_PRESET,
        &["low", "medium", "high", "ultra"],
    );
    ed.checkbox(ui, "Shadows", cvar::R_SHADOWS);
    ed.choice(ui, "Particles", cvar::R_PARTICLES, &["off", "few", "all"]);
    ed.choice(ui, "Anti-aliasing", cvar::R_AA, &["off", "FXAA", "MSAA 4x"]);
    ed.checkbox(ui, "Bloom", cvar::R_BLOOM);
    ed.slider(ui, "Anisotropic filtering", cvar::R_ANISOTROPY.name());
}

fn audio_page(ui: &mut egui::Ui, ed: &mut CvarEditor) {
    ed.slider(ui, "Master volume", cvar::VOLUME.name());
    ed.slider(ui, "Effects", cvar::S_EFFECTS.name());
    ed.slider(ui, "Announcer", cvar::S_ANNOUNCER.name());
}

fn controls_page(
    ui: &mut egui::Ui,
    ed: &mut CvarEditor,
    bindings: &mut Bindings,
    page: &mut SettingsPage,
) {
    ed.slider(ui, "Mouse sensitivity", cvar::SENSITIVITY.name());
    ed.checkbox(ui, "Invert mouse", cvar::M_INVERT);
    ui.strong("Keys");
    ui.weak("click, then press the key (Esc cancels)");
    ui.end_row();
    for row in ACTIONS {
        let (action, command) = (row.action, row.command);
        ui.label(row.label)
            .on_hover_text(format!("bind KEY \"{command}\""));
        let keys: Vec<&str> = bindings.keys_for(command).collect();
        let text = if page.capture == Some(action) {
            "press a key...".to_string()
        } else if keys.is_empty() {
            "(unbound)".to_string()
        } else {
            keys.join(" / ")
        };
        let button = egui::Button::new(text).min_size(egui::vec2(160.0, 0.0));
        // Only a mouse click: Space or Enter on the focused button is the key being bound,
        // and must not start waiting for a key again.
        let response = ui.add(button);
        if response.clicked_by(egui::PointerButton::Primary) {
            page.capture = Some(action);
            response.surrender_focus();
        }
        ui.end_row();
    }
    ui.label("");
    if ui.button("Default keys").clicked() {
        restore_default_bindings(bindings);
        ed.config.dirty = true;
        page.capture = None;
    }
    ui.end_row();
}

fn crosshair_page(ui: &mut egui::Ui, ed: &mut CvarEditor, look: &CrosshairLook) {
    ed.choice(
        ui,
        "Style",
        cvar::CROSSHAIR_STYLE,
        &["none", "cross", "cross + dot", "dot", "circle"],
    );
    ed.slider(ui, "Size", cvar::CROSSHAIR_SIZE.name());
    ed.label(ui, "Colour", cvar::CROSSHAIR_COLOR.name());
    let mut rgba = look.color;
    if ui.color_edit_button_srgba_unmultiplied(&mut rgba).changed() {
        ed.set(cvar::CROSSHAIR_COLOR.name(), &format_color(rgba));
    }
    ui.end_row();
    ui.label("Preview");
    // Over a light and a dark patch: the outline must keep it visible on both.
    let (rect, _) = ui.allocate_exact_size(egui::vec2(200.0, 100.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let (left, right) = rect.split_left_right_at_fraction(0.5);
    painter.rect_filled(left, 0.0, egui::Color32::from_rgb(150, 160, 170));
    painter.rect_filled(right, 0.0, egui::Color32::from_rgb(30, 32, 38));
    draw_crosshair(&painter, left.center(), look);
    draw_crosshair(&painter, right.center(), look);
    ui.end_row();
}

fn network_page(ui: &mut egui::Ui, ed: &mut CvarEditor) {
    ed.choice(
        ui,
        "Network graph",
        cvar::CL_NETGRAPH,
        &["off", "text", "text and graphs"],
    );
    ed.slider(
        ui,
        "Interpolation delay, s (0: auto)",
        cvar::CL_INTERP.name(),
    );
    ed.slider(
        ui,
        "Input packets a second (0: every frame)",
        cvar::CL_CMDRATE.name(),
    );
    ed.slider(
        ui,
        "Snapshots a second (0: the server's)",
        cvar::CL_UPDATERATE.name(),
    );
    ed.slider(ui, "Time nudge, ms", cvar::CL_TIMENUDGE.name());
    ed.slider(ui, "Rate, bytes a second", cvar::RATE.name());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered() -> Cvars {
        let mut cvars = Cvars::default();
        for d in cvar::client_cvars() {
            cvars.register(d);
        }
        cvars
    }

    #[test]
    fn presets_rise_in_cost_and_the_default_is_high() {
        let cvars = registered();
        let defaults = preset_parts(cvars.read(cvar::R_PRESET));
        assert_eq!(
            defaults,
            QualityParts {
                shadows: cvars.read(cvar::R_SHADOWS),
                particles: cvars.read(cvar::R_PARTICLES),
                scale: cvars.read(cvar::R_SCALE),
                aa: cvars.read(cvar::R_AA),
                bloom: cvars.read(cvar::R_BLOOM),
                anisotropy: cvars.read(cvar::R_ANISOTROPY),
            },
            "the parts' defaults are the default preset's"
        );
        let low = preset_parts(0);
        assert!(!low.shadows && !low.bloom && low.aa == 0 && low.scale < 1.0);
        assert_eq!(low.anisotropy, 1, "the low preset filters textures plainly");
        assert_eq!(preset_parts(3).aa, 2);
        for p in 0..3 {
            let (a, b) = (preset_parts(p), preset_parts(p + 1));
            assert!(b.particles >= a.particles && b.aa >= a.aa && b.scale >= a.scale);
            assert!(b.shadows >= a.shadows && b.bloom >= a.bloom);
            assert!(b.anisotropy >= a.anisotropy);
        }
        assert_eq!(preset_parts(-4), preset_parts(0));
        assert_eq!(preset_parts(9), preset_parts(3));
    }

    #[test]
    fn every_preset_part_is_a_value_its_cvar_accepts() {
        let mut cvars = registered();
        for p in 0..=3 {
            for (name, value) in preset_parts(p).cvar_values() {
                cvars
                    .set(name, &value)
                    .unwrap_or_else(|e| panic!("preset {p}: {e}"));
            }
            assert_eq!(cvars.read(cvar::R_SCALE), preset_parts(p).scale);
        }
    }

    #[test]
    fn pages_are_named_as_their_titles_in_any_case() {
        for tab in Tab::ALL {
            assert_eq!(Tab::named(tab.title()), Some(tab));
            assert_eq!(Tab::named(&tab.title().to_uppercase()), Some(tab));
        }
        assert_eq!(Tab::named("crosshair"), Some(Tab::Crosshair));
        assert_eq!(Tab::named("graphics"), None);
    }

    #[test]
    fn a_preset_writes_its_parts_when_changed_but_not_when_first_read() {
        let mut app = App::new();
        app.insert_resource(registered())
            .insert_resource(ConfigFile::default())
            .insert_resource(Console::default())
            .add_systems(Update, apply_preset);
        // As the config file leaves them: the medium preset with shadows turned off.
        let mut cvars = app.world_mut().resource_mut::<Cvars>();
        cvars.set_handle(cvar::R_PRESET, "1").unwrap();
        cvars.set_handle(cvar::R_SHADOWS, "0").unwrap();
        app.update();
        let cvars = app.world().resource::<Cvars>();
        assert!(!cvars.read(cvar::R_SHADOWS), "the saved part stays");
        assert!(cvars.read(cvar::R_BLOOM), "nothing written at start-up");
        app.world_mut()
            .resource_mut::<Cvars>()
            .set_handle(cvar::R_PRESET, "0")
            .unwrap();
        app.update();
        let cvars = app.world().resource::<Cvars>();
        let low = preset_parts(0);
        assert_eq!(cvars.read(cvar::R_SCALE), low.scale);
        assert_eq!(cvars.read(cvar::R_AA), low.aa);
        assert_eq!(cvars.read(cvar::R_BLOOM), low.bloom);
        assert!(app.world().resource::<ConfigFile>().dirty, "saved");
        // A part changed by hand afterwards stays changed.
        app.world_mut()
            .resource_mut::<Cvars>()
            .set_handle(cvar::R_BLOOM, "1")
            .unwrap();
        app.update();
        assert!(app.world().resource::<Cvars>().read(cvar::R_BLOOM));
        let said: Vec<String> = app
            .world()
            .resource::<Console>()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(
            said.iter()
                .any(|l| l.starts_with("r_preset 0: r_shadows 0")),
            "{said:?}"
        );
    }

    #[test]
    fn numbers_clamp_to_the_cvars_range() {
        let int = CvarKind::Int { min: 0, max: 1000 };
        assert_eq!(clamp_to_kind(&int, 1500.0), 1000.0);
        assert_eq!(clamp_to_kind(&int, -3.0), 0.0);
        assert_eq!(clamp_to_kind(&int, 59.6), 60.0);
        let float = CvarKind::Float { min: 0.5, max: 1.0 };
        assert_eq!(clamp_to_kind(&float, 0.25), 0.5);
        assert_eq!(clamp_to_kind(&float, 0.8), 0.8);
        assert_eq!(clamp_to_kind(&float, f64::INFINITY), 1.0);
        assert_eq!(clamp_to_kind(&float, f64::NAN), 0.5);
        assert_eq!(clamp_to_kind(&CvarKind::Bool, 7.0), 1.0);
    }

    #[test]
    fn the_editor_clamps_says_so_and_marks_the_config_for_saving() {
        let mut cvars = registered();
        let mut config = ConfigFile::default();
        let mut console = Console::default();
        let mut ed = CvarEditor {
            cvars: &mut cvars,
            config: &mut config,
            console: &mut console,
        };
        ed.set_number(cvar::CROSSHAIR_SIZE.name(), 500.0);
        ed.set_number(cvar::FPS_MAX.name(), 143.7);
        assert_eq!(cvars.read(cvar::CROSSHAIR_SIZE), 64.0);
        assert_eq!(cvars.read(cvar::FPS_MAX), 144);
        assert!(config.dirty, "crosshair_size is saved");
        let said: Vec<&str> = console.lines().collect();
        assert!(
            said.iter()
                .any(|l| l.contains("crosshair_size: 500 is out of range; set to 64"))
        );
        // A cvar that is not saved does not touch the file.
        let mut config = ConfigFile::default();
        CvarEditor {
            cvars: &mut cvars,
            config: &mut config,
            console: &mut console,
        }
        .set_number(cvar::NET_FAKELAG.name(), 50.0);
        assert_eq!(cvars.read(cvar::NET_FAKELAG), 50.0);
        assert!(!config.dirty);
    }

    #[test]
    fn resolutions_come_from_the_monitor_largest_first_once_each() {
        let listed = [
            UVec2::new(1920, 1080),
            UVec2::new(1280, 720),
            UVec2::new(1920, 1080),
            UVec2::new(320, 200),
        ];
        assert_eq!(resolution_choices(&listed), vec![(1920, 1080), (1280, 720)]);
        let fallback = resolution_choices(&[]);
        assert_eq!(fallback.first(), Some(&(3840, 2160)));
        assert!(fallback.contains(&(1280, 720)));
    }

    #[test]
    fn exclusive_full_screen_takes_the_fastest_mode_of_the_size() {
        let mode = |w, h, hz| bevy::window::VideoMode {
            physical_size: UVec2::new(w, h),
            bit_depth: 32,
            refresh_rate_millihertz: hz,
        };
        let modes = [
            mode(1920, 1080, 60_000),
            mode(1920, 1080, 144_000),
            mode(1280, 720, 240_000),
        ];
        let settings = |mode, width, height| VideoSettings {
            mode,
            width,
            height,
            vsync: false,
        };
        assert_eq!(
            settings(2, 1920, 1080).window_mode(&modes),
            WindowMode::Fullscreen(
                MonitorSelection::Current,
                VideoModeSelection::Specific(modes[1])
            )
        );
        assert_eq!(
            settings(2, 1000, 1000).window_mode(&modes),
            WindowMode::Fullscreen(MonitorSelection::Current, VideoModeSelection::Current)
        );
        assert_eq!(
            settings(1, 0, 0).window_mode(&modes),
            WindowMode::BorderlessFullscreen(MonitorSelection::Current)
        );
        assert_eq!(
            settings(0, 1920, 1080).window_mode(&modes),
            WindowMode::Windowed
        );
    }
}
