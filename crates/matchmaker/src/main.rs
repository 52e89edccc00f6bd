//! `sightline-matchmaker`: finds a server with room for a player (a GameServer of a
//! Sightline fleet on Agones, or one of a list) and seals a connect token for it with the
//! servers' key: as a service the game's Quick play asks (`--listen`), or once for one
//! player (`--client-ip`).

use clap::Parser;
use sightline_matchmaker::{
    Allocator, MutualTls, Servers, Service, ServiceConfig, Ticket, load_tls, unix_now,
};
use sightline_tokens::load_key_file;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Matchmaker for Sightline: finds a server with room (a Ready GameServer of an Agones
/// fleet through its allocator, or one of --server's list) and seals a connect token for
/// the player with the key those servers load (--key-file, with --no-token-service).
/// With --listen it is the service the game's Quick play asks over HTTPS; with
/// --client-ip it prints one ticket as a JSON line.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The allocator service: https://HOST:PORT (mutual TLS, with the three certificate
    /// flags), or http://HOST:PORT for a stand-in or a port-forward.
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "server",
        conflicts_with = "server"
    )]
    allocator: Option<String>,
    /// Without a fleet: a server that loads --key-file, HOST:PORT (repeat for several,
    /// handed out in turn while their A2S answers say they have room).
    #[arg(long, value_name = "HOST:PORT")]
    server: Vec<SocketAddr>,
    /// The servers' token key file (64 hexadecimal digits), their --key-file.
    #[arg(long, value_name = "PATH")]
    key_file: PathBuf,
    /// Serve Quick play on this address (HOST:PORT), over HTTPS with --tls-cert and
    /// --tls-key.
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "client_ip")]
    listen: Option<SocketAddr>,
    /// The service's certificate chain (PEM).
    #[arg(long, value_name = "PATH", requires_all = ["listen", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The service's private key (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve plain HTTP instead of HTTPS: only behind a TLS-terminating proxy on this
    /// machine, or in tests (a token read on the way can be used from the same address).
    #[arg(long, requires = "listen", conflicts_with = "tls_cert")]
    plain_http: bool,
    /// How long a player waits in the queue for a server to become free.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=300))]
    queue_seconds: u64,
    /// Once, for one player: their public IP address, as this matchmaker saw it (the
    /// token is good from there only).
    #[arg(long, value_name = "IP", conflicts_with = "listen")]
    client_ip: Option<IpAddr>,
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
    /// Also write the token's bytes (netcode's connect token) to this file.
    #[arg(long, value_name = "PATH")]
    token_out: Option<PathBuf>,
}

/// Where servers come from, as the flags say.
fn servers(args: &Args) -> Result<Servers, String> {
    let Some(url) = &args.allocator else {
        return Ok(Servers::List(args.server.clone()));
    };
    let tls = match (&args.ca_cert, &args.client_cert, &args.client_key) {
        (Some(ca), Some(cert), Some(key)) => Some(MutualTls::load(ca, cert, key)?),
        _ if url.starts_with("https://") => {
            return Err(
                "an https allocator needs --ca-cert, --client-cert and --client-key".into(),
            );
        }
        _ => None,
    };
    Ok(Servers::Fleet(Allocator {
        url: url.clone(),
        namespace: args.namespace.clone(),
        fleet: args.fleet.clone(),
        tls,
    }))
}

/// Serves Quick play until the process is ended.
fn serve(args: &Args, bind: SocketAddr, key: [u8; 32]) -> Result<(), String> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(load_tls(cert, key)?),
        _ if args.plain_http => None,
        _ => return Err("--listen needs --tls-cert and --tls-key (or --plain-http)".into()),
    };
    let config = ServiceConfig {
        servers: servers(args)?,
        key,
        queue_wait: Duration::from_secs(args.queue_seconds),
        retry_every: Duration::from_secs(1),
        tls,
    };
    let https = config.tls.is_some();
    let service = Service::start(bind, config).map_err(|e| format!("--listen {bind}: {e}"))?;
    let scheme = if https { "https" } else { "http" };
    println!(
        "matchmaker: serving quick play on {scheme}://{}",
        service.addr()
    );
    service.wait();
    Ok(())
}

/// One ticket for one player, printed as a JSON line.
fn once(args: &Args, client_ip: IpAddr, key: [u8; 32]) -> Result<String, String> {
    let (game_server, address) = match servers(args)? {
        Servers::Fleet(allocator) => {
            let a = allocator.allocate().map_err(|e| e.to_string())?;
            (a.game_server, a.address)
        }
        Servers::List(list) => {
            let first = *list.first().ok_or("no --server given")?;
            (first.to_string(), first)
        }
    };
    let client_id = args.client_id.unwrap_or_else(|| {
        u64::from_le_bytes(
            sightline_tokens::random_secret()[..8]
                .try_into()
                .unwrap_or_default(),
        )
    });
    let ticket = Ticket::seal(
        &key,
        game_server,
        address,
        client_id,
        client_ip,
        unix_now()?,
    )?;
    if let Some(path) = &args.token_out {
        std::fs::write(path, &ticket.token)
            .map_err(|e| format!("--token-out {}: {e}", path.display()))?;
    }
    Ok(ticket.to_json())
}

fn run(args: &Args) -> Result<(), String> {
    let key = load_key_file(&args.key_file).map_err(|e| format!("--key-file {e}"))?;
    match (args.listen, args.client_ip) {
        (Some(bind), _) => serve(args, bind, key),
        (None, Some(ip)) => {
            println!("{}", once(args, ip, key)?);
            Ok(())
        }
        (None, None) => Err("give --listen (a service) or --client-ip (one ticket)".into()),
    }
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
