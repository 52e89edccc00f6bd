//! The windowed client, started as a person would start it, under Xvfb with Mesa's
//! software Vulkan (lavapipe): play offline against bots with the netgraph up, take a
//! screenshot, and check what it shows.

use crate::support::binaries;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 720;

/// An X server on a display of its own, stopped when dropped.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        // A display nobody holds (a crashed X server can leave its lock file behind).
        let start_at = 90 + std::process::id() % 100;
        let number = (start_at..start_at + 200)
            .find(|n| {
                !Path::new(&format!("/tmp/.X{n}-lock")).exists()
                    && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            })
            .expect("a free X display number");
        let child = Command::new("Xvfb")
            .arg(format!(":{number}"))
            .args([
                "-screen",
                "0",
                &format!("{WIDTH}x{HEIGHT}x24"),
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb runs (scripts/setup installs it)");
        let socket = format!("/tmp/.X11-unix/X{number}");
        let start = Instant::now();
        while !Path::new(&socket).exists() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "Xvfb did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Xvfb {
            child,
            display: format!(":{number}"),
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("screenshot exists"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

#[test]
fn the_game_renders_the_world_and_the_netgraph_under_xvfb() {
    let dir = binaries();
    let x = Xvfb::start();
    // CI keeps the screenshot as an artifact when it names a path.
    let keep = std::env::var_os("SIGHTLINE_SMOKE_SHOT").map(std::path::PathBuf::from);
    let shot = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("sightline-smoke-{}.png", std::process::id()))
    });
    let _ = std::fs::remove_file(&shot);
    let config = std::env::temp_dir().join(format!("sightline-smoke-{}.cfg", std::process::id()));
    let out = Command::new(dir.join("sightline"))
        .args([
            "--map",
            "duel",
            "--bots",
            "4",
            "--auto",
            "--run-seconds",
            "25",
        ])
        .args([
            "--screenshot",
            shot.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ])
        .args(["+cl_netgraph", "2"])
        .env("DISPLAY", &x.display)
        .env("WAYLAND_DISPLAY", "")
        .env("WGPU_BACKEND", "vulkan")
        .env(
            "VK_ICD_FILENAMES",
            "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        )
        .output()
        .expect("the client runs");
    let _ = std::fs::remove_file(&config);
    let log =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the client failed:\n{log}");
    assert!(!log.contains("panicked"), "{log}");
    // At the few frames a second of software rendering the game still plays: pacing
    // settles and the player (a bot, --auto) gets somewhere.
    let played = log
        .lines()
        .find(|l| l.contains("played: "))
        .unwrap_or_else(|| panic!("no play report:\n{log}"));
    assert!(played.contains("input pacing settled"), "{played}");
    let travelled: f32 = played
        .split("our player got ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no distance in {played}"));
    assert!(travelled > 2.0, "our player barely moved: {played}");

    assert!(shot.exists(), "no screenshot was saved:\n{log}");
    let (w, h, pixels) = read_png(&shot);
    assert_eq!((w, h), (WIDTH, HEIGHT), "screenshot size");
    // The world: a block left of the middle, clear of every HUD line, the crosshair and
    // the weapon, is shaded, not the one flat colour a frame without the world clears
    // to. (Counting colours over the whole screen failed on a real frame: the player had
    // walked up to a dark wall, and the screen had 189 colours in all with the HUD.)
    let mut colours: Vec<[u8; 3]> = (120..520)
        .flat_map(|y| (40..440).map(move |x| (x, y)))
        .map(|(x, y)| pixels[(y * w + x) as usize])
        .collect();
    colours.sort();
    colours.dedup();
    assert!(
        colours.len() > 40,
        "only {} distinct colours in the middle of the screen: nothing rendered?",
        colours.len()
    );
    // The netgraph: the bottom-right corner holds white text on a dark panel.
    let corner = |x0: u32, y0: u32| (y0..h).flat_map(move |y| (x0..w).map(move |x| (x, y)));
    let white = corner(w - 420, h - 260)
        .filter(|&(x, y)| pixels[(y * w + x) as usize].iter().all(|&c| c > 220))
        .count();
    assert!(
        white > 300,
        "no netgraph text in the bottom-right corner ({white} white pixels)"
    );
    // A screenshot asked for by name is kept (CI uploads it).
    if keep.is_none() {
        let _ = std::fs::remove_file(&shot);
    }
}
