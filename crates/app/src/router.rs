//! A hosted game's port on the home router: asked for with UPnP-IGD (SSDP discovery, then
//! SOAP `AddPortMapping` for UDP, the game, and TCP, connect tokens), renewed while the
//! game is hosted and given back when it stops, on a thread of its own so a slow or
//! silent router never holds a frame. What happened goes to the host in words.

use igd_next::{Gateway, PortMappingProtocol, SearchOptions};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Where UPnP's discovery asks: SSDP's multicast group.
pub const SSDP: SocketAddr = SocketAddr::new(
    IpAddr::V4(std::net::Ipv4Addr::new(239, 255, 255, 250)),
    1900,
);
/// How long discovery waits for a router to answer.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a mapping is asked for; renewed at half of it while the game is hosted, so
/// a game that ends without giving it back (a crash) does not leave the port open long.
const LEASE: Duration = Duration::from_secs(3600);
/// How often the mapping thread looks whether hosting stopped.
const POLL: Duration = Duration::from_millis(100);
/// What the router's table calls the mapping.
const DESCRIPTION: &str = "Sightline hosted game";

/// The port asked for on the router, while a game is hosted. Dropping it gives the port
/// back (on its thread, which the game does not wait for).
pub struct PortMapping {
    stop: Arc<AtomicBool>,
    news: Mutex<mpsc::Receiver<String>>,
}

impl PortMapping {
    /// Asks the router found by a search sent to `ssdp` (normally [`SSDP`]) to forward
    /// `port`, UDP and TCP, to this machine.
    pub fn start(port: u16, ssdp: SocketAddr) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let stopped = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("port-mapping".into())
            .spawn(move || keep_mapped(port, ssdp, &stopped, &tx))?;
        Ok(Self {
            stop,
            news: Mutex::new(rx),
        })
    }

    /// What happened since last asked, as lines for the host.
    pub fn news(&self) -> Vec<String> {
        self.news
            .lock()
            .map(|rx| rx.try_iter().collect())
            .unwrap_or_default()
    }
}

impl Drop for PortMapping {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A mapping made on a router.
struct Mapped {
    gateway: Gateway,
    port: u16,
    local: SocketAddr,
    external: IpAddr,
}

/// Maps `port`, renews it, and removes it once `stop` is set.
fn keep_mapped(port: u16, ssdp: SocketAddr, stop: &AtomicBool, news: &mpsc::Sender<String>) {
    let mapped = match map_port(port, ssdp) {
        Ok(m) => m,
        Err(e) => {
            news.send(format!(
                "router: {e}; players outside your network need port {port} forwarded to \
                 this computer (UDP and TCP), or the game hosted through a relay (cl_relay)"
            ))
            .ok();
            return;
        }
    };
    news.send(format!(
        "router: port {port} (UDP and TCP) forwarded to {} by the router at {}; players \
         elsewhere join {}:{port} (if the router itself is reachable from the internet)",
        mapped.local.ip(),
        mapped.gateway.addr.ip(),
        mapped.external
    ))
    .ok();
    let mut renewed = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(POLL);
        if renewed.elapsed() >= LEASE / 2 {
            renewed = Instant::now();
            if let Err(e) = add_both(&mapped.gateway, port, mapped.local) {
                news.send(format!("router: renewing port {port}: {e}")).ok();
            }
        }
    }
    for protocol in [PortMappingProtocol::UDP, PortMappingProtocol::TCP] {
        mapped.gateway.remove_port(protocol, mapped.port).ok();
    }
}

/// Finds the router, learns its public address and forwards `port` to this machine.
fn map_port(port: u16, ssdp: SocketAddr) -> Result<Mapped, String> {
    // The device's description and control URLs must be at the address that answered
    // the search, never loopback (igd-next's rules), so a stranger's answer cannot send us
    // elsewhere; a router asked on this machine (a test's stand-in) is trusted there.
    let mut options = SearchOptions::default();
    if ssdp.ip().is_loopback() {
        options.bind_addr = SocketAddr::new(ssdp.ip(), 0);
        options.allowed_gateway_ips = vec![ssdp.ip()];
    }
    options.broadcast_address = ssdp;
    options.timeout = Some(SEARCH_TIMEOUT);
    options.single_search_timeout = Some(SEARCH_TIMEOUT);
    let gateway =
        igd_next::search_gateway(options).map_err(|e| format!("no router answered UPnP ({e})"))?;
    let local = SocketAddr::new(local_ip_toward(gateway.addr)?, port);
    let external = gateway.get_external_ip().map_err(|e| {
        format!(
            "the router at {} gave no public address ({e})",
            gateway.addr.ip()
        )
    })?;
    add_both(&gateway, port, local)?;
    Ok(Mapped {
        gateway,
        port,
        local,
        external,
    })
}

/// Forwards `port` for UDP and TCP to `local`.
fn add_both(gateway: &Gateway, port: u16, local: SocketAddr) -> Result<(), String> {
    for protocol in [PortMappingProtocol::UDP, PortMappingProtocol::TCP] {
        gateway
            .add_port(protocol, port, local, LEASE.as_secs() as u32, DESCRIPTION)
            .map_err(|e| {
                format!(
                    "the router at {} refused to forward {protocol} port {port} ({e})",
                    gateway.addr.ip()
                )
            })?;
    }
    Ok(())
}

/// This machine's address on the network the router is on: where it must forward to.
fn local_ip_toward(router: SocketAddr) -> Result<IpAddr, String> {
    let bind = match router.ip() {
        IpAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        IpAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
    };
    let socket = UdpSocket::bind(bind).map_err(|e| format!("cannot open a socket: {e}"))?;
    // Connecting a UDP socket sends nothing: it only picks the route and its address.
    socket
        .connect(router)
        .and_then(|()| socket.local_addr())
        .map(|a| a.ip())
        .map_err(|e| format!("no route to the router at {}: {e}", router.ip()))
}

#[cfg(test)]
pub(crate) mod standin {
    //! A UPnP-IGD router for tests: answers SSDP searches, serves its device description
    //! and WANIPConnection's actions, and records every port mapping asked of it.

    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
    use std::sync::{Arc, Mutex};

    /// The stand-in router.
    pub struct Router {
        /// Where its SSDP socket listens (what discovery is sent to).
        pub ssdp: SocketAddr,
        /// Mappings in force: (protocol, external port, internal client, internal port).
        pub mappings: Arc<Mutex<Vec<(String, u16, String, u16)>>>,
    }

    const DESCRIPTION: &str = r#"<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0"><device>
<deviceType>urn:schemas-upnp-org:device:InternetGatewayDevice:1</deviceType>
<deviceList><device><deviceType>urn:schemas-upnp-org:device:WANDevice:1</deviceType>
<deviceList><device><deviceType>urn:schemas-upnp-org:device:WANConnectionDevice:1</deviceType>
<serviceList><service>
<serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType>
<serviceId>urn:upnp-org:serviceId:WANIPConn1</serviceId>
<controlURL>/ctl/IPConn</controlURL><SCPDURL>/WANIPCn.xml</SCPDURL>
</service></serviceList></device></deviceList></device></deviceList></device></root>"#;

    fn action(name: &str, args: &[&str]) -> String {
        let args: String = args
            .iter()
            .map(|a| format!("<argument><name>{a}</name><direction>in</direction></argument>"))
            .collect();
        format!("<action><name>{name}</name><argumentList>{args}</argumentList></action>")
    }

    fn scpd() -> String {
        let add = [
            "NewRemoteHost",
            "NewExternalPort",
            "NewProtocol",
            "NewInternalPort",
            "NewInternalClient",
            "NewEnabled",
            "NewPortMappingDescription",
            "NewLeaseDuration",
        ];
        format!(
            r#"<?xml version="1.0"?><scpd xmlns="urn:schemas-upnp-org:service-1-0"><actionList>{}{}{}</actionList></scpd>"#,
            action("AddPortMapping", &add),
            action(
                "DeletePortMapping",
                &["NewRemoteHost", "NewExternalPort", "NewProtocol"]
            ),
            action("GetExternalIPAddress", &[]),
        )
    }

    fn envelope(body: &str) -> String {
        format!(
            r#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>{body}</s:Body></s:Envelope>"#
        )
    }

    fn field(body: &str, name: &str) -> String {
        body.split(&format!("<{name}>"))
            .nth(1)
            .and_then(|rest| rest.split(&format!("</{name}>")).next())
            .unwrap_or_default()
            .to_string()
    }

    impl Router {
        /// Starts one; with `refuse`, it answers every AddPortMapping with error 718 (the
        /// port is mapped to someone else already).
        pub fn start(refuse: bool) -> Self {
            let ssdp = UdpSocket::bind("127.0.0.1:0").unwrap();
            let http = TcpListener::bind("127.0.0.1:0").unwrap();
            let location = format!("http://{}/rootDesc.xml", http.local_addr().unwrap());
            let mappings = Arc::new(Mutex::new(Vec::new()));
            let addr = ssdp.local_addr().unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 1500];
                while let Ok((n, from)) = ssdp.recv_from(&mut buf) {
                    if buf[..n].starts_with(b"M-SEARCH") {
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\n\
                             ST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\
                             LOCATION: {location}\r\nEXT:\r\n\r\n"
                        );
                        ssdp.send_to(answer.as_bytes(), from).ok();
                    }
                }
            });
            let recorded = Arc::clone(&mappings);
            std::thread::spawn(move || {
                for stream in http.incoming().flatten() {
                    serve(stream, &recorded, refuse);
                }
            });
            Self {
                ssdp: addr,
                mappings,
            }
        }
    }

    fn serve(stream: TcpStream, mappings: &Mutex<Vec<(String, u16, String, u16)>>, refuse: bool) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request = String::new();
        reader.read_line(&mut request).ok();
        let (mut length, mut soap_action) = (0usize, String::new());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "soapaction" => soap_action = value.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok();
        let body = String::from_utf8_lossy(&body);
        let answer = if request.starts_with("GET /rootDesc.xml") {
            DESCRIPTION.to_string()
        } else if request.starts_with("GET /WANIPCn.xml") {
            scpd()
        } else if soap_action.contains("#GetExternalIPAddress") {
            envelope(
                r#"<u:GetExternalIPAddressResponse xmlns:u="urn:schemas-upnp-org:service:WANIPConnection:1"><NewExternalIPAddress>203.0.113.7</NewExternalIPAddress></u:GetExternalIPAddressResponse>"#,
            )
        } else if soap_action.contains("#AddPortMapping") && refuse {
            envelope(
                r#"<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>718</errorCode><errorDescription>ConflictInMappingEntry</errorDescription></UPnPError></detail></s:Fault>"#,
            )
        } else if soap_action.contains("#AddPortMapping") {
            let entry = (
                field(&body, "NewProtocol"),
                field(&body, "NewExternalPort").parse().unwrap_or(0),
                field(&body, "NewInternalClient"),
                field(&body, "NewInternalPort").parse().unwrap_or(0),
            );
            let mut table = mappings.lock().unwrap();
            table.retain(|m| (&m.0, m.1) != (&entry.0, entry.1));
            table.push(entry);
            envelope(
                r#"<u:AddPortMappingResponse xmlns:u="urn:schemas-upnp-org:service:WANIPConnection:1"/>"#,
            )
        } else if soap_action.contains("#DeletePortMapping") {
            let (protocol, port) = (
                field(&body, "NewProtocol"),
                field(&body, "NewExternalPort").parse::<u16>().unwrap_or(0),
            );
            mappings
                .lock()
                .unwrap()
                .retain(|m| (&m.0, m.1) != (&protocol, port));
            envelope(
                r#"<u:DeletePortMappingResponse xmlns:u="urn:schemas-upnp-org:service:WANIPConnection:1"/>"#,
            )
        } else {
            String::new()
        };
        let status = if answer.is_empty() {
            "404 Not Found"
        } else {
            "200 OK"
        };
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn news_until(mapping: &PortMapping, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(line) = mapping.news().into_iter().find(|l| done(l)) {
                return line;
            }
            assert!(Instant::now() < deadline, "no news from the router");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_router_forwards_the_port_both_ways_until_hosting_stops() {
        let router = standin::Router::start(false);
        let mapping = PortMapping::start(27123, router.ssdp).unwrap();
        let said = news_until(&mapping, |l| l.starts_with("router:"));
        assert!(
            said.contains("forwarded") && said.contains("203.0.113.7:27123"),
            "{said}"
        );
        let table = router.mappings.lock().unwrap().clone();
        assert_eq!(
            table,
            vec![
                ("UDP".into(), 27123, "127.0.0.1".into(), 27123),
                ("TCP".into(), 27123, "127.0.0.1".into(), 27123),
            ]
        );
        drop(mapping);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !router.mappings.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the port was not given back");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_refusing_router_or_none_is_said_plainly() {
        let router = standin::Router::start(true);
        let mapping = PortMapping::start(27124, router.ssdp).unwrap();
        let said = news_until(&mapping, |l| l.starts_with("router:"));
        assert!(said.contains("refused to forward UDP port 27124"), "{said}");
        assert!(said.contains("need port 27124 forwarded"), "{said}");
        // Nothing answers on this port: the search times out.
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mapping = PortMapping::start(27125, silent.local_addr().unwrap()).unwrap();
        let said = news_until(&mapping, |l| l.starts_with("router:"));
        assert!(said.contains("no router answered UPnP"), "{said}");
    }
}
