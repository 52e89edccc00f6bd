//! A stand-in for the Agones SDK sidecar: the SDK's gRPC services (`agones.dev.sdk.SDK` and
//! the beta Counters and Lists), generated from the SDK's own proto files, served on a
//! loopback port, recording every call in the order it arrived. Tests point the server's
//! `--agones` at it (with `AGONES_SDK_GRPC_PORT`) and read back what it was told.
//!
//! It keeps a GameServer the way the sidecar does, as far as the server uses it: `Ready`,
//! `Allocate` and `Shutdown` set its state, labels get the sidecar's `agones.dev/sdk-`
//! prefix, and lists hold values up to their capacity. A test moves the state itself with
//! [`StandIn::set_state`], as a fleet allocating the server would, and every watcher hears.

// tonic's Status is large, and it is what every gRPC service method answers with; the
// helpers here answer the same way.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

// Generated from the proto files: their comments are not rustdoc.
#[allow(missing_docs, dead_code, rustdoc::all, clippy::all, clippy::pedantic)]
mod proto {
    pub mod sdk {
        tonic::include_proto!("agones.dev.sdk");
    }
    pub mod beta {
        tonic::include_proto!("agones.dev.sdk.beta");
    }
}

use proto::beta::sdk_server::{Sdk as BetaService, SdkServer as BetaServer};
use proto::sdk::game_server::status::ListStatus;
use proto::sdk::game_server::{ObjectMeta, Status as GsStatus};
use proto::sdk::sdk_server::{Sdk as SdkService, SdkServer};
use proto::sdk::{Empty, GameServer, KeyValue};

/// The prefix the sidecar puts before the keys of labels and annotations set through the
/// SDK.
pub const SDK_PREFIX: &str = "agones.dev/sdk-";

/// One call the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `GetGameServer` (the SDK calls it to learn that the sidecar is up).
    GetGameServer,
    /// `WatchGameServer` opened.
    WatchGameServer,
    /// `Ready`.
    Ready,
    /// `Allocate`.
    Allocate,
    /// `Shutdown`.
    Shutdown,
    /// One health ping on the `Health` stream.
    Health,
    /// `SetLabel(key, value)`, the key as sent (without the prefix).
    SetLabel(String, String),
    /// `SetAnnotation(key, value)`.
    SetAnnotation(String, String),
    /// `Reserve(seconds)`.
    Reserve(i64),
    /// Beta `GetCounter(name)`.
    GetCounter(String),
    /// Beta `UpdateCounter(name)`.
    UpdateCounter(String),
    /// Beta `GetList(name)`.
    GetList(String),
    /// Beta `UpdateList(name)`.
    UpdateList(String),
    /// Beta `AddListValue(list, value)`.
    AddListValue(String, String),
    /// Beta `RemoveListValue(list, value)`.
    RemoveListValue(String, String),
}

/// A call and when it arrived.
#[derive(Debug, Clone)]
pub struct Record {
    /// When the stand-in received it.
    pub at: Instant,
    /// What it was.
    pub call: Call,
}

/// What the stand-in holds, shared by its services.
struct Shared {
    calls: Mutex<Vec<Record>>,
    game_server: watch::Sender<GameServer>,
}

impl Shared {
    fn record(&self, call: Call) {
        self.calls.lock().expect("poisoned").push(Record {
            at: Instant::now(),
            call,
        });
    }

    fn set_state(&self, state: &str) {
        self.game_server
            .send_modify(|gs| status(gs).state = state.into());
    }
}

fn status(gs: &mut GameServer) -> &mut GsStatus {
    gs.status.get_or_insert_with(Default::default)
}

/// A running stand-in sidecar; dropping it stops it.
pub struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StandIn {
    /// Serves on a free loopback port, on a thread of its own, with a GameServer in state
    /// `Scheduled` holding the lists named in `lists` (name, capacity), as a GameServer
    /// spec declares them.
    pub fn start(lists: &[(&str, i64)]) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let game_server = GameServer {
            object_meta: Some(ObjectMeta {
                name: "sightline-standin".into(),
                namespace: "default".into(),
                ..Default::default()
            }),
            spec: None,
            status: Some(GsStatus {
                state: "Scheduled".into(),
                address: "127.0.0.1".into(),
                lists: lists
                    .iter()
                    .map(|(name, capacity)| {
                        let list = ListStatus {
                            capacity: *capacity,
                            values: Vec::new(),
                        };
                        (name.to_string(), list)
                    })
                    .collect(),
                ..Default::default()
            }),
        };
        let shared = Arc::new(Shared {
            calls: Mutex::new(Vec::new()),
            game_server: watch::channel(game_server).0,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let services = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("agones-standin".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("a listener inside the runtime");
                    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                    let served = tonic::transport::Server::builder()
                        .add_service(SdkServer::new(Sidecar(Arc::clone(&services))))
                        .add_service(BetaServer::new(Sidecar(services)))
                        .serve_with_incoming_shutdown(incoming, async {
                            stopped.await.ok();
                        })
                        .await;
                    if let Err(e) = served {
                        eprintln!("agones stand-in: {e}");
                    }
                });
            })?;
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The port it serves on (what `AGONES_SDK_GRPC_PORT` names).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every call so far, in the order they arrived.
    pub fn calls(&self) -> Vec<Record> {
        self.shared.calls.lock().expect("poisoned").clone()
    }

    /// Only the calls, without their times.
    pub fn call_list(&self) -> Vec<Call> {
        self.calls().into_iter().map(|r| r.call).collect()
    }

    /// Moves the GameServer to `state` (`Allocated`, say, as the fleet's allocator
    /// would); watchers hear of it.
    pub fn set_state(&self, state: &str) {
        self.shared.set_state(state);
    }

    /// Gives the GameServer a port named `name` on the node (what the sidecar reports
    /// once Agones has allocated the host port).
    pub fn set_port(&self, name: &str, port: u16) {
        self.shared.game_server.send_modify(|gs| {
            let ports = &mut status(gs).ports;
            ports.retain(|p| p.name != name);
            ports.push(proto::sdk::game_server::status::Port {
                name: name.into(),
                port: port.into(),
            });
        });
    }

    /// The GameServer's state now.
    pub fn state(&self) -> String {
        self.shared
            .game_server
            .borrow()
            .status
            .as_ref()
            .map(|s| s.state.clone())
            .unwrap_or_default()
    }

    /// The GameServer's labels now, prefixed as the sidecar keeps them.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let gs = self.shared.game_server.borrow();
        let meta = gs.object_meta.as_ref();
        meta.map(|m| m.labels.clone().into_iter().collect())
            .unwrap_or_default()
    }

    /// The values of list `name` now.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        let gs = self.shared.game_server.borrow();
        let lists = &gs.status.as_ref()?.lists;
        lists.get(name).map(|l| l.values.clone())
    }

    /// Waits up to `limit` for the calls to satisfy `done`, checking as they arrive;
    /// the calls then, or `None` past the limit.
    pub fn wait_for(
        &self,
        limit: Duration,
        mut done: impl FnMut(&[Call]) -> bool,
    ) -> Option<Vec<Call>> {
        let start = Instant::now();
        loop {
            let calls = self.call_list();
            if done(&calls) {
                return Some(calls);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(thread) = self.thread.take() {
            thread.join().ok();
        }
    }
}

/// The services, over the shared state.
struct Sidecar(Arc<Shared>);

type GameServerStream = Pin<Box<dyn Stream<Item = Result<GameServer, Status>> + Send>>;

#[tonic::async_trait]
impl SdkService for Sidecar {
    async fn ready(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        self.0.record(Call::Ready);
        self.0.set_state("Ready");
        Ok(Response::new(Empty {}))
    }

    async fn allocate(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        self.0.record(Call::Allocate);
        self.0.set_state("Allocated");
        Ok(Response::new(Empty {}))
    }

    async fn shutdown(&self, _: Request<Empty>) -> Result<Response<Empty>, Status> {
        self.0.record(Call::Shutdown);
        self.0.set_state("Shutdown");
        Ok(Response::new(Empty {}))
    }

    async fn health(&self, request: Request<Streaming<Empty>>) -> Result<Response<Empty>, Status> {
        let mut pings = request.into_inner();
        // Each message is a ping; the stream ends when the client goes away.
        while let Some(ping) = pings.next().await {
            ping?;
            self.0.record(Call::Health);
        }
        Ok(Response::new(Empty {}))
    }

    async fn get_game_server(&self, _: Request<Empty>) -> Result<Response<GameServer>, Status> {
        self.0.record(Call::GetGameServer);
        Ok(Response::new(self.0.game_server.borrow().clone()))
    }

    type WatchGameServerStream = GameServerStream;

    async fn watch_game_server(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<Self::WatchGameServerStream>, Status> {
        self.0.record(Call::WatchGameServer);
        // The current GameServer first, then each change, as the sidecar sends them.
        let changes = tokio_stream::wrappers::WatchStream::new(self.0.game_server.subscribe());
        Ok(Response::new(Box::pin(changes.map(Ok))))
    }

    async fn set_label(&self, request: Request<KeyValue>) -> Result<Response<Empty>, Status> {
        let KeyValue { key, value } = request.into_inner();
        self.0.record(Call::SetLabel(key.clone(), value.clone()));
        self.0.game_server.send_modify(|gs| {
            let meta = gs.object_meta.get_or_insert_with(Default::default);
            meta.labels.insert(format!("{SDK_PREFIX}{key}"), value);
        });
        Ok(Response::new(Empty {}))
    }

    async fn set_annotation(&self, request: Request<KeyValue>) -> Result<Response<Empty>, Status> {
        let KeyValue { key, value } = request.into_inner();
        self.0
            .record(Call::SetAnnotation(key.clone(), value.clone()));
        self.0.game_server.send_modify(|gs| {
            let meta = gs.object_meta.get_or_insert_with(Default::default);
            meta.annotations.insert(format!("{SDK_PREFIX}{key}"), value);
        });
        Ok(Response::new(Empty {}))
    }

    async fn reserve(
        &self,
        request: Request<proto::sdk::Duration>,
    ) -> Result<Response<Empty>, Status> {
        self.0.record(Call::Reserve(request.into_inner().seconds));
        self.0.set_state("Reserved");
        Ok(Response::new(Empty {}))
    }
}

use proto::beta::{
    AddListValueRequest, Counter, GetCounterRequest, GetListRequest, List, RemoveListValueRequest,
    UpdateCounterRequest, UpdateListRequest,
};

impl Sidecar {
    /// Applies `change` to list `name`, answering as the sidecar does: `NOT_FOUND` for a
    /// list the GameServer does not declare.
    fn with_list(
        &self,
        name: &str,
        change: impl FnOnce(&mut ListStatus) -> Result<(), Status>,
    ) -> Result<Response<List>, Status> {
        let mut result = Err(Status::not_found(format!("no list {name}")));
        self.0.game_server.send_if_modified(|gs| {
            let Some(list) = status(gs).lists.get_mut(name) else {
                return false;
            };
            result = change(list).map(|()| List {
                name: name.into(),
                capacity: list.capacity,
                values: list.values.clone(),
            });
            result.is_ok()
        });
        result.map(Response::new)
    }
}

#[tonic::async_trait]
impl BetaService for Sidecar {
    async fn get_counter(
        &self,
        request: Request<GetCounterRequest>,
    ) -> Result<Response<Counter>, Status> {
        let name = request.into_inner().name;
        self.0.record(Call::GetCounter(name.clone()));
        // The server declares no counters; neither does this GameServer.
        Err(Status::not_found(format!("no counter {name}")))
    }

    async fn update_counter(
        &self,
        request: Request<UpdateCounterRequest>,
    ) -> Result<Response<Counter>, Status> {
        let name = request
            .into_inner()
            .counter_update_request
            .map(|c| c.name)
            .unwrap_or_default();
        self.0.record(Call::UpdateCounter(name.clone()));
        Err(Status::not_found(format!("no counter {name}")))
    }

    async fn get_list(&self, request: Request<GetListRequest>) -> Result<Response<List>, Status> {
        let name = request.into_inner().name;
        self.0.record(Call::GetList(name.clone()));
        self.with_list(&name, |_| Ok(()))
    }

    async fn update_list(
        &self,
        request: Request<UpdateListRequest>,
    ) -> Result<Response<List>, Status> {
        let request = request.into_inner();
        let list = request.list.unwrap_or_default();
        self.0.record(Call::UpdateList(list.name.clone()));
        let paths = request.update_mask.map(|m| m.paths).unwrap_or_default();
        self.with_list(&list.name.clone(), |held| {
            for path in &paths {
                match path.as_str() {
                    "capacity" => held.capacity = list.capacity,
                    "values" => held.values = list.values.clone(),
                    other => return Err(Status::invalid_argument(format!("no field {other}"))),
                }
            }
            Ok(())
        })
    }

    async fn add_list_value(
        &self,
        request: Request<AddListValueRequest>,
    ) -> Result<Response<List>, Status> {
        let AddListValueRequest { name, value } = request.into_inner();
        self.0
            .record(Call::AddListValue(name.clone(), value.clone()));
        self.with_list(&name, |list| {
            if list.values.contains(&value) {
                Err(Status::already_exists(value))
            } else if list.values.len() as i64 >= list.capacity {
                Err(Status::out_of_range(format!("{name} is full")))
            } else {
                list.values.push(value);
                Ok(())
            }
        })
    }

    async fn remove_list_value(
        &self,
        request: Request<RemoveListValueRequest>,
    ) -> Result<Response<List>, Status> {
        let RemoveListValueRequest { name, value } = request.into_inner();
        self.0
            .record(Call::RemoveListValue(name.clone(), value.clone()));
        self.with_list(&name, |list| {
            let before = list.values.len();
            list.values.retain(|v| *v != value);
            if list.values.len() == before {
                Err(Status::not_found(value))
            } else {
                Ok(())
            }
        })
    }
}
