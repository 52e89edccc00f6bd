//! The `sightline-matchmaker` binary against a stand-in allocator on loopback: what it
//! prints for an allocation, and what it says when the allocator refuses or is not
//! reached.

use sightline_matchmaker::unhex;
use sightline_tokens::ConnectToken;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

/// Answers one request with `status` and `body`; the request's body comes back.
fn allocator(status: &'static str, body: String) -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut request = vec![0; length];
        reader.read_exact(&mut request).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        String::from_utf8(request).unwrap()
    });
    (url, served)
}

fn key_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mm-{name}-{}", std::process::id()));
    std::fs::write(&path, format!("{}\n", "ab".repeat(32))).unwrap();
    path
}

fn matchmaker(url: &str, key: &std::path::Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sightline-matchmaker"))
        .args(["--allocator", url, "--key-file", key.to_str().unwrap()])
        .args(["--client-ip", "198.51.100.7", "--fleet", "arena"])
        .args(extra)
        .output()
        .expect("the matchmaker runs")
}

#[test]
fn it_prints_the_allocated_address_and_a_token_sealed_for_it() {
    let body = r#"{"gameServerName":"arena-x-y","ports":[{"name":"game","port":7301}],
        "address":"203.0.113.4","nodeName":"n1","source":"local"}"#;
    let (url, served) = allocator("200 OK", body.into());
    let key = key_file("ok");
    let out_file = key.with_extension("token");
    let out = matchmaker(
        &url,
        &key,
        &[
            "--client-id",
            "99",
            "--token-out",
            out_file.to_str().unwrap(),
        ],
    );
    let request: serde_json::Value = serde_json::from_str(&served.join().unwrap()).unwrap();
    assert_eq!(
        request["gameServerSelectors"][0]["matchLabels"]["agones.dev/fleet"],
        "arena"
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["gameServer"], "arena-x-y");
    assert_eq!(line["address"], "203.0.113.4:7301");
    assert_eq!(line["clientId"], 99);
    let token = unhex(line["token"].as_str().unwrap()).unwrap();
    assert_eq!(token, std::fs::read(&out_file).unwrap(), "--token-out");
    let token = ConnectToken::read(&mut token.as_slice()).unwrap();
    assert_eq!(token.client_id, 99);
    assert_eq!(
        token.server_addresses[0],
        Some("203.0.113.4:7301".parse().unwrap())
    );
    std::fs::remove_file(key).ok();
    std::fs::remove_file(out_file).ok();
}

#[test]
fn a_refusal_or_no_allocator_is_an_error_that_says_so() {
    let (url, served) = allocator("429 Too Many Requests", r#"{"message":"no Ready"}"#.into());
    let key = key_file("refused");
    let out = matchmaker(&url, &key, &[]);
    served.join().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("429") && err.contains("no Ready"), "{err}");
    // Nothing listening there any more.
    let out = matchmaker(&url, &key, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the allocator"), "{err}");
    // https without the mutual TLS files is refused before anything is sent.
    let out = matchmaker("https://allocator.example:443", &key, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--ca-cert"), "{err}");
    std::fs::remove_file(key).ok();
}
