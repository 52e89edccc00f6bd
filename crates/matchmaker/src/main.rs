//! `sightline-matchmaker`: allocates a GameServer of a Sightline fleet on Agones for one
//! player and prints a connect token for it, sealed with the fleet's key.

use clap::Parser;
use sightline_matchmaker::{Allocator, MutualTls, hex, seal_token};
use sightline_tokens::load_key_file;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Example matchmaker for a Sightline fleet on Agones: allocates a server through the
/// Agones allocator service and prints, as one JSON line, the server's address and a
/// connect token for the player, sealed with the key the fleet's servers load
/// (--key-file, with --no-token-service).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The allocator service: https://HOST:PORT (mutual TLS, with the three certificate
    /// flags), or http://HOST:PORT for a stand-in or a port-forward.
    #[arg(long, value_name = "URL")]
    allocator: String,
    /// The fleet's token key file (64 hexadecimal digits), the servers' --key-file.
    #[arg(long, value_name = "PATH")]
    key_file: PathBuf,
    /// The player's public IP address, as this matchmaker saw it: the token is good from
    /// there only.
    #[arg(long, value_name = "IP")]
    client_ip: IpAddr,
    /// The player's client id, which the server lists in its GameServer's `players` list
    /// [default: random].
    #[arg(long)]
    client_id: Option<u64>,
    /// The fleet's namespace.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// The fleet's name.
    #[arg(long, default_value = "sightline")]
    fleet: String,
    /// The allocator's CA certificate (PEM), for https.
    #[arg(long, value_name = "PATH", requires_all = ["client_cert", "client_key"])]
    ca_cert: Option<PathBuf>,
    /// This matchmaker's client certificate (PEM), for https.
    #[arg(long, value_name = "PATH", requires = "ca_cert")]
    client_cert: Option<PathBuf>,
    /// This matchmaker's client key (PEM), for https.
    #[arg(long, value_name = "PATH", requires = "ca_cert")]
    client_key: Option<PathBuf>,
    /// Also write the token's 2048 bytes to this file.
    #[arg(long, value_name = "PATH")]
    token_out: Option<PathBuf>,
}

fn run(args: Args) -> Result<String, String> {
    let key = load_key_file(&args.key_file).map_err(|e| format!("--key-file {e}"))?;
    let tls = match (&args.ca_cert, &args.client_cert, &args.client_key) {
        (Some(ca), Some(cert), Some(key)) => Some(MutualTls::load(ca, cert, key)?),
        _ if args.allocator.starts_with("https://") => {
            return Err(
                "an https allocator needs --ca-cert, --client-cert and --client-key".into(),
            );
        }
        _ => None,
    };
    let allocator = Allocator {
        url: args.allocator.clone(),
        namespace: args.namespace.clone(),
        fleet: args.fleet.clone(),
        tls,
    };
    let allocation = allocator.allocate()?;
    let client_id = args.client_id.unwrap_or_else(|| {
        u64::from_le_bytes(
            sightline_tokens::random_secret()[..8]
                .try_into()
                .unwrap_or_default(),
        )
    });
    let token = seal_token(&key, client_id, args.client_ip, allocation.address)?;
    if let Some(path) = &args.token_out {
        std::fs::write(path, &token).map_err(|e| format!("--token-out {}: {e}", path.display()))?;
    }
    Ok(serde_json::json!({
        "gameServer": allocation.game_server,
        "address": allocation.address.to_string(),
        "clientId": client_id,
        "token": hex(&token),
    })
    .to_string())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
