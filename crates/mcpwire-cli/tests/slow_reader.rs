//! A client that sends many requests and never reads its answers, through the binary on
//! stdio, MCPB, WebSocket and Streamable HTTP: the server must stop reading (backpressure) rather than buffer
//! the answers, so its memory stays flat. Each request is a `tools/list` (about 10 KiB of
//! answer for a small request), so a server that kept reading would grow by hundreds of MiB.
//!
//! Bounded: at most `MAX_REQUESTS` per wire, and the flood is watched for at most
//! `WATCH_LIMIT`; it ends as soon as the client cannot write any more (the server stopped
//! reading), or at once if the server's memory grows past the bound. Figures are printed
//! (`cargo test --test slow_reader -- --nocapture`); `MCPWIRE_BIN` runs another binary.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mcpwire_model::{Outbound, RequestId, to_raw};
use mcpwire_wire::Limits;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut, VersionOffer};
use serde_json::{Value, json};
use tokio_util::codec::{Decoder, Encoder};

use common::http::HttpServer;

/// How much the server's peak resident memory may grow over the flood.
const GROWTH_LIMIT_KIB: u64 = 32 * 1024;
/// Requests a client tries to send at most.
const MAX_REQUESTS: usize = 100_000;
/// Requests written per `write` call.
const BATCH: usize = 64;
/// How long the client may go without being able to write before the server counts as no
/// longer reading.
const STALL: Duration = Duration::from_secs(1);
/// Longest the flood is watched.
const WATCH_LIMIT: Duration = Duration::from_secs(60);
/// Padding in each request's `_meta`, so the kernel's socket buffers fill with fewer requests.
const PAD: usize = 1024;

fn binary() -> String {
    std::env::var("MCPWIRE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_mcpwire").to_owned())
}

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The bytes of one `tools/list` request (padded with `pad` bytes in `_meta`).
fn tools_list(pad: usize) -> Vec<u8> {
    let params = if pad > 0 {
        json!({"_meta": {"pad": "x".repeat(pad)}})
    } else {
        json!({})
    };
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
        .to_string()
        .into_bytes()
}

/// A thread writing `frame` over and over (at most `MAX_REQUESTS` times) until it cannot.
struct Flood {
    sent: Arc<AtomicUsize>,
    thread: JoinHandle<()>,
}

fn flood(mut w: impl Write + Send + 'static, frame: Vec<u8>) -> Flood {
    let sent = Arc::new(AtomicUsize::new(0));
    let count = sent.clone();
    let batch = frame.repeat(BATCH);
    let thread = std::thread::spawn(move || {
        while count.load(Ordering::Relaxed) < MAX_REQUESTS {
            if w.write_all(&batch).is_err() {
                return;
            }
            count.fetch_add(BATCH, Ordering::Relaxed);
        }
    });
    Flood { sent, thread }
}

/// What the flood did to the server.
#[derive(Debug)]
struct Figures {
    sent: usize,
    rss_before_kib: u64,
    peak_kib: u64,
}

/// Watches the server while `flood` runs: until the client stalls (the server stopped
/// reading), everything was sent, the server grew past the limit, or time is up. Then ends
/// the server, so the writer's last write fails and it stops.
fn watch(mut server: Child, rss_before_kib: u64, flood: Flood, wire: &str) -> Figures {
    let pid = server.id();
    let started = Instant::now();
    let (mut last, mut last_change) = (0, Instant::now());
    loop {
        // A sampling interval of what is measured (the server's memory as the flood goes
        // on), not a wait for one event.
        std::thread::sleep(Duration::from_millis(50));
        let sent = flood.sent.load(Ordering::Relaxed);
        if sent != last {
            (last, last_change) = (sent, Instant::now());
        }
        let grown = status_kib(pid, "VmHWM").saturating_sub(rss_before_kib);
        if sent >= MAX_REQUESTS
            || grown > GROWTH_LIMIT_KIB
            || last_change.elapsed() >= STALL
            || started.elapsed() >= WATCH_LIMIT
        {
            break;
        }
    }
    // A last look after the client stalled: still flat. An observation window (nothing is
    // to happen in it), so it cannot be a condition poll.
    std::thread::sleep(Duration::from_millis(300));
    let figures = Figures {
        sent: flood.sent.load(Ordering::Relaxed),
        rss_before_kib,
        peak_kib: status_kib(pid, "VmHWM"),
    };
    let _ = server.kill();
    let _ = server.wait();
    let _ = flood.thread.join();
    eprintln!(
        "{wire}: client wrote {} requests (~{} MiB of answers owed) without reading; server RSS before {} KiB, peak {} KiB (+{} KiB)",
        figures.sent,
        figures.sent * 10 / 1024,
        figures.rss_before_kib,
        figures.peak_kib,
        figures.peak_kib.saturating_sub(figures.rss_before_kib),
    );
    figures
}

fn assert_flat(f: &Figures) {
    let grown = f.peak_kib.saturating_sub(f.rss_before_kib);
    assert!(
        f.peak_kib > 0 && grown <= GROWTH_LIMIT_KIB,
        "server memory grew by {grown} KiB under a client that does not read: {f:?}"
    );
    assert!(
        f.sent < MAX_REQUESTS,
        "the server read every request without its answers being taken: {f:?}"
    );
}

/// Starts `mcpwire demo` on a network wire; the child and the address it listens on.
fn listen(transport: &str, extra: &[&str], prefix: &str) -> (Child, String) {
    let mut args = vec!["demo", "--transport", transport, "--port", "0"];
    args.extend_from_slice(extra);
    let mut l = common::listen(&binary(), &args, "warn", &[prefix], false);
    (l.child, l.addrs.remove(0))
}

#[test]
fn stdio_stops_reading_a_client_that_does_not_read() {
    let mut child = Command::new(binary())
        .arg("demo")
        .env("MCPWIRE_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcpwire");
    let mut stdin = child.stdin.take().expect("stdin");
    // Held, never read: the pipe fills and the server's writes stop.
    let _stdout: ChildStdout = child.stdout.take().expect("stdout");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "slow-reader", "version": "1"}}});
    writeln!(stdin, "{init}").expect("write");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    // Settling before the baseline is read (what follows the handshake is allocated), not
    // a wait for an event: the growth measured against it is what is tested.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_kib(child.id(), "VmRSS");
    let mut line = tools_list(0);
    line.push(b'\n');
    let flood = flood(stdin, line);
    assert_flat(&watch(child, before, flood, "stdio"));
}

/// An MCPB client after version negotiation, authentication and MCP `initialize`.
fn mcpb_ready(addr: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut codec = McpbCodec::client(&Limits::default());
    let mut buf = BytesMut::new();
    let mut send = |stream: &mut TcpStream, out: McpbOut<'_>| {
        let mut b = BytesMut::new();
        codec.encode(out, &mut b).expect("encode");
        stream.write_all(&b).expect("write");
    };
    let request = |id: i64, method: &str, params: Value| Outbound::Request {
        id: RequestId::Int(id),
        method: method.to_owned().into(),
        params: Some(to_raw(&params)),
    };
    send(&mut stream, McpbOut::Version(&VersionOffer::ours()));
    send(
        &mut stream,
        McpbOut::Mcp(&request(1, "initialize", json!({"token": token}))),
    );
    send(
        &mut stream,
        McpbOut::Mcp(&request(
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "slow-reader", "version": "1"}}),
        )),
    );
    // The ack and both answers.
    let mut decoder = McpbCodec::client(&Limits::default());
    let mut answers = 0;
    while answers < 3 {
        match decoder.decode(&mut buf).expect("valid frames") {
            Some(McpbFrame::VersionAck(_) | McpbFrame::Mcp { .. }) => answers += 1,
            Some(other) => panic!("unexpected frame {other:?}"),
            None => {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).expect("read");
                assert!(n > 0, "closed during the handshake");
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    stream
}

#[test]
fn mcpb_stops_reading_a_client_that_does_not_read() {
    let (child, addr) = listen(
        "mcpb",
        &["--mcpb-token", "t0ken"],
        "mcpwire: listening on mcpb://",
    );
    let stream = mcpb_ready(&addr, "t0ken");
    // Settling before the baseline is read (what follows the handshake is allocated), not
    // a wait for an event: the growth measured against it is what is tested.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_kib(child.id(), "VmRSS");
    let payload = tools_list(PAD);
    let mut frame = Vec::with_capacity(12 + payload.len());
    frame.extend_from_slice(b"MCPB");
    frame.extend_from_slice(&1u16.to_be_bytes());
    frame.extend_from_slice(&1u16.to_be_bytes());
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    let flood = flood(stream, frame);
    assert_flat(&watch(child, before, flood, "mcpb"));
}

/// A client WebSocket text frame (masked, with a zero key: the payload stays as is).
fn ws_text(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x81];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Reads one server frame's payload (unmasked, not fragmented).
fn ws_read(stream: &mut TcpStream) -> Vec<u8> {
    let mut h = [0u8; 2];
    stream.read_exact(&mut h).expect("frame header");
    let len = match h[1] & 0x7F {
        126 => {
            let mut l = [0u8; 2];
            stream.read_exact(&mut l).expect("length");
            u16::from_be_bytes(l) as usize
        }
        127 => {
            let mut l = [0u8; 8];
            stream.read_exact(&mut l).expect("length");
            u64::from_be_bytes(l) as usize
        }
        n => n as usize,
    };
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).expect("payload");
    payload
}

#[test]
fn websocket_stops_reading_a_client_that_does_not_read() {
    let (child, addr) = listen("ws", &[], "mcpwire: listening on ws://");
    let (host, path) = addr.split_once('/').expect("host/path");
    let mut stream = TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .expect("upgrade");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        stream.read_exact(&mut b).expect("upgrade response");
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "slow-reader", "version": "1"}}});
    stream
        .write_all(&ws_text(init.to_string().as_bytes()))
        .expect("write");
    let answer: Value = serde_json::from_slice(&ws_read(&mut stream)).expect("JSON answer");
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
    stream
        .write_all(&ws_text(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ))
        .expect("write");
    // Settling before the baseline is read (what follows the handshake is allocated), not
    // a wait for an event: the growth measured against it is what is tested.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_kib(child.id(), "VmRSS");
    let flood = flood(stream, ws_text(&tools_list(PAD)));
    assert_flat(&watch(child, before, flood, "websocket"));
}

/// Streamable HTTP (on the listener's own threads, the gateway's default on a machine with
/// more than one core): a client pipelining `POST`s on one connection and never reading
/// the answers. The listener reads the next request only once the last answer is written,
/// so it stops reading when the socket's buffers are full.
#[test]
fn http_stops_reading_a_client_that_does_not_read() {
    let (child, addr) = listen("http", &[], "mcpwire: listening on http://");
    let http = HttpServer::at(&addr);
    let sid = http.initialize();
    let (host, path) = addr.split_once('/').expect("host/path");
    let body = tools_list(PAD);
    let mut request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
         Mcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let stream = TcpStream::connect(host).expect("connect");
    // Settling before the baseline is read (what follows the handshake is allocated), not
    // a wait for an event: the growth measured against it is what is tested.
    std::thread::sleep(Duration::from_millis(200));
    let before = status_kib(child.id(), "VmRSS");
    let flood = flood(stream, request);
    assert_flat(&watch(child, before, flood, "http"));
}
