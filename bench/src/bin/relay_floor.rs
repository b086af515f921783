//! The floor of any stdio gateway on this machine (issue 12): the least a process between a
//! client and a stdio server can do per call, measured with the same runtime and pipes the
//! gateway uses. It starts the server given after `--` and copies lines both ways on one
//! current-thread tokio task, reading in bursts and writing each burst with one write.
//!
//! `--rewrite` does what a raw-frame forwarder must do at the least: every request's id is
//! found (`mcpwire_wire::json_frame::replace_member`, the validating scan the gateway's
//! relay reads frames with) and replaced in place with the relay's own number, every
//! answer's id mapped back (a hash map). Without it, lines pass untouched (the pipes' cost
//! alone).
//!
//! Not a gateway: no sessions, no limits, no errors (a line the scan does not read passes
//! as it is).
//!
//!   loadgen --server "relay=relay_floor --rewrite -- mcpwire_echo"

use std::collections::HashMap;
use std::process::Stdio;

use mcpwire_wire::json_frame::{self, MAX_NESTING};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Copies one line to the output, rewriting what it must.
type Rewrite<'a> = &'a mut dyn FnMut(&[u8], &mut Vec<u8>);

/// Moves the complete lines of `buf` to `out`, rewriting ids when `map` says how.
fn lines(buf: &mut Vec<u8>, out: &mut Vec<u8>, mut map: Option<Rewrite<'_>>) {
    let mut start = 0;
    while let Some(nl) = memchr::memchr(b'\n', &buf[start..]) {
        let line = &buf[start..start + nl + 1];
        match map.as_mut() {
            Some(f) => f(line, out),
            None => out.extend_from_slice(line),
        }
        start += nl + 1;
    }
    buf.drain(..start);
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rewrite = args.iter().any(|a| a == "--rewrite");
    let cmd: Vec<String> = match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => {
            return Err(std::io::Error::other(
                "usage: relay_floor [--rewrite] -- COMMAND",
            ));
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(relay(rewrite, cmd))
}

async fn relay(rewrite: bool, cmd: Vec<String>) -> std::io::Result<()> {
    let (program, rest) = cmd
        .split_first()
        .ok_or_else(|| std::io::Error::other("no command"))?;
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(mut up_in), Some(mut up_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("no pipes"));
    };
    // The same epoll-driven pipes the gateway's stdio listener uses.
    let (mut down_in, mut down_out) = mcpwire::stdio::stdio();
    let (mut from_client, mut from_server) = (Vec::with_capacity(65536), Vec::with_capacity(65536));
    let (mut to_server, mut to_client) = (Vec::with_capacity(65536), Vec::with_capacity(65536));
    let mut ids: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut next: u64 = 0;
    loop {
        tokio::select! {
            n = down_in.read_buf(&mut from_client) => {
                if n? == 0 { break; }
                let mut f = |line: &[u8], out: &mut Vec<u8>| {
                    next += 1;
                    match json_frame::replace_member(
                        line,
                        "id",
                        next.to_string().as_bytes(),
                        MAX_NESTING,
                        out,
                    ) {
                        Some(old) => {
                            ids.insert(next, line[old].to_vec());
                        }
                        None => out.extend_from_slice(line),
                    }
                };
                lines(&mut from_client, &mut to_server, rewrite.then_some(&mut f as _));
                up_in.write_all(&to_server).await?;
                to_server.clear();
            }
            n = up_out.read_buf(&mut from_server) => {
                if n? == 0 { break; }
                let mut f = |line: &[u8], out: &mut Vec<u8>| {
                    let original = json_frame::member(line, "id", MAX_NESTING)
                        .and_then(|at| std::str::from_utf8(&line[at]).ok()?.parse::<u64>().ok())
                        .and_then(|n| ids.remove(&n));
                    match original {
                        Some(id) => {
                            json_frame::replace_member(line, "id", &id, MAX_NESTING, out);
                        }
                        None => out.extend_from_slice(line),
                    }
                };
                lines(&mut from_server, &mut to_client, rewrite.then_some(&mut f as _));
                down_out.write_all(&to_client).await?;
                to_client.clear();
            }
        }
    }
    drop(up_in);
    let _ = child.wait().await;
    Ok(())
}
