//! What the end-to-end tests share, apart from any one topic: the real binaries and how
//! to run them, a dedicated server for one test, its console, an attacker speaking the
//! protocol by hand, and raw messages on the in-process stepper.

mod attacker;
mod host;
mod processes;
pub(crate) mod raw;
mod server;

pub(crate) use attacker::{Attacker, cmd};
pub(crate) use host::{Host, client, finished, temp_dir};
pub(crate) use processes::{binaries, field, free_udp_port, repo_root, value, wait};
pub(crate) use server::{
    Server, TICK_BUDGET_MS, assert_tick_in_budget, check_honest, finish_honest, honest,
};
