//! The token exchange's cryptography: the server's long-lived identity key, and the keys
//! both ends derive so that the password never travels and the token travels sealed.
//!
//! Noise NK with a password: the client knows (or learns on first use, as SSH does) the
//! server's static X25519 key; it sends an ephemeral key and a SPAKE2 message made from
//! the password (the empty one on a public server, so the wire looks the same). The
//! server answers with its static key, an ephemeral key of its own, its SPAKE2 message
//! and a key confirmation. The session keys come from HKDF-SHA256 over
//! DH(client ephemeral, server static), DH(client ephemeral, server ephemeral) and the
//! SPAKE2 key, salted with the transcript's hash, so:
//!
//! - an eavesdropper learns nothing (it has neither private key), and cannot test
//!   password guesses offline (the keys hang on the DH secrets as well as the password);
//! - an active attacker gets one guess per exchange it takes part in (SPAKE2), which the
//!   server counts against its guess allowance;
//! - a recorded exchange replayed to the server fails: the server's fresh ephemeral key
//!   makes every key, and so the recorded confirmation, different.
//!
//! The exchange here is pure, bytes in and bytes out; `auth` does its I/O.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use sightline_protocol::{
    CLIENT_HELLO_BYTES, EXCHANGE_KEY_BYTES, SERVER_HELLO_BYTES, SPAKE2_MESSAGE_BYTES,
    TOKEN_EXCHANGE_MAGIC, TOKEN_EXCHANGE_VERSION,
};
use sightline_tokens::{hex, load_key_file, write_new_key_file};
use spake2::{Ed25519Group, Identity, Password, Spake2};
use std::io;
use std::path::Path;
use x25519_dalek::{PublicKey, StaticSecret};

/// Prefixes the transcript hash: no other protocol hashes the same bytes to the same
/// value.
const TRANSCRIPT_LABEL: &[u8] = b"sightline token exchange v1";
/// SPAKE2's two identities: the client is side A, the server side B.
const SPAKE2_CLIENT: &[u8] = b"sightline client";
const SPAKE2_SERVER: &[u8] = b"sightline server";
/// HKDF labels, one per key, so no key is used for two things.
const SERVER_CONFIRM_LABEL: &[u8] = b"sightline kex server confirm";
const CLIENT_CONFIRM_LABEL: &[u8] = b"sightline kex client confirm";
const CLIENT_TO_SERVER_LABEL: &[u8] = b"sightline kex client to server";
const SERVER_TO_CLIENT_LABEL: &[u8] = b"sightline kex server to client";

/// An X25519 public key, as sent.
pub type PublicKeyBytes = [u8; EXCHANGE_KEY_BYTES];

/// The server's long-lived X25519 key: what a client remembers the server by
/// ([`crate::KnownServers`]). Kept in a file so it survives restarts
/// ([`Self::load_or_create`]).
#[derive(Clone)]
pub struct ServerIdentity {
    secret: StaticSecret,
    public: PublicKey,
}

impl std::fmt::Debug for ServerIdentity {
    // Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerIdentity({})", fingerprint(&self.public_key()))
    }
}

/// Why an identity file could not serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityFileError {
    /// The file is there but is not an identity (or cannot be read): a person should look.
    Unusable(String),
    /// There is no file and none could be written (a read-only folder).
    CannotWrite(String),
}

impl std::fmt::Display for IdentityFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unusable(why) | Self::CannotWrite(why) => f.write_str(why),
        }
    }
}

impl ServerIdentity {
    /// A fresh identity from the operating system's generator, kept in memory only.
    pub fn random() -> Self {
        Self::from_secret(renetcode::generate_random_bytes())
    }

    /// The identity whose private key is `secret`.
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let secret = StaticSecret::from(secret);
        let public = PublicKey::from(&secret);
        Self { secret, public }
    }

    /// The public key clients see and remember.
    pub fn public_key(&self) -> PublicKeyBytes {
        self.public.to_bytes()
    }

    /// Reads the identity at `path` (64 hexadecimal digits), or makes one there (mode
    /// 0600 on Unix) when there is no file. Two servers starting together in one folder
    /// end up with the same identity: the file appears whole or not at all.
    pub fn load_or_create(path: &Path) -> Result<Self, IdentityFileError> {
        match std::fs::symlink_metadata(path) {
            Ok(_) => {
                return load_key_file(path)
                    .map(Self::from_secret)
                    .map_err(IdentityFileError::Unusable);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(IdentityFileError::Unusable(format!(
                    "{}: {e}",
                    path.display()
                )));
            }
        }
        let identity = Self::random();
        match write_new_key_file(path, &identity.secret.to_bytes()) {
            Ok(()) => Ok(identity),
            // Another server made it first: use theirs.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load_key_file(path)
                .map(Self::from_secret)
                .map_err(IdentityFileError::Unusable),
            Err(e) => Err(IdentityFileError::CannotWrite(format!(
                "{}: {e}",
                path.display()
            ))),
        }
    }
}

/// A short name for a public key, to show people: `SHA256:` and the first 16 bytes of
/// its SHA-256 in hexadecimal.
pub fn fingerprint(key: &PublicKeyBytes) -> String {
    format!("SHA256:{}", hex(&Sha256::digest(key)[..16]))
}

/// Why an exchange cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KexError {
    /// Not the layout, a SPAKE2 message that does not decode, or a key that contributes
    /// nothing to a shared secret (a low-order point).
    Malformed,
    /// The hello speaks another version of the exchange.
    Version(u8),
}

/// What the client's second message says to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishError {
    /// The client's key confirmation is wrong: it used another password (or replays
    /// another exchange's message).
    WrongConfirmation,
    /// Confirmed, but the sealed request does not open: tampered with on the way.
    Tampered,
}

/// One direction's sealing key and nonce (each seals exactly one message).
#[derive(Clone)]
struct Seal {
    key: [u8; 32],
    nonce: [u8; 12],
}

impl Seal {
    fn seal(&self, transcript: &[u8; 32], plain: &[u8]) -> Vec<u8> {
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.key));
        let payload = Payload {
            msg: plain,
            aad: transcript,
        };
        // Encryption into a Vec fails only for messages of gigabytes.
        cipher
            .encrypt(Nonce::from_slice(&self.nonce), payload)
            .unwrap_or_default()
    }

    fn open(&self, transcript: &[u8; 32], sealed: &[u8]) -> Option<Vec<u8>> {
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.key));
        let payload = Payload {
            msg: sealed,
            aad: transcript,
        };
        cipher.decrypt(Nonce::from_slice(&self.nonce), payload).ok()
    }
}

/// Everything both ends derive from one exchange.
struct Derived {
    transcript: [u8; 32],
    server_confirm: [u8; 32],
    client_confirm: [u8; 32],
    client_to_server: Seal,
    server_to_client: Seal,
}

/// Derives the keys from the transcript (client hello; server static key, ephemeral key
/// and SPAKE2 message) and the three secrets.
fn derive(
    client_hello: &[u8],
    server_public: &[u8],
    dh_static: &[u8; 32],
    dh_ephemeral: &[u8; 32],
    spake_key: &[u8],
) -> Derived {
    let mut hash = Sha256::new();
    hash.update(TRANSCRIPT_LABEL);
    hash.update(client_hello);
    hash.update(server_public);
    let transcript: [u8; 32] = hash.finalize().into();
    let mut ikm = Vec::with_capacity(64 + spake_key.len());
    ikm.extend_from_slice(dh_static);
    ikm.extend_from_slice(dh_ephemeral);
    ikm.extend_from_slice(spake_key);
    let hkdf = Hkdf::<Sha256>::new(Some(&transcript), &ikm);
    let expand = |label: &[u8], out: &mut [u8]| {
        // Within HKDF-SHA256's 8160 bytes: cannot fail.
        let _ = hkdf.expand(label, out);
    };
    let mut server_confirm = [0; 32];
    expand(SERVER_CONFIRM_LABEL, &mut server_confirm);
    let mut client_confirm = [0; 32];
    expand(CLIENT_CONFIRM_LABEL, &mut client_confirm);
    let seal = |label: &[u8]| {
        let mut okm = [0u8; 44];
        expand(label, &mut okm);
        let mut seal = Seal {
            key: [0; 32],
            nonce: [0; 12],
        };
        seal.key.copy_from_slice(&okm[..32]);
        seal.nonce.copy_from_slice(&okm[32..]);
        seal
    };
    Derived {
        transcript,
        server_confirm,
        client_confirm,
        client_to_server: seal(CLIENT_TO_SERVER_LABEL),
        server_to_client: seal(SERVER_TO_CLIENT_LABEL),
    }
}

/// HMAC-SHA256 of the transcript under a confirmation key.
fn confirmation(key: &[u8; 32], transcript: &[u8; 32]) -> [u8; 32] {
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        return [0; 32]; // HMAC takes keys of any length
    };
    mac.update(transcript);
    mac.finalize().into_bytes().into()
}

/// Whether `tag` is the confirmation of `transcript` under `key`, compared in constant
/// time.
fn confirms(key: &[u8; 32], transcript: &[u8; 32], tag: &[u8]) -> bool {
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        return false;
    };
    mac.update(transcript);
    mac.verify_slice(tag).is_ok()
}

/// A Diffie-Hellman secret, unless `public` is a low-order point that makes it known to
/// anyone.
fn agree(secret: &StaticSecret, public: &[u8; 32]) -> Option<[u8; 32]> {
    let shared = secret.diffie_hellman(&PublicKey::from(*public));
    shared.was_contributory().then(|| shared.to_bytes())
}

/// A public key out of a message.
fn key_at(bytes: &[u8], at: usize) -> PublicKeyBytes {
    let mut key = [0; 32];
    key.copy_from_slice(&bytes[at..at + 32]);
    key
}

/// The client's side, from its hello to the server's.
pub struct ClientHello {
    ephemeral: StaticSecret,
    spake: Spake2<Ed25519Group>,
    bytes: Vec<u8>,
}

impl ClientHello {
    /// Starts an exchange proving `password` (empty for a public server).
    pub fn start(password: &str) -> Self {
        let ephemeral = StaticSecret::from(renetcode::generate_random_bytes::<32>());
        let (spake, message) = Spake2::<Ed25519Group>::start_a(
            &Password::new(password.as_bytes()),
            &Identity::new(SPAKE2_CLIENT),
            &Identity::new(SPAKE2_SERVER),
        );
        let mut bytes = Vec::with_capacity(CLIENT_HELLO_BYTES);
        bytes.extend_from_slice(&TOKEN_EXCHANGE_MAGIC);
        bytes.push(TOKEN_EXCHANGE_VERSION);
        bytes.extend_from_slice(PublicKey::from(&ephemeral).as_bytes());
        bytes.extend_from_slice(&message);
        Self {
            ephemeral,
            spake,
            bytes,
        }
    }

    /// The hello to send.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Reads the server's hello (after its tag). A wrong confirmation is not an error
    /// here: the client still answers, so the server counts the guess.
    pub fn finish(self, server_hello: &[u8]) -> Result<ClientKeys, KexError> {
        if server_hello.len() != SERVER_HELLO_BYTES {
            return Err(KexError::Malformed);
        }
        let server_key = key_at(server_hello, 0);
        let server_ephemeral = key_at(server_hello, 32);
        let spake_end = 64 + SPAKE2_MESSAGE_BYTES;
        let spake_key = self
            .spake
            .finish(&server_hello[64..spake_end])
            .map_err(|_| KexError::Malformed)?;
        let dh_static = agree(&self.ephemeral, &server_key).ok_or(KexError::Malformed)?;
        let dh_ephemeral = agree(&self.ephemeral, &server_ephemeral).ok_or(KexError::Malformed)?;
        let keys = derive(
            &self.bytes,
            &server_hello[..spake_end],
            &dh_static,
            &dh_ephemeral,
            &spake_key,
        );
        let server_confirmed = confirms(
            &keys.server_confirm,
            &keys.transcript,
            &server_hello[spake_end..],
        );
        Ok(ClientKeys {
            server_key,
            server_confirmed,
            keys,
        })
    }
}

/// The client's keys once it has the server's hello.
pub struct ClientKeys {
    /// The server's static key, to check against the known servers.
    pub server_key: PublicKeyBytes,
    /// Whether the server proved it derived the same keys: the same password, and no one
    /// in between.
    pub server_confirmed: bool,
    keys: Derived,
}

impl ClientKeys {
    /// The client's second message: its confirmation, then `request` sealed.
    pub fn finish_message(&self, request: &[u8]) -> Vec<u8> {
        let k = &self.keys;
        let mut out = confirmation(&k.client_confirm, &k.transcript).to_vec();
        out.extend_from_slice(&k.client_to_server.seal(&k.transcript, request));
        out
    }

    /// Opens the server's sealed reply (after its tag).
    pub fn open_reply(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        let k = &self.keys;
        k.server_to_client.open(&k.transcript, sealed)
    }
}

/// The server's keys for one exchange, once it has answered the client's hello.
pub(crate) struct ServerKeys(Derived);

/// Answers a client's hello (all [`CLIENT_HELLO_BYTES`] of it, magic first) for a server
/// of `identity` and `password`: the keys, and the server's hello (without its tag).
pub(crate) fn server_hello(
    identity: &ServerIdentity,
    password: &str,
    client_hello: &[u8],
) -> Result<(ServerKeys, Vec<u8>), KexError> {
    if client_hello.len() != CLIENT_HELLO_BYTES || client_hello[..4] != TOKEN_EXCHANGE_MAGIC {
        return Err(KexError::Malformed);
    }
    if client_hello[4] != TOKEN_EXCHANGE_VERSION {
        return Err(KexError::Version(client_hello[4]));
    }
    let client_ephemeral = key_at(client_hello, 5);
    // The cheapest check first: a low-order key is refused before any SPAKE2 work.
    let dh_static = agree(&identity.secret, &client_ephemeral).ok_or(KexError::Malformed)?;
    let ephemeral = StaticSecret::from(renetcode::generate_random_bytes::<32>());
    let dh_ephemeral = agree(&ephemeral, &client_ephemeral).ok_or(KexError::Malformed)?;
    let (spake, message) = Spake2::<Ed25519Group>::start_b(
        &Password::new(password.as_bytes()),
        &Identity::new(SPAKE2_CLIENT),
        &Identity::new(SPAKE2_SERVER),
    );
    let spake_key = spake
        .finish(&client_hello[37..])
        .map_err(|_| KexError::Malformed)?;
    let mut hello = Vec::with_capacity(SERVER_HELLO_BYTES);
    hello.extend_from_slice(identity.public.as_bytes());
    hello.extend_from_slice(PublicKey::from(&ephemeral).as_bytes());
    hello.extend_from_slice(&message);
    let keys = derive(client_hello, &hello, &dh_static, &dh_ephemeral, &spake_key);
    hello.extend_from_slice(&confirmation(&keys.server_confirm, &keys.transcript));
    Ok((ServerKeys(keys), hello))
}

impl ServerKeys {
    /// Checks the client's second message and opens the request in it.
    pub(crate) fn open_request(&self, finish: &[u8]) -> Result<Vec<u8>, FinishError> {
        let k = &self.0;
        let (tag, sealed) = finish.split_at(finish.len().min(32));
        if !confirms(&k.client_confirm, &k.transcript, tag) {
            return Err(FinishError::WrongConfirmation);
        }
        k.client_to_server
            .open(&k.transcript, sealed)
            .ok_or(FinishError::Tampered)
    }

    /// Seals the reply.
    pub(crate) fn seal_reply(&self, reply: &[u8]) -> Vec<u8> {
        let k = &self.0;
        k.server_to_client.seal(&k.transcript, reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(client_password: &str, server_password: &str) -> (ClientKeys, ServerKeys) {
        let identity = ServerIdentity::random();
        let hello = ClientHello::start(client_password);
        let (server, reply) = server_hello(&identity, server_password, hello.bytes()).unwrap();
        let client = hello.finish(&reply).unwrap();
        assert_eq!(client.server_key, identity.public_key());
        (client, server)
    }

    #[test]
    fn both_ends_derive_the_same_keys_and_seal_both_ways() {
        let (client, server) = run("hunter2", "hunter2");
        assert!(client.server_confirmed);
        let finish = client.finish_message(b"request");
        assert_eq!(server.open_request(&finish), Ok(b"request".to_vec()));
        let sealed = server.seal_reply(b"reply");
        assert_eq!(client.open_reply(&sealed), Some(b"reply".to_vec()));
        // The directions use different keys: a reflected message does not open.
        assert_eq!(client.open_reply(&finish[32..]), None);
        let (public, _) = run("", "");
        assert!(public.server_confirmed, "a public server runs SPAKE2 too");
    }

    #[test]
    fn a_wrong_password_fails_both_confirmations() {
        let (client, server) = run("hunter3", "hunter2");
        assert!(!client.server_confirmed);
        let finish = client.finish_message(b"request");
        assert_eq!(
            server.open_request(&finish),
            Err(FinishError::WrongConfirmation)
        );
    }

    #[test]
    fn a_replayed_client_transcript_fails_against_a_fresh_server_ephemeral() {
        let identity = ServerIdentity::random();
        let hello = ClientHello::start("hunter2");
        let recorded_hello = hello.bytes().to_vec();
        let (_, reply) = server_hello(&identity, "hunter2", &recorded_hello).unwrap();
        let recorded_finish = hello.finish(&reply).unwrap().finish_message(b"request");
        // The attacker replays both client messages; the server answers afresh.
        let (server, _) = server_hello(&identity, "hunter2", &recorded_hello).unwrap();
        assert_eq!(
            server.open_request(&recorded_finish),
            Err(FinishError::WrongConfirmation)
        );
    }

    #[test]
    fn every_tampered_byte_fails_cleanly() {
        let identity = ServerIdentity::random();
        let hello = ClientHello::start("pw");
        let hello_bytes = hello.bytes().to_vec();
        let (server, reply) = server_hello(&identity, "pw", &hello_bytes).unwrap();
        // The client's hello: a changed byte changes the transcript (or is refused).
        for i in 4..CLIENT_HELLO_BYTES {
            let client = ClientHello::start("pw");
            let mut bad = client.bytes().to_vec();
            bad[i] ^= 0x20;
            if let Ok((_, bad_reply)) = server_hello(&identity, "pw", &bad) {
                let keys = client.finish(&bad_reply);
                assert!(!keys.is_ok_and(|k| k.server_confirmed), "byte {i}");
            }
        }
        // The server's hello: the client sees no confirmation (or nothing usable).
        for i in 0..SERVER_HELLO_BYTES {
            let client = ClientHello::start("pw");
            let (_, mut bad) = server_hello(&identity, "pw", client.bytes()).unwrap();
            bad[i] ^= 0x01;
            let keys = client.finish(&bad);
            assert!(!keys.is_ok_and(|k| k.server_confirmed), "byte {i}");
        }
        // The client's finish and the server's sealed reply.
        let client = hello.finish(&reply).unwrap();
        let finish = client.finish_message(b"request");
        for i in 0..finish.len() {
            let mut bad = finish.clone();
            bad[i] ^= 0x80;
            assert!(server.open_request(&bad).is_err(), "byte {i}");
        }
        let sealed = server.seal_reply(b"token");
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x80;
            assert_eq!(client.open_reply(&bad), None, "byte {i}");
        }
        // Truncations.
        for n in 0..finish.len() {
            assert!(server.open_request(&finish[..n]).is_err());
        }
        assert!(client.open_reply(&sealed[..sealed.len() - 1]).is_none());
    }

    #[test]
    fn hellos_of_the_wrong_shape_or_version_or_low_order_keys_are_refused() {
        let identity = ServerIdentity::random();
        let hello = ClientHello::start("").bytes().to_vec();
        assert!(server_hello(&identity, "", &hello[..hello.len() - 1]).is_err());
        let mut version = hello.clone();
        version[4] = 9;
        assert_eq!(
            server_hello(&identity, "", &version).err(),
            Some(KexError::Version(9))
        );
        let mut zero = hello.clone();
        zero[5..37].fill(0);
        assert_eq!(
            server_hello(&identity, "", &zero).err(),
            Some(KexError::Malformed)
        );
        let mut spake = hello;
        spake[37] = b'X'; // not side A
        assert!(server_hello(&identity, "", &spake).is_err());
    }

    #[test]
    fn an_identity_is_made_once_and_read_back_private_to_its_owner() {
        let dir = std::env::temp_dir().join(format!("sightline-kex-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("identity.key");
        let _ = std::fs::remove_file(&path);
        let made = ServerIdentity::load_or_create(&path).unwrap();
        let again = ServerIdentity::load_or_create(&path).unwrap();
        assert_eq!(made.public_key(), again.public_key());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        }
        std::fs::write(&path, "not a key").unwrap();
        assert!(matches!(
            ServerIdentity::load_or_create(&path),
            Err(IdentityFileError::Unusable(_))
        ));
        let nowhere = dir.join("no such folder").join("identity.key");
        assert!(matches!(
            ServerIdentity::load_or_create(&nowhere),
            Err(IdentityFileError::CannotWrite(_))
        ));
        assert!(!format!("{made:?}").contains(&hex(&made.secret.to_bytes())));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
