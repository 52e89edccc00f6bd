//! Every fuzz body on stable, as CI runs it: over the checked-in seeds in `fuzz/corpus/`
//! (and whatever a local fuzzing run added there) plus a few thousand inputs mutated from
//! them with a fixed seed. `scripts/fuzz` runs the same bodies under libFuzzer for longer.

use sightline_fuzzing::{TARGETS, Target, mutate, target};
use std::path::{Path, PathBuf};

/// Generated inputs per target (divided by its [`Target::cost`]): a few seconds for all
/// of them in the dev profile. `SIGHTLINE_FUZZ_INPUTS` sets another count, for a longer
/// run by hand.
fn inputs_per_target() -> usize {
    std::env::var("SIGHTLINE_FUZZ_INPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000)
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn corpus(target: &Target) -> Vec<Vec<u8>> {
    let dir = fuzz_dir().join("corpus").join(target.name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no seed corpus at {}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable corpus folder").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}

fn run(name: &str) {
    let target = target(name).unwrap_or_else(|| panic!("no target {name}"));
    let mut inputs = corpus(target);
    inputs.extend((target.seeds)());
    // A different stream per target, the same on every run.
    let seed = name
        .bytes()
        .fold(0x5eed_u64, |h, b| h.rotate_left(7) ^ u64::from(b));
    let count = inputs_per_target() / target.cost.max(1);
    let ran = mutate::exercise(target, &inputs, count, seed);
    assert!(ran >= count);
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run(stringify!($name));
            }
        )*

        #[test]
        fn every_target_has_a_test_here() {
            let tested = [$(stringify!($name)),*];
            let all: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            assert_eq!(tested.as_slice(), all.as_slice());
        }
    };
}

targets!(
    transport_from_client,
    transport_from_server,
    netcode_datagram,
    client_message,
    server_message,
    client_datagram,
    server_datagram,
    welcome_version,
    map_file,
    console_line,
    plus_commands,
    console_exec,
    config_file,
    rcon_stream,
    server_query,
    query_reply,
    ban_file,
    demo_file,
    metrics_request,
    token_exchange,
    master_packets,
    relay_link,
    rcon_session,
);

#[test]
fn every_target_has_a_cargo_fuzz_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for t in TARGETS {
        let source = fuzz_dir().join(format!("fuzz_targets/{}.rs", t.name));
        let text = std::fs::read_to_string(&source)
            .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            text.contains("sightline_fuzzing::") && text.contains(t.name),
            "{} does not call its body",
            source.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{}\"", t.name)),
            "fuzz/Cargo.toml has no [[bin]] {}",
            t.name
        );
    }
}

/// The checked-in seeds and libFuzzer dictionaries are the generated ones, so they stay
/// valid as formats change.
#[test]
fn checked_in_seeds_are_current() {
    let write = std::env::var_os("SIGHTLINE_WRITE_SEEDS").is_some();
    let stale = |file: &Path| {
        format!(
            "{} is missing or stale: rewrite the seeds with \
             SIGHTLINE_WRITE_SEEDS=1 cargo test -p sightline-fuzzing --test corpus",
            file.display()
        )
    };
    for t in TARGETS {
        let dict = fuzz_dir().join(format!("dict/{}.dict", t.name));
        let text = sightline_fuzzing::libfuzzer_dictionary(t);
        if write {
            std::fs::create_dir_all(fuzz_dir().join("dict")).expect("create fuzz/dict");
            std::fs::write(&dict, &text).expect("write a dictionary");
        } else {
            let on_disk = std::fs::read_to_string(&dict).unwrap_or_default();
            assert!(on_disk == text, "{}", stale(&dict));
        }
        let dir = fuzz_dir().join("corpus").join(t.name);
        for (i, seed) in (t.seeds)().iter().enumerate() {
            let file = dir.join(format!("seed-{i}"));
            if write {
                std::fs::create_dir_all(&dir).expect("create the corpus folder");
                std::fs::write(&file, seed).expect("write a seed");
            } else {
                assert!(
                    std::fs::read(&file).is_ok_and(|on_disk| on_disk == *seed),
                    "{}",
                    stale(&file)
                );
            }
        }
    }
}
