//! End-to-end load on one server in one run: JSON-RPC lines and proto-mcp frames over stdio,
//! and JSON-RPC in MCPB frames over TCP (`mcpwire_echo --mcpb 0`).
//!
//! Spawns `--server` (default: `mcpwire_echo` next to this binary) once per (run, wire, K),
//! performs the wire's handshake, warms up, then issues `-n` calls of the `echo` tool keeping
//! exactly K in flight. JSON-RPC: `initialize` + `notifications/initialized`, NDJSON
//! `tools/call`. proto-mcp: `InitializeRequest`, `ListToolsRequest{include_schemas}` (the
//! arguments are built from the listed `FileDescriptorSet`, as a real client would), then
//! `CallToolRequest{Any}` frames. MCPB: version negotiation, token authentication, then the
//! JSON-RPC handshake and calls, each in a 12-byte-header frame. Every response is decoded and
//! checked (a success, not `is_error`). Runs of the wires are interleaved; the table shows
//! medians across runs.
//!
//! CPU per call is reported for the server process (`server µs`) and for its child
//! processes together (`kids µs`: a gateway's stdio upstreams), from `/proc` before and
//! after the measured calls.
//!
//! `--connections N` drives MCPB over N connections at once (K in flight on each; `-n` calls
//! in total, split between them) against one server; `--mcpb-args` are the arguments that
//! make the server listen (`mcpwire_echo`: `--mcpb 0`; `mcpwire demo`: `--transport mcpb
//! --port 0 --mcpb-token bench`). The wire `mcpbs` is MCPB over TLS: the server gets
//! `--mcpbs-args` (e.g. `--mcpb 0 --tls-cert c.pem --tls-key k.pem`) and the client trusts
//! `--tls-ca`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use bytes::{Buf, BytesMut};
use clap::Parser;
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Value as PValue};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, Command};

/// proto-mcp vs JSON-RPC calls/s over stdio.
#[derive(Parser, Debug)]
#[command(name = "proto_loadgen")]
struct Args {
    /// Command line of the stdio server (needs an `echo` tool taking `{text}`).
    #[arg(long)]
    server: Option<String>,
    /// Numbers of requests kept in flight, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    inflight: Vec<usize>,
    /// Warm-up calls per run.
    #[arg(long, default_value_t = 1000)]
    warmup: usize,
    /// Measured calls per run.
    #[arg(short = 'n', long = "calls", default_value_t = 20_000)]
    calls: usize,
    /// Runs per (wire, K); medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The text sent to `echo`.
    #[arg(long, default_value = "hello world")]
    text: String,
    /// Wires to compare, comma-separated (the first is the ratios' baseline).
    #[arg(long, value_delimiter = ',', default_value = "json,proto,mcpb")]
    wires: Vec<String>,
    /// MCPB connections driven at once (each with K in flight).
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Arguments added to the server command line for MCPB (it must print
    /// `listening on [mcpb://]ADDR` on stderr and accept the token `bench`).
    #[arg(long, default_value = "--mcpb 0", allow_hyphen_values = true)]
    mcpb_args: String,
    /// Arguments added to the server command line for MCPB over TLS (`mcpbs`).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    mcpbs_args: String,
    /// `mcpbs`: the CA (PEM) the server's certificate is signed by; its name must be
    /// `localhost`.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Json,
    Proto,
    Mcpb,
    /// MCPB over TLS.
    Mcpbs,
}

impl Wire {
    /// Whether it is MCPB over TCP (with or without TLS).
    fn is_mcpb(self) -> bool {
        matches!(self, Wire::Mcpb | Wire::Mcpbs)
    }
}

/// An MCPB frame header for a Request frame of `len` payload bytes.
fn mcpb_header(len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(b"MCPB");
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(len as u32).to_be_bytes());
}

/// A JSON-RPC answer's id if it is a successful call result, else the answer as text.
fn json_outcome(bytes: &[u8]) -> Result<Result<u64, String>> {
    let v: serde_json::Value = serde_json::from_slice(bytes)?;
    let ok = v.get("result").is_some()
        && v["result"].get("isError") != Some(&serde_json::Value::Bool(true));
    Ok(match (v["id"].as_u64(), ok) {
        (Some(id), true) => Ok(id),
        _ => Err(String::from_utf8_lossy(bytes).into_owned()),
    })
}

/// A server process: its stdio pipes (stdio wires) or the address it listens on (MCPB).
struct Server {
    child: Child,
    addr: Option<String>,
}

impl Server {
    async fn start(cmd: &str, wire: Wire, mcpb_args: &str) -> Result<Server> {
        // `mcpb_args`: the listening arguments of this wire (MCPB or MCPBS).
        let argv = shlex::split(cmd).ok_or_else(|| anyhow!("bad command line {cmd:?}"))?;
        let (prog, rest) = argv.split_first().ok_or_else(|| anyhow!("empty command"))?;
        let mut command = Command::new(prog);
        command.args(rest).kill_on_drop(true);
        if wire.is_mcpb() {
            let extra =
                shlex::split(mcpb_args).ok_or_else(|| anyhow!("bad --mcpb-args {mcpb_args:?}"))?;
            command
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
        } else {
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
        }
        let mut child = command.spawn().with_context(|| format!("starting {cmd}"))?;
        let mut addr = None;
        if wire.is_mcpb() {
            let stderr = child.stderr.take().ok_or_else(|| anyhow!("no stderr"))?;
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while addr.is_none() {
                let line = lines
                    .next_line()
                    .await?
                    .ok_or_else(|| anyhow!("the server exited before listening"))?;
                if let Some((_, a)) = line.split_once("listening on ") {
                    let a = a.trim();
                    let a = a
                        .trim_start_matches("mcpbs://")
                        .trim_start_matches("mcpb://");
                    addr = Some(a.to_owned());
                }
            }
            // Keep reading, so the server never blocks on a full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        }
        Ok(Server { child, addr })
    }

    async fn stop(mut self) {
        if self.addr.is_some() {
            // A TCP server outlives its clients.
            let _ = self.child.kill().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

struct Conn {
    stdin: Box<dyn AsyncWrite + Unpin + Send>,
    stdout: Box<dyn AsyncRead + Unpin + Send>,
    buf: BytesMut,
    wire: Wire,
    /// The encoded request without its id: JSON (prefix, suffix) or the proto payload.
    template: (Vec<u8>, Vec<u8>),
}

impl Conn {
    /// A connection to `server` (its stdio, taken once; or a new TCP connection), after the
    /// wire's handshake.
    async fn open(
        server: &mut Server,
        wire: Wire,
        text: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Conn> {
        let (stdin, stdout): (
            Box<dyn AsyncWrite + Unpin + Send>,
            Box<dyn AsyncRead + Unpin + Send>,
        ) = if let Some(addr) = &server.addr {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            match tls {
                Some(config) if wire == Wire::Mcpbs => {
                    let name = rustls::pki_types::ServerName::try_from("localhost")?;
                    let stream = tokio_rustls::TlsConnector::from(config.clone())
                        .connect(name, tcp)
                        .await?;
                    let (r, w) = tokio::io::split(stream);
                    (Box::new(w), Box::new(r))
                }
                _ => {
                    let (r, w) = tcp.into_split();
                    (Box::new(w), Box::new(r))
                }
            }
        } else {
            let stdin = server
                .child
                .stdin
                .take()
                .ok_or_else(|| anyhow!("no stdin"))?;
            let stdout = server
                .child
                .stdout
                .take()
                .ok_or_else(|| anyhow!("no stdout"))?;
            (Box::new(stdin), Box::new(stdout))
        };
        let mut c = Conn {
            stdin,
            stdout,
            buf: BytesMut::with_capacity(256 * 1024),
            wire,
            template: (Vec::new(), Vec::new()),
        };
        match wire {
            Wire::Json | Wire::Mcpb | Wire::Mcpbs => c.json_handshake(text).await?,
            Wire::Proto => c.proto_handshake(text).await?,
        }
        Ok(c)
    }

    async fn json_handshake(&mut self, text: &str) -> Result<()> {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proto_loadgen","version":"1"}}}"#;
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        if self.wire.is_mcpb() {
            let mut out = Vec::new();
            let version = br#"{"min_version":1,"max_version":1,"preferred_version":1,"supported_versions":[1]}"#;
            out.extend_from_slice(b"MCPB\0\x01\0\x06");
            out.extend_from_slice(&(version.len() as u32).to_be_bytes());
            out.extend_from_slice(version);
            let auth =
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"token":"bench"}}"#;
            for m in [&auth[..], init.as_bytes(), initialized.as_bytes()] {
                mcpb_header(m.len(), &mut out);
                out.extend_from_slice(m);
            }
            self.stdin.write_all(&out).await?;
            // The version ack, then the two initialize answers.
            self.read_mcpb().await?;
            for _ in 0..2 {
                let v: serde_json::Value = serde_json::from_slice(&self.read_mcpb().await?.1)?;
                if v.get("result").is_none() {
                    bail!("MCPB handshake failed: {v}");
                }
            }
        } else {
            self.stdin
                .write_all(format!("{init}\n{initialized}\n").as_bytes())
                .await?;
            self.next_id()
                .await?
                .map_err(|e| anyhow!("initialize failed: {e}"))?;
        }
        let args = serde_json::to_string(&serde_json::json!({ "text": text }))?;
        self.template = (
            br#"{"jsonrpc":"2.0","id":"#.to_vec(),
            format!(r#","method":"tools/call","params":{{"name":"echo","arguments":{args}}}}}"#)
                .into_bytes(),
        );
        if self.wire == Wire::Json {
            self.template.1.push(b'\n');
        }
        Ok(())
    }

    async fn proto_handshake(&mut self, text: &str) -> Result<()> {
        let init = McpMessage::new(
            u64::MAX,
            Payload::InitializeRequest(pb::InitializeRequest {
                protocol_version: "1.0.0".into(),
                ..Default::default()
            }),
        );
        let list = McpMessage::new(
            u64::MAX - 1,
            Payload::ListToolsRequest(pb::ListToolsRequest {
                include_schemas: true,
                ..Default::default()
            }),
        );
        let mut out = Vec::new();
        for m in [init, list] {
            out.extend_from_slice(&(m.encoded_len() as u32).to_be_bytes());
            m.encode(&mut out)?;
        }
        self.stdin.write_all(&out).await?;
        let _ = self.read_proto().await?;
        let listed = self.read_proto().await?;
        let Some(Payload::ListToolsResponse(l)) = listed.payload else {
            bail!("no tool list: {listed:?}");
        };
        let echo = l
            .tools
            .iter()
            .find(|t| t.name == "echo")
            .ok_or_else(|| anyhow!("no echo tool"))?;
        let Some(pb::tool::SchemaSource::InlineSchema(fds)) = &echo.schema_source else {
            bail!("echo has no inline schema: {echo:?}");
        };
        let mut pool = DescriptorPool::global();
        pool.decode_file_descriptor_set(fds.as_bytes())?;
        let input_name = echo.metadata.get("input_type").cloned().unwrap_or_default();
        let input = pool
            .get_message_by_name(&input_name)
            .ok_or_else(|| anyhow!("no message {input_name}"))?;
        let mut args = DynamicMessage::new(input);
        args.try_set_field_by_name("text", PValue::String(text.to_owned()))?;
        let payload = McpMessage {
            id: 0,
            payload: Some(Payload::CallToolRequest(pb::CallToolRequest {
                name: "echo".into(),
                arguments: Some(prost_types::Any {
                    type_url: format!("type.googleapis.com/{input_name}"),
                    value: args.encode_to_vec(),
                }),
                metadata: Default::default(),
            })),
        };
        self.template = (payload.encode_to_vec(), Vec::new());
        Ok(())
    }

    fn push_request(&self, id: u64, out: &mut Vec<u8>) {
        match self.wire {
            Wire::Json => {
                out.extend_from_slice(&self.template.0);
                out.extend_from_slice(id.to_string().as_bytes());
                out.extend_from_slice(&self.template.1);
            }
            Wire::Mcpb | Wire::Mcpbs => {
                let id = id.to_string();
                let len = self.template.0.len() + id.len() + self.template.1.len();
                mcpb_header(len, out);
                out.extend_from_slice(&self.template.0);
                out.extend_from_slice(id.as_bytes());
                out.extend_from_slice(&self.template.1);
            }
            Wire::Proto => {
                let mut head = vec![0x08];
                prost::encoding::encode_varint(id, &mut head);
                let len = head.len() + self.template.0.len();
                out.extend_from_slice(&(len as u32).to_be_bytes());
                out.extend_from_slice(&head);
                out.extend_from_slice(&self.template.0);
            }
        }
    }

    async fn fill(&mut self) -> Result<()> {
        if self.stdout.read_buf(&mut self.buf).await? == 0 {
            bail!("server closed stdout");
        }
        Ok(())
    }

    async fn read_proto(&mut self) -> Result<McpMessage> {
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                if self.buf.len() >= 4 + n {
                    self.buf.advance(4);
                    let body = self.buf.split_to(n);
                    return Ok(McpMessage::decode(&body[..])?);
                }
            }
            self.fill().await?;
        }
    }

    /// The next MCPB frame: its type and payload.
    async fn read_mcpb(&mut self) -> Result<(u16, BytesMut)> {
        loop {
            if self.buf.len() >= 12 {
                let n = u32::from_be_bytes([self.buf[8], self.buf[9], self.buf[10], self.buf[11]])
                    as usize;
                if self.buf.len() >= 12 + n {
                    let kind = u16::from_be_bytes([self.buf[6], self.buf[7]]);
                    self.buf.advance(12);
                    return Ok((kind, self.buf.split_to(n)));
                }
            }
            self.fill().await?;
        }
    }

    /// The id of the next response, or why it is not a successful call result.
    async fn next_id(&mut self) -> Result<Result<u64, String>> {
        match self.wire {
            Wire::Mcpb | Wire::Mcpbs => loop {
                let (kind, body) = self.read_mcpb().await?;
                if kind != 2 {
                    continue; // a health ping or control frame
                }
                return json_outcome(&body);
            },
            Wire::Json => loop {
                if let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
                    let line = self.buf.split_to(nl + 1);
                    return json_outcome(&line);
                }
                self.fill().await?;
            },
            Wire::Proto => {
                let m = self.read_proto().await?;
                let ok = matches!(
                    &m.payload,
                    Some(Payload::CallToolResponse(pb::CallToolResponse {
                        result: Some(pb::call_tool_response::Result::Success(r)),
                        ..
                    })) if !r.is_error
                );
                Ok(if ok { Ok(m.id) } else { Err(format!("{m:?}")) })
            }
        }
    }

    /// `total` calls with `k` in flight; latencies in µs.
    async fn drive(&mut self, total: usize, k: usize, first_id: u64) -> Result<Vec<u64>> {
        let mut sent_at = Vec::with_capacity(total);
        let mut lat = Vec::with_capacity(total);
        let mut out = Vec::with_capacity(64 * 1024);
        while sent_at.len() < k.min(total) {
            self.push_request(first_id + sent_at.len() as u64, &mut out);
            sent_at.push(Instant::now());
        }
        self.stdin.write_all(&out).await?;
        while lat.len() < total {
            let id = self
                .next_id()
                .await?
                .map_err(|e| anyhow!("bad response: {e}"))?;
            let i = usize::try_from(id - first_id)?;
            lat.push(sent_at[i].elapsed().as_micros() as u64);
            if sent_at.len() < total {
                out.clear();
                self.push_request(first_id + sent_at.len() as u64, &mut out);
                sent_at.push(Instant::now());
                self.stdin.write_all(&out).await?;
            }
        }
        Ok(lat)
    }
}

struct Sample {
    calls_per_s: f64,
    p50: u64,
    p99: u64,
    /// CPU µs per measured call of the server process itself, and of its child processes
    /// (a gateway's stdio upstreams).
    server_us: f64,
    children_us: f64,
}

/// Linux reports utime/stime in USER_HZ ticks, which is 100 on every supported ABI.
const USER_HZ: f64 = 100.0;

/// User + system CPU seconds of process `pid`, and of its live descendants together.
fn tree_cpu(pid: u32) -> (f64, f64) {
    let mut procs = std::collections::HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // Fields after the command (which may hold spaces): state, ppid, …, utime is
            // the 12th and stime the 13th.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            procs.insert(p, (num(1) as u32, (num(11) + num(12)) / USER_HZ));
        }
    }
    let own = procs.get(&pid).map_or(0.0, |&(_, cpu)| cpu);
    let mut children = 0.0;
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for (&p, &(ppid, cpu)) in &procs {
            if ppid == parent {
                children += cpu;
                parents.push(p);
            }
        }
    }
    (own, children)
}

/// One run: a server, `conns` connections (one for the stdio wires), warm-up, then the
/// measured calls split between the connections, driven at once.
async fn run_once(args: &Args, cmd: &str, wire: Wire, k: usize, conns: usize) -> Result<Sample> {
    let listen_args = if wire == Wire::Mcpbs {
        &args.mcpbs_args
    } else {
        &args.mcpb_args
    };
    let tls = match (&args.tls_ca, wire) {
        (Some(ca), Wire::Mcpbs) => Some(client_config(ca)?),
        (None, Wire::Mcpbs) => bail!("the wire mcpbs needs --tls-ca"),
        _ => None,
    };
    let mut server = Server::start(cmd, wire, listen_args).await?;
    let mut cs = Vec::with_capacity(conns);
    for _ in 0..conns {
        cs.push(Conn::open(&mut server, wire, &args.text, tls.as_ref()).await?);
    }
    let per = |total: usize| total.div_ceil(conns);
    let warm = per(args.warmup).max(1);
    futures::future::try_join_all(cs.iter_mut().map(|c| c.drive(warm, k, 1))).await?;
    let calls = per(args.calls);
    let pid = server.child.id().unwrap_or(0);
    let before = tree_cpu(pid);
    let t = Instant::now();
    let lats =
        futures::future::try_join_all(cs.iter_mut().map(|c| c.drive(calls, k, 1 + warm as u64)))
            .await?;
    let secs = t.elapsed().as_secs_f64();
    let after = tree_cpu(pid);
    let per_call = |a: f64, b: f64| (a - b) * 1e6 / (calls * conns) as f64;
    drop(cs);
    server.stop().await;
    let mut lat: Vec<u64> = lats.into_iter().flatten().collect();
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    Ok(Sample {
        calls_per_s: (calls * conns) as f64 / secs,
        p50: pct(0.50),
        p99: pct(0.99),
        server_us: per_call(after.0, before.0),
        children_us: per_call(after.1, before.1),
    })
}

fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.calls == 0 || args.runs == 0 || args.connections == 0 {
        bail!("--calls, --runs and --connections must be positive");
    }
    let cmd = match &args.server {
        Some(s) => s.clone(),
        None => {
            let exe = std::env::current_exe()?;
            let dir = exe.parent().ok_or_else(|| anyhow!("no binary directory"))?;
            dir.join("mcpwire_echo").display().to_string()
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "server: {cmd}; {} calls x {} runs, text {} bytes",
        args.calls,
        args.runs,
        args.text.len()
    );
    println!(
        "{:<6} {:>5} {:>4} {:>12} {:>8} {:>8} {:>9} {:>9}",
        "wire", "conns", "K", "calls/s", "p50 µs", "p99 µs", "server µs", "kids µs"
    );
    let wires = args
        .wires
        .iter()
        .map(|w| match w.as_str() {
            "json" => Ok(Wire::Json),
            "proto" => Ok(Wire::Proto),
            "mcpb" => Ok(Wire::Mcpb),
            "mcpbs" => Ok(Wire::Mcpbs),
            other => Err(anyhow!("unknown wire {other:?} (json, proto, mcpb, mcpbs)")),
        })
        .collect::<Result<Vec<_>>>()?;
    if wires.is_empty() {
        bail!("--wires must name at least one wire");
    }
    for &k in &args.inflight {
        let mut res: Vec<(Wire, Vec<Sample>)> = wires.iter().map(|&w| (w, vec![])).collect();
        for _ in 0..args.runs {
            for (wire, samples) in res.iter_mut() {
                let conns = if wire.is_mcpb() { args.connections } else { 1 };
                samples.push(rt.block_on(run_once(&args, &cmd, *wire, k, conns))?);
            }
        }
        let mut rates = Vec::new();
        for (wire, samples) in &res {
            let rate = median(samples.iter().map(|s| s.calls_per_s).collect());
            rates.push(rate);
            let conns = if wire.is_mcpb() { args.connections } else { 1 };
            println!(
                "{:<6} {:>5} {:>4} {:>12.0} {:>8} {:>8} {:>9.2} {:>9.2}",
                format!("{wire:?}").to_lowercase(),
                conns,
                k,
                rate,
                median(samples.iter().map(|s| s.p50).collect()),
                median(samples.iter().map(|s| s.p99).collect()),
                median(samples.iter().map(|s| s.server_us).collect()),
                median(samples.iter().map(|s| s.children_us).collect()),
            );
        }
        for ((wire, _), rate) in res.iter().zip(&rates).skip(1) {
            println!(
                "{}/{} calls/s at K={k}: {:.2}",
                format!("{wire:?}").to_lowercase(),
                format!("{:?}", res[0].0).to_lowercase(),
                rate / rates[0]
            );
        }
    }
    Ok(())
}

/// A TLS client configuration trusting only the CA certificates of `ca` (PEM).
fn client_config(ca: &std::path::Path) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
