//! A server's duties toward its relay, beside what the socket does (which sorts the
//! relay's datagrams and routes replies, [`sightline_relay::HostLink`]): sending what the
//! link has due, attaching to the token streams the relay holds (each on a short thread,
//! as a connect may take a round trip), and passing on what the link has to say.

use super::socket::ConditionedSocket;
use bevy::log::info;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Attaches under way at once; more streams wait at the relay until it drops them.
const MAX_ATTACHING: usize = 8;
/// How long an attach may take to connect.
const ATTACH_CONNECT: Duration = Duration::from_secs(3);

/// What a server keeps for its relay.
pub(super) struct RelayDuties {
    /// Where the link's news goes (besides the log): the host's own game, if any.
    news: Option<Mutex<mpsc::Sender<String>>>,
    attaching: Arc<AtomicUsize>,
    attached: Arc<Mutex<Vec<(TcpStream, SocketAddr)>>>,
    /// Streams not attached (too many at once, or the connect failed).
    pub(super) attach_failures: Arc<AtomicUsize>,
}

impl RelayDuties {
    pub(super) fn new(news: Option<mpsc::Sender<String>>) -> Self {
        Self {
            news: news.map(Mutex::new),
            attaching: Arc::new(AtomicUsize::new(0)),
            attached: Arc::new(Mutex::new(Vec::new())),
            attach_failures: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Sends what the link has due, starts attaching to the streams it was offered, and
    /// passes its news on. Returns the streams attached since the last call, each with
    /// the player's address.
    pub(super) fn tend(&mut self, socket: &mut ConditionedSocket) -> Vec<(TcpStream, SocketAddr)> {
        let Some(link) = socket.relay_mut() else {
            return Vec::new();
        };
        let relay = link.relay();
        let due = link.due(Instant::now());
        let opens: Vec<_> = link
            .take_opens()
            .into_iter()
            .filter_map(|(n, from)| Some((link.attach_header(n)?, from)))
            .collect();
        for news in link.take_news() {
            info!("{news}");
            if let Some(sender) = &self.news {
                let _ = sender.lock().map(|s| s.send(news.to_string()));
            }
        }
        for message in due {
            socket.send_now(&message, relay);
        }
        for (header, from) in opens {
            self.attach(relay, header, from);
        }
        self.attached
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }

    /// Connects to the relay and writes the attach header on a thread of its own.
    fn attach(
        &self,
        relay: SocketAddr,
        header: [u8; sightline_relay::ATTACH_BYTES],
        from: SocketAddr,
    ) {
        if self.attaching.fetch_add(1, Ordering::Relaxed) >= MAX_ATTACHING {
            self.attaching.fetch_sub(1, Ordering::Relaxed);
            self.attach_failures.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let (attaching, attached, failures) = (
            self.attaching.clone(),
            self.attached.clone(),
            self.attach_failures.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("sightline-relay-attach".into())
            .spawn(move || {
                let joined =
                    TcpStream::connect_timeout(&relay, ATTACH_CONNECT).and_then(|mut s| {
                        s.set_write_timeout(Some(ATTACH_CONNECT))?;
                        s.write_all(&header)?;
                        Ok(s)
                    });
                match joined {
                    Ok(stream) => {
                        if let Ok(mut a) = attached.lock() {
                            a.push((stream, from));
                        }
                    }
                    Err(_) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                attaching.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            self.attaching.fetch_sub(1, Ordering::Relaxed);
            self.attach_failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Frees the game on the relay at once (the relay would close it after its idle
    /// time anyway).
    pub(super) fn close(socket: &mut ConditionedSocket) {
        let Some(link) = socket.relay_mut() else {
            return;
        };
        let relay = link.relay();
        if let Some(goodbye) = link.close() {
            socket.send_now(&goodbye, relay);
        }
    }
}
