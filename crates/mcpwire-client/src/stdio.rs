//! An MCP server as a child process: newline-delimited JSON-RPC on its stdin/stdout (its
//! stderr is passed through, or logged line by line under a backend's name: see
//! [`crate::ChildOptions`]), run by the driver core's [`FramedDriver`] with a
//! [`StdioClientEndpoint`] over the client session.
//!
//! Stdout is the protocol: a line that is not JSON ends the connection with an error that
//! shows the line and its number (we do not skip banners: a client that guesses may also
//! swallow a real answer); blank lines are skipped; lines are bounded by
//! [`MAX_MESSAGE_BYTES`]. A server whose stdout ends is reported with its exit status when it
//! exits within [`EXIT_STATUS_WAIT`].

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use std::sync::Arc;

use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{McpError, codes};
use mcpwire_wire::{FramingError, LineSplitter, RawLine, encode_line, encode_request_line};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

use crate::core::{ClientCore, CoreWake};
use crate::handle::parts;
use crate::{Client, ClientError, ClientEvents, ClientOptions, MAX_MESSAGE_BYTES, excerpt};
use mcpwire_relay::Relay;
use mcpwire_server::driver::{Endpoint, FramedDriver, Status, framed::output_full, now};

/// How long a server whose output ended gets to report its exit status.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);

/// How long closing waits for the server to exit before killing it.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Nesting accepted in a server's messages (serde_json's own limit).
const MAX_DEPTH: usize = 128;

/// What a handshake timeout's message suggests checking.
const HINT: &str = " (is it an MCP server speaking stdio? --timeout waits longer)";

/// Starts `argv` and negotiates within `opts.limits.handshake_timeout`.
pub(crate) async fn connect(
    argv: &[String],
    opts: &ClientOptions,
) -> Result<(Client, ClientEvents), ClientError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| ClientError::Target("empty command line".into()))?;
    let peer = format!(
        "`{}`",
        excerpt(&shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_default())
    );
    let spawn = &opts.child;
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(spawn.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(match spawn.log_stderr_as {
            Some(_) => Stdio::piped(),
            None => Stdio::inherit(),
        })
        .kill_on_drop(true);
    if let Some(dir) = &spawn.cwd {
        command.current_dir(dir);
    }
    let mut child = command.spawn().map_err(|error| ClientError::Spawn {
        program: program.clone(),
        error,
    })?;
    if let (Some(name), Some(stderr)) = (&spawn.log_stderr_as, child.stderr.take()) {
        tokio::spawn(log_stderr(stderr, name.clone()));
    }
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ClientError::Io(format!("{peer}: no pipes to the child")));
    };
    // The child is reaped by a task of its own, which reports its exit and kills on demand.
    let (exit_tx, exit_rx) = oneshot::channel();
    let (kill_tx, kill_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let status = tokio::select! {
            s = child.wait() => s,
            _ = kill_rx => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        let _ = exit_tx.send(status);
    });
    let mut parts = parts(opts, &peer);
    // This wire writes `tools/call` requests itself (`ClientCore::take_direct`), and relays
    // the gateway's raw frames (`mcpwire_relay`).
    parts.pending.direct = true;
    let ids = parts.pending.ids();
    let relay = Arc::new(
        Relay::new(
            Box::new(move || ids.next_number()),
            opts.limits.max_in_flight,
        )
        .with_call_timeout(opts.relay_timeout),
    );
    parts.core.set_relay(relay.clone(), parts.pending.peer());
    parts.pending.relay = Some(relay.clone());
    let endpoint = StdioClientEndpoint {
        relay,
        core: parts.core,
        peer,
        line_no: 0,
        exit: Exit {
            status: None,
            rx: Some(exit_rx),
            kill: Some(kill_tx),
        },
        eof_at: None,
        done: false,
    };
    let codec = LineSplitter::new(MAX_MESSAGE_BYTES);
    let driver = FramedDriver::new(stdout, codec, stdin, endpoint, opts.busy_poll);
    tokio::spawn(run(driver));
    parts.pending.settle(HINT).await
}

/// Logs every line of a child's stderr under its backend's `name` until it ends (read
/// continuously: a child never blocks on a full pipe; long lines cut, bad UTF-8 replaced).
async fn log_stderr(stderr: tokio::process::ChildStderr, name: String) {
    use futures::StreamExt;
    let mut lines = tokio_util::codec::FramedRead::new(stderr, mcpwire_wire::TextLines::default());
    while let Some(Ok(line)) = lines.next().await {
        let text = line.text;
        tracing::info!(target: "mcpwire::child", backend = %name, stream = "stderr", "{name}: {text}");
    }
}

/// The connection's task: drive until the endpoint closes, then wind down — the server gets
/// [`CLOSE_WAIT`] to exit after its stdin closed, then it is killed.
async fn run(mut driver: FramedDriver<ChildStdout, ChildStdin, StdioClientEndpoint>) {
    let result = driver.drive().await;
    let mut ep = driver.into_endpoint();
    if let Err(e) = result {
        tracing::debug!(peer = %ep.peer, error = %e, "writing to the server failed");
    }
    if !ep.done {
        let how = if ep.core.close_requested() {
            "was closed by the client".to_owned()
        } else {
            ep.exit.describe(EXIT_STATUS_WAIT).await
        };
        ep.core.finish(McpError::ConnectionClosed(how));
    }
    ep.exit.wait_or_kill(CLOSE_WAIT).await;
    // Dropping the core now lets `Client::close` return.
}

/// The child's exit, as the reaper task reports it.
struct Exit {
    status: Option<std::io::Result<ExitStatus>>,
    rx: Option<oneshot::Receiver<std::io::Result<ExitStatus>>>,
    kill: Option<oneshot::Sender<()>>,
}

impl Exit {
    /// Waits for the exit status (at most `wait`).
    async fn wait(&mut self, wait: Duration) -> Option<&std::io::Result<ExitStatus>> {
        if self.status.is_none()
            && let Some(rx) = self.rx.as_mut()
            && let Ok(Ok(s)) = tokio::time::timeout(wait, rx).await
        {
            self.status = Some(s);
            self.rx = None;
        }
        self.status.as_ref()
    }

    /// How the server went away: its exit status if it comes within `wait`.
    async fn describe(&mut self, wait: Duration) -> String {
        match self.wait(wait).await {
            Some(Ok(status)) => describe_exit(*status),
            _ => "closed its stdout".to_owned(),
        }
    }

    /// Waits up to `wait` for the server to exit, then kills it.
    async fn wait_or_kill(&mut self, wait: Duration) {
        if self.wait(wait).await.is_none()
            && let Some(kill) = self.kill.take()
        {
            let _ = kill.send(());
        }
    }
}

/// "exited with status 3", "was killed by signal 9", "exited (status 0)".
fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(0), _) => "exited (status 0)".to_owned(),
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => format!("exited ({status})"),
    }
}

/// The client session over a child's pipes.
struct StdioClientEndpoint {
    core: ClientCore,
    /// The gateway's raw frames to and from this child (`mcpwire_relay`).
    relay: Arc<Relay>,
    peer: String,
    line_no: u64,
    exit: Exit,
    /// When the server's stdout ended: its exit status is awaited until then plus
    /// [`EXIT_STATUS_WAIT`].
    eof_at: Option<Instant>,
    /// The session has been told the connection is over.
    done: bool,
}

/// What the endpoint waits for besides the core.
enum StdioWake {
    Core(CoreWake),
    /// The relay queued frames.
    Relayed,
    Exited(Option<std::io::Result<ExitStatus>>),
    ExitWaitOver,
}

impl StdioClientEndpoint {
    fn finish(&mut self, error: McpError) {
        if !self.done {
            self.done = true;
            self.core.finish(error);
        }
    }

    fn on_line(&mut self, line: &str) {
        self.line_no += 1;
        if line.trim().is_empty() {
            return;
        }
        let relaying = self.relay.waiting() > 0;
        if relaying && self.relay.answer_raw(line.as_bytes(), MAX_DEPTH) {
            return;
        }
        let decoded = decode_with_depth(line.as_bytes(), MAX_DEPTH);
        if let Err(bad) = &decoded
            && bad.error.code == codes::PARSE_ERROR
        {
            let e = format!(
                "{} wrote a line that is not JSON-RPC to stdout (line {}): {:?} — a stdio MCP \
                 server may write only protocol messages there (logs go to stderr)",
                self.peer,
                self.line_no,
                excerpt(line)
            );
            return self.finish(McpError::BadPeerMessage(e));
        }
        if let Some(decoded) = self.core.answer_direct(decoded) {
            self.core.session.handle_inbound(now(), decoded);
            if relaying {
                // What the line produced (a log) goes to the relay before the next line.
                self.core.route_now();
            }
        }
    }
}

impl Endpoint for StdioClientEndpoint {
    type Codec = LineSplitter;
    type Wake = StdioWake;

    fn on_frame(&mut self, frame: Option<Result<RawLine, FramingError>>, _out: &mut BytesMut) {
        match frame {
            Some(Ok(RawLine::Blank)) => self.line_no += 1,
            Some(Ok(RawLine::Text(line))) => match std::str::from_utf8(&line) {
                Ok(line) => self.on_line(line),
                Err(_) => {
                    // What a line-of-text reader reports (the connection ends).
                    let e = std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "stream did not contain valid UTF-8",
                    );
                    let e = FramingError::Io(e);
                    let e = McpError::ConnectionClosed(format!("could not be read from ({e})"));
                    self.finish(e);
                }
            },
            Some(Ok(RawLine::Oversize)) => {
                let e = format!(
                    "{} wrote a message longer than {} MiB (line {})",
                    self.peer,
                    MAX_MESSAGE_BYTES >> 20,
                    self.line_no + 1
                );
                self.finish(McpError::BadPeerMessage(e));
            }
            Some(Err(e)) => {
                let e = McpError::ConnectionClosed(format!("could not be read from ({e})"));
                self.finish(e);
            }
            None => self.eof_at = Some(now()),
        }
    }

    fn poll_ready(&mut self, out: &mut BytesMut) -> bool {
        if self.done {
            return false;
        }
        let mut did = self.core.poll_ready(now(), !output_full(out));
        // Relayed frames first: a cancellation of one (a session transmit) follows it.
        if !output_full(out) {
            did |= self.core.take_relayed(out);
        }
        while !output_full(out)
            && let Some(t) = self.core.session.poll_transmit()
        {
            if let Err(e) = encode_line(&t.msg, out) {
                tracing::error!(error = %e, "could not encode a message");
            }
            did = true;
        }
        while !output_full(out)
            && let Some((id, params)) = self.core.take_direct()
        {
            encode_request_line(out, &id.wire_id(), "tools/call", params.as_deref());
            did = true;
        }
        did
    }

    async fn wait(&mut self, paused: bool) -> StdioWake {
        if self.done {
            return std::future::pending().await;
        }
        if let Some(at) = self.eof_at {
            let deadline = tokio::time::Instant::from_std(at + EXIT_STATUS_WAIT);
            let exit = async {
                match self.exit.rx.as_mut() {
                    Some(rx) => rx.await.ok(),
                    None => std::future::pending().await,
                }
            };
            return tokio::select! {
                s = exit => StdioWake::Exited(s),
                _ = tokio::time::sleep_until(deadline) => StdioWake::ExitWaitOver,
            };
        }
        if paused {
            return StdioWake::Core(self.core.wait(false).await);
        }
        let relay = self.relay.clone();
        tokio::select! {
            w = self.core.wait(true) => StdioWake::Core(w),
            _ = relay.queued() => StdioWake::Relayed,
        }
    }

    fn apply(&mut self, wake: StdioWake, _out: &mut BytesMut) {
        match wake {
            StdioWake::Core(w) => self.core.apply(now(), w),
            // Taken by the next `poll_ready`.
            StdioWake::Relayed => {}
            StdioWake::Exited(status) => {
                self.exit.rx = None;
                let how = match &status {
                    Some(Ok(s)) => describe_exit(*s),
                    _ => "closed its stdout".to_owned(),
                };
                self.exit.status = status;
                self.finish(McpError::ConnectionClosed(how));
            }
            StdioWake::ExitWaitOver => {
                self.finish(McpError::ConnectionClosed("closed its stdout".into()));
            }
        }
    }

    fn status(&mut self) -> Status {
        if self.done || self.core.close_requested() || self.core.session.is_finished() {
            Status::Close
        } else {
            Status::Open
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Answer, ClientEvent, RequestOptions};
    use mcpwire_model::Raw;

    /// A server written in `sh`: answers `initialize`, then each later request with `answer`
    /// (a printf format taking the request's id).
    fn scripted(answer: &str) -> crate::Target {
        scripted_with(&format!("printf '{answer}' \"$id\""))
    }

    /// A server written in `sh`: answers `initialize`, then runs `each` for every later
    /// line (`$l`, with its id in `$id`).
    fn scripted_with(each: &str) -> crate::Target {
        let id = r#"id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"#;
        let init = r#"{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\r\n"#;
        let script = format!(
            "read l; {id}; printf '{init}' \"$id\"; read l; \
             while read l; do {id}; {each}; done"
        );
        crate::Target::Command {
            argv: vec!["sh".into(), "-c".into(), script],
        }
    }

    fn options() -> ClientOptions {
        let mut o = ClientOptions::with_handshake_timeout(Duration::from_secs(10));
        o.era = crate::EraChoice::Handshake;
        o
    }

    #[tokio::test]
    async fn answers_with_crlf_blank_lines_spacing_and_escapes_are_read() {
        let answer = r#"\n  \n{ "result" : {"content":[{"type":"text","text":"a\\"b\\u00e9\\n"}]} , "id" : %s , "jsonrpc":"2.0"}\r\n"#;
        let (client, _events) = Client::connect(&scripted(answer), &options())
            .await
            .unwrap();
        let got = client
            .request("tools/call", serde_json::json!({"name": "echo"}))
            .await
            .unwrap();
        let want = serde_json::json!({"content": [{"type": "text", "text": "a\"b\u{e9}\n"}]});
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_ends_the_connection_as_before() {
        let answer = r#"{"jsonrpc":"2.0","id":%s,"result":{"x":"\377"}}\n"#;
        let (client, _events) = Client::connect(&scripted(answer), &options())
            .await
            .unwrap();
        let err = client
            .request("tools/call", serde_json::json!({"name": "echo"}))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("stream did not contain valid UTF-8"), "{err}");
    }

    /// The same request through the session: `_meta` keeps it from going direct.
    fn via_session() -> RequestOptions {
        let mut meta = serde_json::Map::new();
        meta.insert("k".into(), serde_json::json!(1));
        RequestOptions {
            meta: Some(meta),
            ..RequestOptions::default()
        }
    }

    fn args() -> Option<Raw> {
        Some(mcpwire_model::to_raw(&serde_json::json!({"name": "echo"})))
    }

    #[tokio::test]
    async fn a_direct_call_is_answered_as_the_session_answers_it() {
        // Results and errors alike, including an error answer with data.
        for answer in [
            r#"{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"\\u00e9"}],"isError":false}}\n"#,
            r#"{"id":%s,"jsonrpc":"2.0","error":{"code":-32602,"message":"bad args","data":{"x":1}}}\n"#,
        ] {
            let (client, _events) = Client::connect(&scripted(answer), &options())
                .await
                .unwrap();
            let direct = client.send("tools/call", args(), RequestOptions::default());
            let direct = direct.await.unwrap().await;
            let session = client.send("tools/call", args(), via_session());
            let session = session.await.unwrap().await;
            let show = |r: Result<Answer, ClientError>| match r {
                Ok(Answer::Complete(raw)) => format!("ok {}", raw.get()),
                Ok(Answer::InputRequired(_)) => "input required".to_owned(),
                Err(e) => format!("err {e} / {:?}", e.to_mcp()),
            };
            assert_eq!(show(direct), show(session));
        }
    }

    #[tokio::test]
    async fn a_dropped_direct_call_is_cancelled_on_the_server() {
        // The server logs each request it reads; on a cancellation it answers the request
        // after the cancelled one with the id it was told.
        let each = r#"case "$l" in
            *notifications/cancelled*) c=$(printf '%s' "$l" | sed 's/.*"requestId":\([0-9]*\).*/\1/');
                printf '{"jsonrpc":"2.0","id":%s,"result":{"cancelled":%s}}\n' $((c+1)) "$c";;
            *) printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"got"}}\n';;
            esac"#;
        let (client, mut events) = Client::connect(&scripted_with(each), &options())
            .await
            .unwrap();
        let first = client.send("tools/call", args(), RequestOptions::default());
        let first = first.await.unwrap();
        let id = first.id();
        // The server read it.
        let got = events.recv().await;
        assert!(matches!(got, Some(ClientEvent::Log { .. })), "{got:?}");
        drop(first);
        let second = client.send("tools/call", args(), RequestOptions::default());
        let second = second.await.unwrap();
        let (mcpwire_model::RequestId::Int(a), mcpwire_model::RequestId::Int(b)) =
            (id.wire_id(), second.id().wire_id())
        else {
            panic!("numeric ids")
        };
        assert_eq!(b, a + 1);
        let answered = tokio::time::timeout(Duration::from_secs(10), second).await;
        let Answer::Complete(raw) = answered.expect("the server was told").unwrap() else {
            panic!("a result")
        };
        assert_eq!(raw.get(), format!(r#"{{"cancelled":{id}}}"#));
    }
}
