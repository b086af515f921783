//! [`StdioClient`]: an MCP server as a child process, newline-delimited JSON-RPC on its
//! stdin/stdout (its stderr is passed through).

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::{ClientError, ClientOptions, Inbound, MAX_MESSAGE_BYTES, classify, excerpt};

/// How long a server whose output ended gets to report its exit status.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);

/// How long [`StdioClient::close`] waits for the server to exit before killing it.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// A connected MCP client over a child process.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    lines: FramedRead<ChildStdout, LinesCodec>,
    /// Lines read so far (for error messages).
    line_no: u64,
    /// The command line, for error messages.
    peer: String,
    next_id: i64,
    /// The server's `initialize` result.
    pub server: Value,
}

impl StdioClient {
    /// Starts `argv` and completes the handshake within `opts.handshake_timeout`.
    pub async fn spawn(argv: &[String], opts: &ClientOptions) -> Result<StdioClient, ClientError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| ClientError::Target("empty command line".into()))?;
        let peer = format!(
            "`{}`",
            excerpt(&shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_default())
        );
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| ClientError::Spawn {
                program: program.clone(),
                error,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Io(format!("{peer}: no pipes to the child")));
        };
        let mut client = StdioClient {
            child,
            stdin,
            lines: FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_MESSAGE_BYTES)),
            line_no: 0,
            peer,
            next_id: 0,
            server: Value::Null,
        };
        let init = client.request("initialize", super::initialize_params());
        client.server = match tokio::time::timeout(opts.handshake_timeout, init).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(ClientError::Timeout {
                    awaited: "answer to `initialize`".into(),
                    peer: client.peer.clone(),
                    after: opts.handshake_timeout,
                    hint: " (is it an MCP server speaking stdio? --timeout waits longer)".into(),
                });
            }
        };
        client
            .send(
                &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
                "initialize",
            )
            .await?;
        Ok(client)
    }

    async fn send(&mut self, msg: &Value, method: &str) -> Result<(), ClientError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| ClientError::Invalid(e.to_string()))?;
        line.push(b'\n');
        let written = async {
            self.stdin.write_all(&line).await?;
            self.stdin.flush().await
        };
        match written.await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(self.gone(method).await),
            Err(e) => Err(ClientError::Io(format!("writing to {}: {e}", self.peer))),
        }
    }

    /// The error for a server whose pipes closed while `method` was waiting, with its exit
    /// status when it comes within [`EXIT_STATUS_WAIT`].
    async fn gone(&mut self, method: &str) -> ClientError {
        let how = match tokio::time::timeout(EXIT_STATUS_WAIT, self.child.wait()).await {
            Ok(Ok(status)) => describe_exit(status),
            _ => "closed its stdout".to_owned(),
        };
        ClientError::Closed {
            peer: self.peer.clone(),
            how,
            method: method.to_owned(),
        }
    }

    /// Sends a request and waits for its result, logging notifications on the way.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = json!(self.next_id);
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send(&request, method).await?;
        loop {
            let line = match self.lines.next().await {
                Some(Ok(line)) => line,
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    return Err(ClientError::Invalid(format!(
                        "{} wrote a message longer than {} MiB (line {})",
                        self.peer,
                        MAX_MESSAGE_BYTES >> 20,
                        self.line_no + 1
                    )));
                }
                Some(Err(LinesCodecError::Io(e))) => {
                    return Err(ClientError::Io(format!("reading from {}: {e}", self.peer)));
                }
                None => return Err(self.gone(method).await),
            };
            self.line_no += 1;
            if line.trim().is_empty() {
                continue;
            }
            let msg: Value = serde_json::from_str(&line).map_err(|_| {
                ClientError::Invalid(format!(
                    "{} wrote a line that is not JSON-RPC to stdout (line {}): {:?} — a stdio \
                     MCP server may write only protocol messages there (logs go to stderr)",
                    self.peer,
                    self.line_no,
                    excerpt(&line)
                ))
            })?;
            match classify(msg, &id, method, false) {
                Inbound::Answer(result) => return result,
                Inbound::Refuse(refusal) => self.send(&refusal, method).await?,
                Inbound::Other => {}
            }
        }
    }

    /// Closes stdin and waits for the server to exit (killing it after a short while).
    pub async fn close(mut self) -> Result<(), ClientError> {
        drop(self.stdin);
        if tokio::time::timeout(CLOSE_WAIT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
        }
        Ok(())
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
