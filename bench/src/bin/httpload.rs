//! The Streamable HTTP load driver: calls one `echo` tool over HTTP/1.1 keep-alive
//! connections and reports requests/s and latency percentiles, for several servers in one run.
//!
//! ```text
//! httpload --server 'mcpwire=target/release/mcpwire_echo --http {port}' \
//!          --server 'rmcp=target/release/rmcp_http_echo {port}' \
//!          --clients 1,50 --modes stateful,stateless -n 20000 --runs 3
//! ```
//! Each server command is started with a free loopback port in place of `{port}`. Modes:
//! `stateful` opens one 2025-11-25 session per client (`initialize`, `initialized`, then
//! `tools/call` with `Mcp-Session-Id`); `stateless` sends self-contained 2026-07-28 requests
//! (`_meta` envelope, `Mcp-Method`/`Mcp-Name` headers). Every client has its own connection
//! (TCP_NODELAY) and one request in flight. Every answer is checked (the echoed text);
//! failures are counted and reported. Medians over `--runs` are printed, with each server's
//! requests/s and p99 relative to the first server's. `--header 'NAME: VALUE'` adds a header
//! to every request (a bearer token for an authenticated server); `--interleave` starts
//! every server first and alternates them run by run (A B A B …), so a machine whose load
//! changes during the run affects all of them alike; the load average is printed per
//! configuration. `--tool NAME` calls another name for the echo tool (a gateway's prefixed
//! `echo_echo`).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(about = "Streamable HTTP load driver (mcpwire vs rmcp)")]
struct Args {
    /// `NAME=COMMAND` with `{port}` where the port goes; repeat for each server.
    #[arg(long = "server", required = true)]
    servers: Vec<String>,
    /// Concurrent clients (connections), comma-separated.
    #[arg(long, default_value = "1,50", value_delimiter = ',')]
    clients: Vec<usize>,
    /// `stateful` and/or `stateless`, comma-separated.
    #[arg(long, default_value = "stateful,stateless", value_delimiter = ',')]
    modes: Vec<String>,
    /// Requests per run (over all clients).
    #[arg(short = 'n', long, default_value_t = 20_000)]
    requests: usize,
    /// Runs per configuration (medians are reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// `NAME: VALUE` sent with every request (repeatable), e.g. `authorization: Bearer …`.
    #[arg(long = "header", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Start every server first and alternate them run by run.
    #[arg(long)]
    interleave: bool,
    /// The tool called (a gateway exposing the echo tool prefixed: `echo_echo`).
    #[arg(long, default_value = "echo")]
    tool: String,
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected NAME: VALUE"))?;
    let (name, value) = (name.trim(), value.trim());
    hyper::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("`{name}`: {e}"))?;
    hyper::header::HeaderValue::from_str(value).map_err(|e| format!("`{name}` value: {e}"))?;
    Ok((name.to_owned(), value.to_owned()))
}

/// The 1-minute load average (`/proc/loadavg`), if readable.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

struct Server {
    name: String,
    addr: SocketAddr,
    child: Child,
}

impl Drop for Server {
    /// Stops the server with SIGTERM first (a server under a profiler such as callgrind
    /// writes its figures on the way out), then kills it if it is still there after 30 s.
    fn drop(&mut self) {
        let term = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        if term.is_ok_and(|s| s.success()) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn start(spec: &str) -> Result<Server> {
    let (name, cmd) = spec
        .split_once('=')
        .context("--server takes NAME=COMMAND")?;
    let port = free_port()?;
    let cmd = cmd.replace("{port}", &port.to_string());
    let words = shlex::split(&cmd).context("cannot split the server command")?;
    let (prog, rest) = words.split_first().context("empty server command")?;
    let child = Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {cmd}"))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            bail!("{name} did not listen on {addr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Server {
        name: name.to_owned(),
        addr,
        child,
    })
}

/// One client: a connection, and a session in stateful mode.
struct Client {
    send: SendRequest<Full<Bytes>>,
    host: String,
    headers: Arc<Vec<(String, String)>>,
    session: Option<String>,
    stateless: bool,
    next_id: u64,
}

impl Client {
    async fn connect(
        addr: SocketAddr,
        stateless: bool,
        headers: Arc<Vec<(String, String)>>,
    ) -> Result<Client> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(conn);
        let mut c = Client {
            send,
            host: addr.to_string(),
            headers,
            session: None,
            stateless,
            next_id: 0,
        };
        if !stateless {
            let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "httpload", "version": "1"}});
            let (sid, _) = c.post("initialize", init, None).await?;
            c.session = Some(sid.context("no Mcp-Session-Id from initialize")?);
            c.notify("notifications/initialized").await?;
        }
        Ok(c)
    }

    fn request(
        &self,
        method: &str,
        name: Option<&str>,
        body: &Value,
    ) -> Result<Request<Full<Bytes>>> {
        let mut b = Request::post("/mcp")
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in self.headers.iter() {
            b = b.header(name, value);
        }
        if self.stateless {
            b = b
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method);
            if let Some(n) = name {
                b = b.header("mcp-name", n);
            }
        } else if let Some(sid) = &self.session {
            b = b
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", "2025-11-25");
        }
        Ok(b.body(Full::new(Bytes::from(serde_json::to_vec(body)?)))?)
    }

    async fn notify(&mut self, method: &str) -> Result<()> {
        let req = self.request(method, None, &json!({"jsonrpc": "2.0", "method": method}))?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status();
        resp.into_body().collect().await?;
        if !status.is_success() {
            bail!("{method}: HTTP {status}");
        }
        Ok(())
    }

    /// Sends a request; returns the session id header (if any) and the result.
    async fn post(
        &mut self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        self.next_id += 1;
        let id = self.next_id;
        if self.stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "httpload", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let req = self.request(method, name, &body)?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status();
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = resp.into_body().collect().await?.to_bytes();
        if status != StatusCode::OK {
            bail!(
                "{method}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        let msg = if sse {
            find_response(&bytes, id).context("no response in the SSE stream")?
        } else {
            serde_json::from_slice(&bytes)?
        };
        match msg.get("result") {
            Some(r) => Ok((sid, r.clone())),
            None => bail!("{method}: {msg}"),
        }
    }
}

/// The JSON-RPC response with `id` among an SSE body's events.
fn find_response(body: &[u8], id: u64) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").and_then(Value::as_u64) == Some(id))
}

struct RunResult {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    errors: usize,
}

async fn run_once(
    addr: SocketAddr,
    stateless: bool,
    clients: usize,
    total: usize,
    headers: Arc<Vec<(String, String)>>,
    tool: Arc<str>,
) -> Result<RunResult> {
    let per = total.div_ceil(clients);
    let warm = (per / 10).max(5);
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(Client::connect(addr, stateless, headers.clone()).await?);
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for (i, mut c) in conns.into_iter().enumerate() {
        let barrier = barrier.clone();
        let tool = tool.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            let mut errors = 0usize;
            for k in 0..warm {
                let text = format!("w{i}-{k}");
                let _ = c
                    .post(
                        "tools/call",
                        json!({"name": &*tool, "arguments": {"text": text}}),
                        Some(&*tool),
                    )
                    .await;
            }
            barrier.wait().await;
            for k in 0..per {
                let text = format!("c{i}-{k}");
                let t0 = Instant::now();
                let r = c
                    .post(
                        "tools/call",
                        json!({"name": &*tool, "arguments": {"text": &text}}),
                        Some(&*tool),
                    )
                    .await;
                lat.push(t0.elapsed());
                let ok = r.is_ok_and(|(_, v)| v["content"][0]["text"] == text.as_str());
                if !ok {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    barrier.wait().await;
    let t0 = Instant::now();
    let mut all = Vec::with_capacity(per * clients);
    let mut errors = 0;
    for t in tasks {
        let (lat, e) = t.await?;
        all.extend(lat);
        errors += e;
    }
    let elapsed = t0.elapsed();
    all.sort_unstable();
    let pct = |p: f64| {
        let i = ((all.len() as f64 - 1.0) * p).round() as usize;
        all[i.min(all.len() - 1)].as_secs_f64() * 1e6
    };
    Ok(RunResult {
        rps: all.len() as f64 / elapsed.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        errors,
    })
}

/// One server's runs: req/s, p50 and p99 of each, and the failed requests.
#[derive(Clone, Default)]
struct Measured {
    rps: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    errors: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let args = Args::parse();
    let headers = Arc::new(args.headers.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "{:<10} {:<9} {:>7} {:>10} {:>9} {:>9} {:>6} {:>8} {:>8}",
        "server", "mode", "clients", "req/s", "p50 µs", "p99 µs", "errors", "rps×", "p99×"
    );
    for mode in &args.modes {
        let stateless = match mode.as_str() {
            "stateful" => false,
            "stateless" => true,
            other => bail!("unknown mode {other}"),
        };
        for &clients in &args.clients {
            let load_before = load_average();
            let mut results: Vec<Measured> = vec![Measured::default(); args.servers.len()];
            let mut names = Vec::new();
            let mut measure = |i: usize, server: &Server| -> Result<()> {
                let r = rt.block_on(run_once(
                    server.addr,
                    stateless,
                    clients,
                    args.requests,
                    headers.clone(),
                    Arc::from(args.tool.as_str()),
                ))?;
                let slot = &mut results[i];
                slot.rps.push(r.rps);
                slot.p50.push(r.p50_us);
                slot.p99.push(r.p99_us);
                slot.errors += r.errors;
                Ok(())
            };
            if args.interleave {
                let servers = args
                    .servers
                    .iter()
                    .map(|s| start(s))
                    .collect::<Result<Vec<_>>>()?;
                names.extend(servers.iter().map(|s| s.name.clone()));
                for _ in 0..args.runs {
                    for (i, server) in servers.iter().enumerate() {
                        measure(i, server)?;
                    }
                }
            } else {
                for (i, spec) in args.servers.iter().enumerate() {
                    let server = start(spec)?;
                    names.push(server.name.clone());
                    for _ in 0..args.runs {
                        measure(i, &server)?;
                    }
                }
            }
            let mut base: Option<(f64, f64)> = None;
            for (name, m) in names.iter().zip(results) {
                let Measured {
                    rps,
                    p50,
                    p99,
                    errors,
                } = m;
                let (rps, p50, p99) = (median(rps), median(p50), median(p99));
                let (rx, px) = match base {
                    None => {
                        base = Some((rps, p99));
                        (1.0, 1.0)
                    }
                    Some((brps, bp99)) => (brps / rps, p99 / bp99),
                };
                println!(
                    "{:<10} {:<9} {:>7} {:>10.0} {:>9.1} {:>9.1} {:>6} {:>8.2} {:>8.2}",
                    name, mode, clients, rps, p50, p99, errors, rx, px
                );
            }
            println!(
                "load average (1 min): {load_before} before, {} after",
                load_average()
            );
        }
    }
    println!("rps× = first server's req/s ÷ this server's; p99× = this p99 ÷ first's.");
    Ok(())
}
