//! End-to-end stdio load driver for MCP servers.
//!
//! Spawns each `--server NAME=COMMAND` as a child process, performs the MCP handshake
//! (`initialize` with protocolVersion 2025-11-25, then `notifications/initialized`), warms up,
//! then issues `-n` `tools/call` requests of the `echo` tool while keeping exactly K requests
//! in flight (a new request is sent as each response arrives). It reports calls/s, per-call
//! latency percentiles (send → response, µs) and the server's peak RSS (`VmHWM`).
//!
//! The client is built to stay out of the way: one thread (a current-thread tokio runtime),
//! requests are pre-formatted NDJSON with only the id spliced in, writes are batched per read,
//! reads use a large buffer, and each response's top-level `"id"` is found with a cheap byte
//! scan. Warm-up responses are fully parsed and checked; measured responses are checked
//! cheaply (a `result`, no `error`, no `"isError":true`, and the echoed text present) and
//! fully parsed only when the cheap check fails. The client's and server's CPU time are
//! reported so a client bottleneck is visible.
//!
//! Each (server, K) case is run `--runs` times, each run in a fresh server process; runs are
//! interleaved across servers so slow drift on the machine affects every server alike. The
//! table shows the median calls/s, p50 and p99 across runs and the largest peak RSS.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use memchr::memmem;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PROTOCOL_VERSION: &str = "2025-11-25";
/// Initial read buffer size; it grows if a single line is larger.
const READ_BUF: usize = 256 * 1024;
/// Compact the read buffer when less than this much room is left at its end.
const MIN_READ_ROOM: usize = 32 * 1024;
/// Linux reports utime/stime in USER_HZ ticks, which is 100 on every supported ABI.
const USER_HZ: f64 = 100.0;

/// End-to-end stdio MCP load driver: calls/s, latency and peak RSS of `echo` servers.
#[derive(Parser, Debug)]
#[command(name = "loadgen", version)]
struct Args {
    /// A server to benchmark, as NAME=COMMAND (COMMAND is split like a shell would, no
    /// shell is involved), e.g. --server rmcp='target/release/rmcp_echo'. Repeatable; the
    /// first server is the baseline of the ratio table.
    #[arg(long = "server", value_name = "NAME=COMMAND", required = true)]
    servers: Vec<String>,
    /// Numbers of requests kept in flight, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    inflight: Vec<usize>,
    /// Warm-up calls per run (fully parsed and checked, not measured).
    #[arg(long, default_value_t = 2000)]
    warmup: usize,
    /// Measured calls per run.
    #[arg(short = 'n', long = "calls", default_value_t = 50_000)]
    calls: usize,
    /// Repetitions of each (server, K) case, each in a fresh process; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Per-run time limit; the server is killed and the run reported failed after it.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// The text sent to `echo`.
    #[arg(long, default_value = "hello world")]
    text: String,
    /// Where the servers' stderr goes (appended).
    #[arg(long, default_value = "/dev/null")]
    server_stderr: PathBuf,
}

/// A server under test.
#[derive(Debug, Clone)]
struct ServerSpec {
    name: String,
    command: String,
    argv: Vec<String>,
}

impl ServerSpec {
    fn parse(s: &str) -> Result<ServerSpec> {
        let (name, command) = match s.split_once('=') {
            Some((name, cmd))
                if !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || "-_.+:".contains(c)) =>
            {
                (name.to_owned(), cmd.to_owned())
            }
            _ => (s.to_owned(), s.to_owned()),
        };
        let argv = shlex::split(&command)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| anyhow!("cannot split server command line {command:?}"))?;
        Ok(ServerSpec {
            name,
            command,
            argv,
        })
    }
}

// ---------------------------------------------------------------------------------------
// Requests and response scanning
// ---------------------------------------------------------------------------------------

/// A pre-formatted `tools/call` request line with a hole for the id.
struct Template {
    prefix: &'static [u8],
    suffix: Vec<u8>,
}

impl Template {
    fn new(text: &str) -> Template {
        let text = serde_json::to_string(text).expect("a string serializes");
        let suffix = format!(
            r#","method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text}}}}}}}"#
        );
        let mut suffix = suffix.into_bytes();
        suffix.push(b'\n');
        Template {
            prefix: br#"{"jsonrpc":"2.0","id":"#,
            suffix,
        }
    }

    fn len(&self) -> usize {
        self.prefix.len() + 20 + self.suffix.len()
    }

    #[inline]
    fn push(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix);
        push_u64(out, id);
        out.extend_from_slice(&self.suffix);
    }
}

#[inline]
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// What the cheap scan learns about a line's top-level object.
#[derive(Debug, Default, PartialEq)]
struct Scan {
    id: Option<u64>,
    has_result: bool,
    has_error: bool,
    has_method: bool,
}

/// Finds the top-level `"id"` (a non-negative integer) of a JSON-RPC line and which of
/// `result` / `error` / `method` are present, without building any value. Strings are
/// skipped with escapes honoured, so keys nested inside `result` are never mistaken for
/// top-level ones. Stops as soon as the id and the outcome are known.
fn scan(line: &[u8]) -> Scan {
    let mut out = Scan::default();
    let n = line.len();
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < n {
        match line[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < n {
                    match line[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                let key = &line[start..i.min(n)];
                i += 1;
                if depth != 1 {
                    continue;
                }
                let mut j = i;
                while j < n && line[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j >= n || line[j] != b':' {
                    continue; // a value, not a key
                }
                match key {
                    b"id" => {
                        j += 1;
                        while j < n && line[j].is_ascii_whitespace() {
                            j += 1;
                        }
                        let digits = j;
                        let mut v: u64 = 0;
                        while j < n && line[j].is_ascii_digit() {
                            v = v.wrapping_mul(10).wrapping_add(u64::from(line[j] - b'0'));
                            j += 1;
                        }
                        if j > digits {
                            out.id = Some(v);
                        }
                        i = j;
                    }
                    b"result" => out.has_result = true,
                    b"error" => out.has_error = true,
                    b"method" => out.has_method = true,
                    _ => {}
                }
                if out.id.is_some() && (out.has_result || out.has_error) {
                    return out;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// A response parsed fully (warm-up, and measured responses failing the cheap check).
#[derive(Deserialize)]
struct FullResponse {
    #[serde(default)]
    result: Option<CallResult>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct CallResult {
    #[serde(default)]
    content: Vec<ContentItem>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct ContentItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// What every `echo` response must look like.
struct Expected {
    text: String,
    /// The text as a compact JSON string (with quotes).
    encoded: memmem::Finder<'static>,
    is_error_true: memmem::Finder<'static>,
}

impl Expected {
    fn new(text: &str) -> Expected {
        let encoded = serde_json::to_string(text).expect("a string serializes");
        Expected {
            text: text.to_owned(),
            encoded: memmem::Finder::new(encoded.as_bytes()).into_owned(),
            is_error_true: memmem::Finder::new(br#""isError":true"#).into_owned(),
        }
    }

    /// Parses `line` fully and checks it is a successful echo of the text.
    fn check_full(&self, line: &[u8]) -> Result<(), String> {
        let resp: FullResponse = serde_json::from_slice(line)
            .map_err(|e| format!("unparseable response ({e}): {}", preview(line)))?;
        if let Some(err) = resp.error {
            return Err(format!("JSON-RPC error: {err}"));
        }
        let result = resp
            .result
            .ok_or_else(|| format!("response without result: {}", preview(line)))?;
        if result.is_error == Some(true) {
            return Err(format!("tool error (isError): {}", preview(line)));
        }
        match result.content.as_slice() {
            [item] if item.kind == "text" && item.text.as_deref() == Some(&self.text) => Ok(()),
            _ => Err(format!("wrong echo content: {}", preview(line))),
        }
    }

    /// The cheap check for measured responses; falls back to [`Self::check_full`].
    #[inline]
    fn check_cheap(&self, line: &[u8], scan: &Scan) -> Result<(), String> {
        if scan.has_result
            && !scan.has_error
            && self.encoded.find(line).is_some()
            && self.is_error_true.find(line).is_none()
        {
            return Ok(());
        }
        self.check_full(line)
    }
}

fn preview(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(&line[..line.len().min(300)]);
    if line.len() > 300 {
        format!("{s}…")
    } else {
        s.into_owned()
    }
}

// ---------------------------------------------------------------------------------------
// One server process
// ---------------------------------------------------------------------------------------

struct Conn {
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    rbuf: Vec<u8>,
    start: usize,
    end: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Check {
    Full,
    Cheap,
}

struct Phase {
    latencies_ns: Vec<u64>,
    elapsed: Duration,
    errors: u64,
    first_error: Option<String>,
    other_lines: u64,
}

/// Reads more bytes into `buf[end..]`, compacting or growing it first when needed.
/// Compaction happens before the await, so cancelling this future leaves `buf` consistent.
async fn read_more(
    stdout: &mut ChildStdout,
    buf: &mut Vec<u8>,
    start: &mut usize,
    end: &mut usize,
) -> Result<usize> {
    if *start == *end {
        *start = 0;
        *end = 0;
    } else if buf.len() - *end < MIN_READ_ROOM {
        if *start > 0 {
            buf.copy_within(*start..*end, 0);
            *end -= *start;
            *start = 0;
        }
        if buf.len() - *end < MIN_READ_ROOM {
            let grown = buf.len() * 2;
            buf.resize(grown, 0);
        }
    }
    let n = stdout.read(&mut buf[*end..]).await?;
    if n == 0 {
        bail!("server closed its stdout");
    }
    *end += n;
    Ok(n)
}

/// The next complete line in `buf[start..end]` (without `\n` / `\r\n`), advancing `start`.
#[inline]
fn next_line<'b>(buf: &'b [u8], start: &mut usize, end: usize) -> Option<&'b [u8]> {
    let pos = memchr::memchr(b'\n', &buf[*start..end])?;
    let mut line = &buf[*start..*start + pos];
    *start += pos + 1;
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    Some(line)
}

impl Conn {
    fn spawn(spec: &ServerSpec, stderr: &PathBuf) -> Result<Conn> {
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr)
            .with_context(|| format!("opening {}", stderr.display()))?;
        let mut child = Command::new(&spec.argv[0])
            .args(&spec.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {:?}", spec.command))?;
        let pid = child.id().context("child has no pid")?;
        let stdin = child.stdin.take().context("no stdin pipe")?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        Ok(Conn {
            child,
            pid,
            stdin: Some(stdin),
            stdout,
            rbuf: vec![0; READ_BUF],
            start: 0,
            end: 0,
        })
    }

    fn stdin(&mut self) -> Result<&mut ChildStdin> {
        self.stdin.as_mut().context("stdin already closed")
    }

    /// `initialize` (id 0) + `notifications/initialized`; returns the negotiated version.
    async fn handshake(&mut self) -> Result<String> {
        let init = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "mcpwire-loadgen", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let mut line = serde_json::to_vec(&init)?;
        line.push(b'\n');
        self.stdin()?.write_all(&line).await?;
        self.stdin()?.flush().await?;
        loop {
            let Conn {
                stdout,
                rbuf,
                start,
                end,
                ..
            } = self;
            read_more(stdout, rbuf, start, end).await?;
            while let Some(line) = next_line(rbuf, start, *end) {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_slice(line)
                    .with_context(|| format!("bad initialize reply: {}", preview(line)))?;
                if v.get("id") != Some(&serde_json::Value::from(0)) {
                    continue; // a notification or log line before the reply
                }
                if let Some(e) = v.get("error") {
                    bail!("initialize failed: {e}");
                }
                let version = v["result"]["protocolVersion"]
                    .as_str()
                    .with_context(|| format!("initialize result lacks protocolVersion: {v}"))?
                    .to_owned();
                let note = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
                self.stdin()?.write_all(note).await?;
                self.stdin()?.flush().await?;
                return Ok(version);
            }
        }
    }

    /// Issues `count` calls with ids `first_id..first_id+count`, `k` in flight.
    async fn phase(
        &mut self,
        tmpl: &Template,
        expected: &Expected,
        first_id: u64,
        count: usize,
        k: usize,
        check: Check,
    ) -> Result<Phase> {
        let Conn {
            stdin,
            stdout,
            rbuf,
            start,
            end,
            ..
        } = self;
        let stdin = stdin.as_mut().context("stdin already closed")?;
        const DONE: u64 = u64::MAX;
        let mut sent_at = vec![0u64; count]; // ns since t0; DONE once answered
        let mut latencies_ns = Vec::with_capacity(count);
        let mut wbuf = Vec::with_capacity(k.min(count).max(1) * tmpl.len());
        let mut wpos = 0usize;
        let (mut sent, mut done) = (0usize, 0usize);
        let (mut errors, mut other_lines) = (0u64, 0u64);
        let mut first_error = None;

        let t0 = Instant::now();
        while sent < k.min(count) {
            tmpl.push(first_id + sent as u64, &mut wbuf);
            sent += 1; // sent_at is 0 = t0
        }
        while done < count {
            if wpos < wbuf.len() {
                tokio::select! {
                    biased;
                    w = stdin.write(&wbuf[wpos..]) => {
                        let w = w.context("writing to server stdin")?;
                        if w == 0 {
                            bail!("server stdin closed");
                        }
                        wpos += w;
                        if wpos == wbuf.len() {
                            wbuf.clear();
                            wpos = 0;
                        }
                        continue;
                    }
                    r = read_more(stdout, rbuf, start, end) => { r?; }
                }
            } else {
                read_more(stdout, rbuf, start, end).await?;
            }
            // One clock read per chunk: the receive time of its responses and the send
            // time of the requests they trigger (written right after).
            let now = t0.elapsed().as_nanos() as u64;
            while let Some(line) = next_line(rbuf, start, *end) {
                let s = scan(line);
                let idx = match s.id {
                    Some(id) if !s.has_method && id >= first_id => (id - first_id) as usize,
                    _ => {
                        other_lines += 1; // notifications, blank lines, server requests
                        continue;
                    }
                };
                if idx >= sent || sent_at[idx] == DONE {
                    errors += 1;
                    first_error.get_or_insert_with(|| {
                        format!("unexpected or duplicate response id: {}", preview(line))
                    });
                    continue;
                }
                latencies_ns.push(now.saturating_sub(sent_at[idx]));
                sent_at[idx] = DONE;
                done += 1;
                let verdict = match check {
                    Check::Full => expected.check_full(line),
                    Check::Cheap => expected.check_cheap(line, &s),
                };
                if let Err(e) = verdict {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
                if sent < count {
                    tmpl.push(first_id + sent as u64, &mut wbuf);
                    sent_at[sent] = now;
                    sent += 1;
                }
            }
        }
        let elapsed = t0.elapsed();
        Ok(Phase {
            latencies_ns,
            elapsed,
            errors,
            first_error,
            other_lines,
        })
    }

    /// Closes stdin and waits (bounded) for the server to exit, killing it otherwise.
    async fn close(&mut self) {
        self.stdin = None;
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            self.kill().await;
        }
    }

    async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

// ---------------------------------------------------------------------------------------
// /proc readings
// ---------------------------------------------------------------------------------------

/// `VmHWM` (peak resident set size) of `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU seconds of process `pid` (all threads), from `/proc/<pid>/stat`.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the comm field: state is field 3, utime field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

// ---------------------------------------------------------------------------------------
// Runs, cases and reports
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
struct RunResult {
    calls: usize,
    elapsed_s: f64,
    calls_per_s: f64,
    mean_us: f64,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    peak_rss_kib: Option<u64>,
    errors: u64,
    first_error: Option<String>,
    other_lines: u64,
    server_cpu_pct: Option<f64>,
    client_cpu_pct: Option<f64>,
    protocol_version: String,
}

#[derive(Debug, Clone, Serialize)]
struct CaseResult {
    server: String,
    command: String,
    inflight: usize,
    ok: bool,
    failures: Vec<String>,
    /// Medians over the successful runs.
    calls_per_s: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    /// Largest `VmHWM` over the runs.
    peak_rss_mib: Option<f64>,
    errors: u64,
    server_cpu_pct: Option<f64>,
    client_cpu_pct: Option<f64>,
    runs: Vec<RunResult>,
}

#[derive(Debug, Clone, Serialize)]
struct Ratio {
    baseline: String,
    other: String,
    inflight: usize,
    /// baseline calls/s ÷ other calls/s (> 1: the baseline is faster).
    calls_per_s: Option<f64>,
    /// baseline p99 ÷ other p99 (< 1: the baseline has lower tail latency).
    p99: Option<f64>,
    /// baseline peak RSS ÷ other peak RSS (< 1: the baseline uses less memory).
    peak_rss: Option<f64>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The body of one run, on an already-spawned server.
async fn drive(
    conn: &mut Conn,
    args: &Args,
    k: usize,
    tmpl: &Template,
    expected: &Expected,
) -> Result<RunResult> {
    let protocol_version = conn.handshake().await.context("handshake")?;
    let warm = conn
        .phase(tmpl, expected, 1, args.warmup, k, Check::Full)
        .await
        .context("warm-up")?;
    if warm.errors > 0 {
        bail!(
            "{} bad responses in warm-up; first: {}",
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    let pid = conn.pid.to_string();
    let (srv0, cli0) = (cpu_seconds(&pid), cpu_seconds("self"));
    let first_id = 1 + args.warmup as u64;
    let mut m = conn
        .phase(tmpl, expected, first_id, args.calls, k, Check::Cheap)
        .await
        .context("measured calls")?;
    let (srv1, cli1) = (cpu_seconds(&pid), cpu_seconds("self"));
    let peak_rss_kib = peak_rss_kib(conn.pid);

    let secs = m.elapsed.as_secs_f64();
    let pct = |a: Option<f64>, b: Option<f64>| Some((b? - a?) / secs * 100.0);
    m.latencies_ns.sort_unstable();
    let lat = &m.latencies_ns;
    let mean_us = lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len().max(1) as f64 / 1000.0;
    Ok(RunResult {
        calls: args.calls,
        elapsed_s: secs,
        calls_per_s: args.calls as f64 / secs,
        mean_us,
        p50_us: percentile(lat, 50.0),
        p90_us: percentile(lat, 90.0),
        p99_us: percentile(lat, 99.0),
        p999_us: percentile(lat, 99.9),
        max_us: lat.last().map_or(f64::NAN, |&x| x as f64 / 1000.0),
        peak_rss_kib,
        errors: m.errors,
        first_error: m.first_error,
        other_lines: m.other_lines,
        server_cpu_pct: pct(srv0, srv1),
        client_cpu_pct: pct(cli0, cli1),
        protocol_version,
    })
}

/// One run: a fresh server process, bounded by `--timeout-secs`.
async fn run_once(
    spec: &ServerSpec,
    args: &Args,
    k: usize,
    tmpl: &Template,
    expected: &Expected,
) -> Result<RunResult> {
    let mut conn = Conn::spawn(spec, &args.server_stderr)?;
    let limit = Duration::from_secs(args.timeout_secs);
    let outcome = tokio::time::timeout(limit, drive(&mut conn, args, k, tmpl, expected)).await;
    match outcome {
        Ok(Ok(run)) => {
            conn.close().await;
            Ok(run)
        }
        Ok(Err(e)) => {
            conn.kill().await;
            Err(e)
        }
        Err(_) => {
            conn.kill().await;
            Err(anyhow!(
                "timed out after {}s (server killed)",
                args.timeout_secs
            ))
        }
    }
}

async fn bench(args: &Args, specs: &[ServerSpec]) -> Vec<CaseResult> {
    let tmpl = Template::new(&args.text);
    let expected = Expected::new(&args.text);
    let mut cases: Vec<CaseResult> = Vec::new();
    for spec in specs {
        for &k in &args.inflight {
            cases.push(CaseResult {
                server: spec.name.clone(),
                command: spec.command.clone(),
                inflight: k,
                ok: true,
                failures: Vec::new(),
                calls_per_s: None,
                p50_us: None,
                p99_us: None,
                peak_rss_mib: None,
                errors: 0,
                server_cpu_pct: None,
                client_cpu_pct: None,
                runs: Vec::new(),
            });
        }
    }
    // Interleave: run r of every case before run r+1 of any.
    for r in 0..args.runs {
        for case in cases.iter_mut() {
            let spec = specs
                .iter()
                .find(|s| s.name == case.server)
                .expect("every case has a spec");
            let k = case.inflight;
            match run_once(spec, args, k, &tmpl, &expected).await {
                Ok(run) => {
                    eprintln!(
                        "run {}/{} {:<12} K={:<4} {:>10.0} calls/s  p50 {:>8.1} µs  p99 {:>8.1} µs  \
                         srv cpu {:>5.1}%  cli cpu {:>5.1}%  errors {}",
                        r + 1,
                        args.runs,
                        case.server,
                        k,
                        run.calls_per_s,
                        run.p50_us,
                        run.p99_us,
                        run.server_cpu_pct.unwrap_or(f64::NAN),
                        run.client_cpu_pct.unwrap_or(f64::NAN),
                        run.errors,
                    );
                    if let Some(e) = &run.first_error {
                        eprintln!("    first error: {e}");
                    }
                    case.runs.push(run);
                }
                Err(e) => {
                    eprintln!(
                        "run {}/{} {:<12} K={:<4} FAILED: {e:#}",
                        r + 1,
                        args.runs,
                        case.server,
                        k
                    );
                    case.ok = false;
                    case.failures.push(format!("{e:#}"));
                }
            }
        }
    }
    for case in &mut cases {
        let runs = &case.runs;
        case.calls_per_s = median(runs.iter().map(|r| r.calls_per_s).collect());
        case.p50_us = median(runs.iter().map(|r| r.p50_us).collect());
        case.p99_us = median(runs.iter().map(|r| r.p99_us).collect());
        case.peak_rss_mib = runs
            .iter()
            .filter_map(|r| r.peak_rss_kib)
            .max()
            .map(|k| k as f64 / 1024.0);
        case.errors = runs.iter().map(|r| r.errors).sum();
        case.server_cpu_pct = median(runs.iter().filter_map(|r| r.server_cpu_pct).collect());
        case.client_cpu_pct = median(runs.iter().filter_map(|r| r.client_cpu_pct).collect());
        if case.errors > 0 {
            case.ok = false;
        }
    }
    cases
}

fn ratios(cases: &[CaseResult], specs: &[ServerSpec], inflight: &[usize]) -> Vec<Ratio> {
    let mut out = Vec::new();
    let Some(base) = specs.first() else {
        return out;
    };
    let find = |name: &str, k: usize| cases.iter().find(|c| c.server == name && c.inflight == k);
    let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    };
    for other in &specs[1..] {
        for &k in inflight {
            let (Some(a), Some(b)) = (find(&base.name, k), find(&other.name, k)) else {
                continue;
            };
            out.push(Ratio {
                baseline: base.name.clone(),
                other: other.name.clone(),
                inflight: k,
                calls_per_s: div(a.calls_per_s, b.calls_per_s),
                p99: div(a.p99_us, b.p99_us),
                peak_rss: div(a.peak_rss_mib, b.peak_rss_mib),
            });
        }
    }
    out
}

/// The echo text for headings: quoted if short, else its size and a prefix.
fn text_label(text: &str) -> String {
    if text.chars().count() <= 40 {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(24).collect();
        format!("{head:?}… ({} bytes)", text.len())
    }
}

fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.prec$}"),
        _ => "-".to_owned(),
    }
}

fn fmt_ratio(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}x"),
        _ => "-".to_owned(),
    }
}

fn table(args: &Args, cases: &[CaseResult], ratios: &[Ratio]) -> String {
    let mut s = String::new();
    let w = cases
        .iter()
        .map(|c| c.server.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        s,
        "{} calls of echo {} per run (after {} warm-up), median of {} runs; one fresh server process per run",
        args.calls,
        text_label(&args.text),
        args.warmup,
        args.runs
    );
    let _ = writeln!(
        s,
        "{:<w$}  {:>4}  {:>10}  {:>9}  {:>9}  {:>13}  {:>6}  {:>8}  {:>8}",
        "server",
        "K",
        "calls/s",
        "p50 µs",
        "p99 µs",
        "peak RSS MiB",
        "errors",
        "srv CPU",
        "cli CPU"
    );
    for c in cases {
        let _ = writeln!(
            s,
            "{:<w$}  {:>4}  {:>10}  {:>9}  {:>9}  {:>13}  {:>6}  {:>7}%  {:>7}%{}",
            c.server,
            c.inflight,
            fmt_opt(c.calls_per_s, 0),
            fmt_opt(c.p50_us, 1),
            fmt_opt(c.p99_us, 1),
            fmt_opt(c.peak_rss_mib, 1),
            c.errors,
            fmt_opt(c.server_cpu_pct, 0),
            fmt_opt(c.client_cpu_pct, 0),
            if c.failures.is_empty() {
                String::new()
            } else {
                format!("  FAILED {}/{} runs", c.failures.len(), args.runs)
            }
        );
    }
    if !ratios.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "ratios baseline/other (calls/s > 1: baseline faster; p99 and RSS < 1: baseline lower)"
        );
        let _ = writeln!(
            s,
            "{:<w2$}  {:>4}  {:>8}  {:>8}  {:>8}",
            "baseline vs other",
            "K",
            "calls/s",
            "p99",
            "RSS",
            w2 = 2 * w + 4
        );
        for r in ratios {
            let _ = writeln!(
                s,
                "{:<w2$}  {:>4}  {:>8}  {:>8}  {:>8}",
                format!("{} vs {}", r.baseline, r.other),
                r.inflight,
                fmt_ratio(r.calls_per_s),
                fmt_ratio(r.p99),
                fmt_ratio(r.peak_rss),
                w2 = 2 * w + 4
            );
        }
    }
    for c in cases {
        for f in &c.failures {
            let _ = writeln!(s, "failure {} K={}: {f}", c.server, c.inflight);
        }
        for r in &c.runs {
            if let Some(e) = &r.first_error {
                let _ = writeln!(s, "errors {} K={}: first: {e}", c.server, c.inflight);
            }
        }
    }
    s
}

fn main() -> ExitCode {
    let args = Args::parse();
    match real_main(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("loadgen: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main(args: Args) -> Result<bool> {
    let specs = args
        .servers
        .iter()
        .map(|s| ServerSpec::parse(s))
        .collect::<Result<Vec<_>>>()?;
    for (i, a) in specs.iter().enumerate() {
        if specs[..i].iter().any(|b| b.name == a.name) {
            bail!("duplicate server name {:?}", a.name);
        }
    }
    if args.inflight.is_empty() || args.inflight.contains(&0) {
        bail!("--inflight needs positive numbers");
    }
    if args.calls == 0 || args.runs == 0 {
        bail!("-n and --runs must be positive");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let cases = rt.block_on(async {
        // Ctrl-C drops the benchmark future; children are killed on drop.
        tokio::select! {
            cases = bench(&args, &specs) => Ok(cases),
            _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
        }
    })?;
    let ratios = ratios(&cases, &specs, &args.inflight);
    if args.json {
        let doc = serde_json::json!({
            "config": {
                "servers": specs.iter().map(|s| serde_json::json!({"name": s.name, "command": s.command})).collect::<Vec<_>>(),
                "inflight": args.inflight,
                "warmup": args.warmup,
                "calls": args.calls,
                "runs": args.runs,
                "text": args.text,
                "protocol_version": PROTOCOL_VERSION,
            },
            "results": cases,
            "ratios": ratios,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", table(&args, &cases, &ratios));
    }
    Ok(cases.iter().all(|c| c.ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_top_level_id_only() {
        let s = scan(br#"{"jsonrpc":"2.0","id":42,"result":{"content":[]}}"#);
        assert_eq!(s.id, Some(42));
        assert!(s.has_result && !s.has_error);
        let s = scan(br#"{"result":{"id":7,"x":"\"id\":9"},"jsonrpc":"2.0","id": 13}"#);
        assert_eq!(s.id, Some(13));
        let s = scan(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"x"}}"#);
        assert_eq!((s.id, s.has_error), (Some(3), true));
        let s = scan(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1}}"#);
        assert_eq!(s.id, None);
        assert!(s.has_method);
    }

    #[test]
    fn template_splices_ids() {
        let t = Template::new("hello \"world\"");
        let mut out = Vec::new();
        t.push(0, &mut out);
        t.push(18_446_744_073_709_551_615, &mut out);
        let lines: Vec<serde_json::Value> = out
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines[0]["id"], 0);
        assert_eq!(lines[1]["id"], u64::MAX);
        assert_eq!(lines[0]["params"]["arguments"]["text"], "hello \"world\"");
    }

    #[test]
    fn checks() {
        let e = Expected::new("hi");
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#;
        assert!(e.check_full(ok).is_ok());
        assert!(e.check_cheap(ok, &scan(ok)).is_ok());
        let bad = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":true}}"#;
        assert!(e.check_cheap(bad, &scan(bad)).is_err());
        let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"hi"}}"#;
        assert!(e.check_cheap(err, &scan(err)).is_err());
    }

    #[test]
    fn server_specs() {
        let s = ServerSpec::parse("rmcp=target/release/rmcp_echo --x 'a b'").unwrap();
        assert_eq!(s.name, "rmcp");
        assert_eq!(s.argv, ["target/release/rmcp_echo", "--x", "a b"]);
        let s = ServerSpec::parse("python3 -c 'x=1'").unwrap();
        assert_eq!(s.name, "python3 -c 'x=1'");
    }
}
