//! Time from starting a gateway to a merged catalog: spawns `GATEWAY … --upstream uI=UPSTREAM`
//! for I in 1..=N with `--listen stdio`, sends `initialize`, `notifications/initialized` and
//! `tools/list` (following `nextCursor`), and reports how long the whole catalog took to
//! arrive after the spawn — the median, fastest and slowest over `--runs` fresh gateways.
//!
//! ```text
//! gateway_startup --gateway target/release/mcpwire --upstream target/release/mcpwire_echo -N 10
//! ```
//!
//! Each run checks that the catalog really is merged: every upstream's tools appear once,
//! each under its own prefix (the gateway prefixes names when two or more backends serve;
//! one upstream's names are served as they are).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::{Value, json};

/// Command-line options.
#[derive(Parser, Debug, Clone)]
#[command(about = "Time from starting a gateway to its merged catalog of N stdio upstreams")]
struct Args {
    /// The gateway binary (`mcpwire`).
    #[arg(long)]
    gateway: String,
    /// The upstream stdio server's command (one word: no shell is involved).
    #[arg(long)]
    upstream: String,
    /// How many upstreams.
    #[arg(short = 'N', long = "upstreams", default_value_t = 10)]
    upstreams: usize,
    /// Fresh gateways to time.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Tools each upstream serves (checked in every run).
    #[arg(long, default_value_t = 1)]
    tools_per_upstream: usize,
    /// Give up on a run after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// One gateway child with line access to its stdio.
struct Gateway {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Gateway {
    fn spawn(args: &Args) -> anyhow::Result<Gateway> {
        let mut cmd = Command::new(&args.gateway);
        cmd.arg("serve");
        for i in 1..=args.upstreams {
            cmd.arg("--upstream").arg(format!("u{i}={}", args.upstream));
        }
        cmd.args(["--listen", "stdio"])
            .env("MCPWIRE_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", args.gateway))?;
        let stdin = child.stdin.take().context("gateway stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("gateway stdout")?);
        Ok(Gateway {
            child,
            stdin,
            stdout,
        })
    }

    fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(msg)?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Reads lines until the response to `id` (notifications are skipped).
    fn response(&mut self, id: i64) -> anyhow::Result<Value> {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the gateway closed its stdout before answering request {id}");
            }
            let msg: Value = serde_json::from_str(&line).context("a line that is not JSON")?;
            if msg.get("id") == Some(&json!(id)) {
                if let Some(err) = msg.get("error") {
                    bail!("request {id} failed: {err}");
                }
                return Ok(msg["result"].clone());
            }
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts one gateway and returns how long its merged catalog took, and the tool count.
fn one_run(args: &Args) -> anyhow::Result<(Duration, usize)> {
    let start = Instant::now();
    let mut gw = Gateway::spawn(args)?;
    gw.send(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "gateway_startup", "version": "1"}
        }
    }))?;
    gw.response(1)?;
    gw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut id = 2;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        gw.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}))?;
        let page = gw.response(id)?;
        id += 1;
        for tool in page["tools"]
            .as_array()
            .context("tools/list without tools")?
        {
            names.push(tool["name"].as_str().unwrap_or_default().to_owned());
        }
        match page.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => break,
        }
    }
    let took = start.elapsed();
    if args.upstreams == 1 {
        // One backend: names are not prefixed.
        if names.len() != args.tools_per_upstream {
            bail!(
                "the catalog shows {names:?}, expected {} tools",
                args.tools_per_upstream
            );
        }
        return Ok((took, names.len()));
    }
    for i in 1..=args.upstreams {
        let owned = names
            .iter()
            .filter(|n| n.starts_with(&format!("u{i}_")))
            .count();
        if owned != args.tools_per_upstream {
            bail!(
                "upstream u{i} shows {owned} tools in the merged catalog, expected {}: {names:?}",
                args.tools_per_upstream
            );
        }
    }
    Ok((took, names.len()))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut times = Vec::new();
    let mut tools = 0;
    for run in 0..args.runs {
        let (tx, rx) = std::sync::mpsc::channel();
        let a = args.clone();
        std::thread::spawn(move || {
            let _ = tx.send(one_run(&a));
        });
        let (took, n) = rx
            .recv_timeout(Duration::from_secs(args.timeout_secs))
            .with_context(|| format!("run {run} did not finish in {} s", args.timeout_secs))??;
        times.push(took);
        tools = n;
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = times[times.len() / 2];
    let (fastest, slowest) = (times[0], times[times.len() - 1]);
    if args.json {
        println!(
            "{}",
            json!({
                "upstreams": args.upstreams, "runs": args.runs, "tools": tools,
                "median_ms": ms(median), "min_ms": ms(fastest), "max_ms": ms(slowest),
            })
        );
    } else {
        println!(
            "{} stdio upstreams, {tools} tools merged: median {:.1} ms (min {:.1}, max {:.1}) over {} runs",
            args.upstreams,
            ms(median),
            ms(fastest),
            ms(slowest),
            args.runs
        );
    }
    Ok(())
}
